-- Named statements for job_schedules and job_schedule_fires, parsed once by app/db/queries.py.
-- $S_COLUMNS: a schedule's columns (named, never *).

-- name: schedule_upsert
-- PUT semantics: the caller's definition replaces the stored one. Re-declaring an identical
-- definition changes nothing (updated_at included), so a deploy can re-declare its schedules
-- without moving them; then no row comes back. (xmax = 0) tells an insert from an update.
-- :queues (NULL: any) are those the caller's key is limited to: a stored schedule in another
-- queue is left as it is and no row comes back either. Checked here, on the row the conflict
-- locked, so a schedule moved or created there concurrently is never taken out of its queue.
INSERT INTO job_schedules AS s (job_id, cron_expression, timezone, handler, queue, payload, parameters, metadata,
                                priority, enabled, execution_mode, overlap_policy, misfire_policy, max_attempts,
                                tracked)
VALUES (:job_id, :cron, :timezone, :handler, :queue, CAST(:payload AS jsonb), CAST(:parameters AS jsonb),
        CAST(:metadata AS jsonb), :priority, :enabled, :execution_mode, :overlap_policy, :misfire_policy,
        :max_attempts, :tracked)
ON CONFLICT (job_id) DO UPDATE
SET cron_expression = EXCLUDED.cron_expression, timezone = EXCLUDED.timezone, handler = EXCLUDED.handler,
    queue = EXCLUDED.queue, payload = EXCLUDED.payload, parameters = EXCLUDED.parameters,
    metadata = EXCLUDED.metadata, priority = EXCLUDED.priority, enabled = EXCLUDED.enabled,
    execution_mode = EXCLUDED.execution_mode, overlap_policy = EXCLUDED.overlap_policy,
    misfire_policy = EXCLUDED.misfire_policy, max_attempts = EXCLUDED.max_attempts, tracked = EXCLUDED.tracked,
    updated_at = now()
WHERE (s.cron_expression, s.timezone, s.handler, s.queue, s.payload, s.parameters, s.metadata, s.priority,
       s.enabled, s.execution_mode, s.overlap_policy, s.misfire_policy, s.max_attempts, s.tracked)
      IS DISTINCT FROM
      (EXCLUDED.cron_expression, EXCLUDED.timezone, EXCLUDED.handler, EXCLUDED.queue, EXCLUDED.payload,
       EXCLUDED.parameters, EXCLUDED.metadata, EXCLUDED.priority, EXCLUDED.enabled, EXCLUDED.execution_mode,
       EXCLUDED.overlap_policy, EXCLUDED.misfire_policy, EXCLUDED.max_attempts, EXCLUDED.tracked)
  AND (CAST(:queues AS text[]) IS NULL OR s.queue = ANY(CAST(:queues AS text[])))
RETURNING $S_COLUMNS, (xmax = 0) AS created

-- name: schedule_forget_fires
-- A changed definition starts afresh: its cursors and any fire QUEUE_ONE held back go.
DELETE FROM job_schedule_fires WHERE job_id = :job_id

-- name: schedule_set_next_fire
UPDATE job_schedules s SET next_fire_at = :next_fire_at WHERE s.job_id = :job_id RETURNING $S_COLUMNS

-- name: schedule_get
SELECT $S_COLUMNS FROM job_schedules s WHERE s.job_id = :job_id

-- name: schedules_list
-- :queues (NULL: every queue): only the schedules of those queues.
SELECT $S_COLUMNS FROM job_schedules s
WHERE CAST(:queues AS text[]) IS NULL OR s.queue = ANY(CAST(:queues AS text[]))
ORDER BY s.job_id

-- name: schedule_delete
-- :queues (NULL: any): a schedule of another queue is not deleted (no row), as one that does not exist.
DELETE FROM job_schedules
WHERE job_id = :job_id AND (CAST(:queues AS text[]) IS NULL OR queue = ANY(CAST(:queues AS text[])))
RETURNING job_id

-- name: schedules_due
-- What this node looks at in a tick: enabled schedules whose next instant has come, or that hold
-- a QUEUE_ONE fire back. For SINGLE_INSTANCE the next instant is the schedule's own (every node
-- races for it); for EVERY_INSTANCE it is this node's cursor's (job_schedule_fires), so a node
-- that skips an instant (its previous fire still running) never moves another node's. Read from
-- the database every tick, so an update or delete reaches every node within one tick.
SELECT s.job_id,
       CASE WHEN s.execution_mode = 'EVERY_INSTANCE' THEN :node ELSE '' END AS fire_node
FROM job_schedules s
LEFT JOIN job_schedule_fires f
       ON f.job_id = s.job_id
      AND f.fire_node = CASE WHEN s.execution_mode = 'EVERY_INSTANCE' THEN :node ELSE '' END
WHERE s.enabled
  AND (f.pending_fire_at IS NOT NULL
       OR CASE WHEN s.execution_mode = 'EVERY_INSTANCE'
               THEN f.next_fire_at IS NULL OR f.next_fire_at <= now()  -- no cursor yet: due
               ELSE s.next_fire_at IS NULL OR s.next_fire_at <= now() END)
ORDER BY s.job_id

-- name: schedule_try_lock
-- One firer per schedule and slot at a time (transaction-scoped, keyed by schema), so the
-- overlap check and the insert that follows it cannot interleave with another node's. A node
-- that does not get it leaves this slot to the holder this tick. The unique index
-- uq_job_executions_cron_fire is what guarantees one execution per (job_id, fire_at, fire_node).
SELECT pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()),
                                 hashtext('schedule:' || :job_id || ':' || :fire_node))

-- name: schedule_for_fire
-- Read after the lock, in a new statement: the snapshot sees every earlier holder's commit.
SELECT $S_COLUMNS, f.handled_until, f.pending_fire_at, now() AS now
FROM job_schedules s
LEFT JOIN job_schedule_fires f ON f.job_id = s.job_id AND f.fire_node = :fire_node
WHERE s.job_id = :job_id

-- name: schedule_busy
-- The slot's previous fire is unfinished (a retry waiting counts: it is ENQUEUED).
SELECT EXISTS (SELECT 1 FROM job_executions
               WHERE job_id = :job_id AND job_type = 'CRON' AND fire_node = :fire_node
                 AND state IN ('ENQUEUED', 'PROCESSING'))

-- name: schedule_fire
-- Insert the CRON execution of one instant: fire_at and the first scheduled_at are the instant
-- itself (trigger: now()). ON CONFLICT DO NOTHING on uq_job_executions_cron_fire: of the nodes
-- racing for one (job_id, fire_at, fire_node), one gets the row, the rest get nothing. Guarded on
-- the definition read (updated_at): a schedule changed or deleted since fires nothing.
WITH s AS (
    SELECT job_id, handler, queue, payload, parameters, metadata, priority, max_attempts
    FROM job_schedules
    WHERE job_id = :job_id AND updated_at = :updated_at
), u AS (
    INSERT INTO job_executions (job_id, job_type, handler, queue, state, payload, parameters, metadata,
                                priority, max_attempts, stateful, fire_at, fire_node, scheduled_at)
    SELECT s.job_id, 'CRON', s.handler, s.queue, 'ENQUEUED', s.payload, s.parameters, s.metadata,
           s.priority, s.max_attempts,
           COALESCE((SELECT h.stateful FROM job_handlers h WHERE h.name = s.handler), false),
           COALESCE(CAST(:fire_at AS timestamptz), now()), :fire_node, COALESCE(CAST(:fire_at AS timestamptz), now())
    FROM s
    ON CONFLICT (job_id, fire_at, fire_node) WHERE job_type = 'CRON' DO NOTHING
    RETURNING $COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT $COLUMNS FROM u

-- name: schedule_save_cursor
-- Every instant up to handled_until was fired or given up; next_fire_at is the slot's next
-- instant after it; pending_fire_at is the fire QUEUE_ONE holds back (or null). Guarded on the
-- definition read, like schedule_fire.
INSERT INTO job_schedule_fires (job_id, fire_node, handled_until, next_fire_at, pending_fire_at)
SELECT :job_id, :fire_node, :handled_until, :next_fire_at, :pending_fire_at
FROM job_schedules WHERE job_id = :job_id AND updated_at = :updated_at
ON CONFLICT (job_id, fire_node) DO UPDATE
SET handled_until = GREATEST(job_schedule_fires.handled_until, EXCLUDED.handled_until),
    next_fire_at = CASE WHEN EXCLUDED.handled_until >= job_schedule_fires.handled_until
                        THEN EXCLUDED.next_fire_at ELSE job_schedule_fires.next_fire_at END,
    pending_fire_at = EXCLUDED.pending_fire_at

-- name: schedule_mark_fired
UPDATE job_schedules
SET last_fired_at = GREATEST(last_fired_at, CAST(:fired_at AS timestamptz)), next_fire_at = :next_fire_at
WHERE job_id = :job_id AND updated_at = :updated_at

-- name: schedule_mark_triggered
UPDATE job_schedules SET last_fired_at = GREATEST(last_fired_at, CAST(:fired_at AS timestamptz))
WHERE job_id = :job_id

-- name: schedule_delete_succeeded
-- tracked: false keeps no history of successes: the schedule's SUCCEEDED executions go, with
-- their events (logs and steps go by their foreign keys); the events a subscription has not read
-- yet are delivered from the rows going.
WITH d AS (
    DELETE FROM job_executions
    WHERE job_id = :job_id AND job_type = 'CRON' AND state = 'SUCCEEDED'
    RETURNING id
), deleted_events AS (
    DELETE FROM job_events WHERE execution_id IN (SELECT id FROM d)
    RETURNING id, execution_id, event, type, occurred_at, xact, attempt
)
$deliver_deleted

-- name: db_now
-- The database clock: schedules are evaluated against it on every node, never a node's own.
SELECT now()
