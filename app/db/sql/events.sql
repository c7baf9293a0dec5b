-- Named statements of the typed transition events (job_events rows with a type): an execution's
-- (GET /v1/executions/{id}/events) and the feed of all (GET /v1/events), parsed once by
-- app/db/queries.py.

-- fragment: event_data
-- The item's `data`: the curated event, and retry_at for a failed or abandoned attempt that
-- another follows, when that one is due: the event's own scheduled_at, the re-enqueued row's.
-- None follows when the same attempt was dead-lettered (a row of the same transaction), or for
-- an abandoned CRON fire (its schedule fires again).
ev.event || CASE
    WHEN ev.type IN ('execution.failed', 'execution.abandoned')
         AND NOT (ev.type = 'execution.abandoned' AND ev.event->>'job_type' = 'CRON')
         AND NOT EXISTS (SELECT 1 FROM job_events d
                         WHERE d.execution_id = ev.execution_id AND d.id > ev.id
                           AND d.type = 'execution.dead_lettered' AND d.attempt = ev.attempt)
    THEN jsonb_build_object('retry_at', ev.event->'scheduled_at')
    ELSE CAST('{}' AS jsonb) END

-- name: execution_events_page
-- GET /v1/executions/{id}/events: the typed rows (attempt outcomes and user actions; the rows of
-- inserts, claims and re-enqueues have no type), oldest first, a page after the cursor's id
-- (index ix_job_events_execution; within one execution, id order is commit order: its writes
-- hold the row's lock).
SELECT ev.id, ev.type, ev.occurred_at, $event_data AS data
FROM job_events ev
WHERE ev.execution_id = :id AND ev.id > :after AND ev.type IS NOT NULL
ORDER BY ev.id
LIMIT :limit

-- name: events_feed
-- The typed rows after the cursor (:xact, :id) in (xact, id) order, only of transactions below
-- the oldest one still running in this statement's snapshot: a row that commits later has an
-- xact at or above it, so it comes after every row served, and a client resuming from its cursor
-- misses none. Filters: :types (NULL: every type), :queue, :handler, :queues (a key limited to
-- queues; NULL: any). Index ix_job_events_feed, in order; the filters are checked on the rows
-- walked.
SELECT ev.id, ev.type, ev.occurred_at, ev.xact, $event_data AS data
FROM job_events ev
WHERE ev.type IS NOT NULL AND (ev.xact, ev.id) > (CAST(:xact AS bigint), CAST(:id AS bigint))
  AND ev.xact < CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)
  AND (CAST(:types AS text[]) IS NULL OR ev.type = ANY(CAST(:types AS text[])))
  AND (CAST(:queue AS text) IS NULL OR ev.event->>'queue' = :queue)
  AND (CAST(:handler AS text) IS NULL OR ev.event->>'handler' = :handler)
  AND (CAST(:queues AS text[]) IS NULL OR ev.event->>'queue' = ANY(CAST(:queues AS text[])))
ORDER BY ev.xact, ev.id
LIMIT :limit
