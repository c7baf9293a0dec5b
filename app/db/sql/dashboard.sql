-- Named statements of the dashboard's pages (app/ui), parsed once by app/db/queries.py. Each reads
-- through an index: the pages are open in many browsers at once, refreshing every few seconds.

-- name: dashboard_outcomes_per_minute
-- The attempt outcomes by minute, handler and type, from the minute :since (NULL: the window's
-- first, :minutes minutes back) to now (the typed rows of job_events through
-- ix_job_events_occurred_at, its partial index on time): the overview's chart and the handlers'
-- failure rates, the same on every node; a node keeps the minutes that ended and reads from the
-- one before the last it saw (app/domain/dashboard.py OutcomeLedger). :queues: a key limited to
-- queues (NULL: every queue).
SELECT date_trunc('minute', ev.occurred_at) AS minute, ev.event->>'handler' AS handler, ev.type, count(*) AS n,
       date_trunc('minute', now()) AS now_minute
FROM job_events ev
WHERE ev.type IS NOT NULL
  AND ev.occurred_at >= GREATEST(CAST(:since AS timestamptz),
                                 date_trunc('minute', now()) - make_interval(mins => CAST(:minutes AS int) - 1))
  AND ev.type = ANY(CAST(:types AS text[]))
  AND (CAST(:queues AS text[]) IS NULL OR ev.event->>'queue' = ANY(CAST(:queues AS text[])))
GROUP BY 1, 2, 3
UNION ALL  -- the current minute even when no outcome is in the range
SELECT NULL, NULL, NULL, 0, date_trunc('minute', now())
ORDER BY 1, 2, 3

-- name: dashboard_recent_failures
-- The last :limit failed attempts (failed, abandoned, dead-lettered), newest first: the index on
-- the typed rows' time, walked backwards.
SELECT ev.execution_id, ev.type, ev.occurred_at, ev.attempt, ev.node, ev.http_status, ev.error,
       ev.event->>'handler' AS handler, ev.event->>'queue' AS queue, ev.event->>'job_id' AS job_id,
       ev.event->>'error_type' AS error_type
FROM job_events ev
WHERE ev.type IS NOT NULL
  AND ev.type = ANY(CAST(:types AS text[]))
  AND (CAST(:queues AS text[]) IS NULL OR ev.event->>'queue' = ANY(CAST(:queues AS text[])))
ORDER BY ev.occurred_at DESC, ev.id DESC
LIMIT :limit

-- name: dashboard_steps
-- An execution's run-step-once results, in the order they were recorded (job_steps' primary key).
SELECT name, result, completed_at FROM job_steps WHERE execution_id = :id ORDER BY completed_at, name LIMIT :limit

-- name: dashboard_parents
-- An execution's parents in its workflow (job_dependencies), by ref.
SELECT p.workflow_ref AS ref, p.id AS execution_id, p.state
FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
WHERE d.child_id = :id
ORDER BY p.workflow_ref
LIMIT :limit

-- name: dashboard_children
-- An execution's children: the jobs that depend on it, and those it spawned, by ref.
SELECT c.workflow_ref AS ref, c.id AS execution_id, c.state
FROM job_dependencies d JOIN job_executions c ON c.id = d.child_id
WHERE d.parent_id = :id
UNION
SELECT e.workflow_ref AS ref, e.id AS execution_id, e.state
FROM job_executions e
WHERE e.spawned_by = :id
ORDER BY ref
LIMIT :limit

-- name: dashboard_in_flight_by_handler
-- Calls in flight per handler: the PROCESSING rows through ix_job_executions_processing_handler
-- (a partial index: as small as the work in flight). :queues: a key limited to queues.
SELECT e.handler, count(*) AS n
FROM job_executions e
WHERE e.state = 'PROCESSING'
  AND (CAST(:queues AS text[]) IS NULL OR e.queue = ANY(CAST(:queues AS text[])))
GROUP BY e.handler
