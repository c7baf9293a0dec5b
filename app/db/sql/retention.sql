-- Named statements of retention (the pruner), parsed once by app/db/queries.py.
-- An execution is deleted with its events (job_events has no foreign key); its logs and steps
-- go by their foreign keys (ON DELETE CASCADE). A deleted execution frees its idempotency key.

-- name: executions_prune
-- One batch of the pruner: up to :n executions in state :state (SUCCEEDED, CANCELLED, DEAD_LETTER,
-- or ABANDONED, of which only CRON fires: a DELAYED row never rests there) completed more than
-- :retention seconds ago (database time), oldest first after the key (:after_created, :after_id)
-- of the previous batch, deleted with their events. Returns the batch's last key and how many it
-- deleted (no row when it deleted none).
-- - The walk: ix_job_executions_state_created (state, created_at DESC, id) read backwards, hence
--   `created_at, id DESC`. created_at <= completed_at, so `created_at < cutoff` bounds the index
--   range; completed_at is checked on each row. The key keeps a batch from stepping again over the
--   index entries of the rows earlier batches deleted (dead until vacuumed).
-- - The plan: the prunable rows of a state are exactly its old rows, which the planner, taking
--   state, created_at and completed_at as independent, estimates at a small fraction of what they
--   are; believing only a few match, it preferred a bitmap scan of the whole range and a sort,
--   every batch. So the LIMIT is a sub-select (a LIMIT the planner cannot see is taken as 10 % of
--   the rows) and completed_at is compared through COALESCE (a default estimate, not its
--   histogram's): the ordered walk, which stops at the batch size, then wins in custom and
--   generic plans alike (tests/db/test_retention.py checks both on a large table).
-- - Locks: SKIP LOCKED, so a row that another node's pruner or any writer holds is left for a
--   later batch or run; the pruner never waits for a row lock, and holds its own for this one
--   statement (run in autocommit). The lock re-checks the row as it then is: a DEAD_LETTER retried
--   meanwhile is ENQUEUED and is not deleted. Every transition changes the state, so a row still
--   in :state when locked has no event newer than this statement's snapshot.
-- - The deletes: by `id = ANY(ARRAY(…))`, the rows by primary key and the events by
--   ix_job_events_execution, whatever the planner thinks a batch holds (joined to the CTE
--   instead, a batch estimated at 1,000 rows got a hash join over a scan of the whole table).
-- The last condition refuses the live states (a caller's bug) in the statement itself.
WITH due AS MATERIALIZED (
    SELECT id FROM job_executions
    WHERE state = :state
      AND (state <> 'ABANDONED' OR job_type = 'CRON')
      AND created_at >= :after_created AND (created_at > :after_created OR id < :after_id)
      AND created_at < now() - make_interval(secs => :retention)
      AND COALESCE(completed_at, 'infinity') < now() - make_interval(secs => :retention)
      AND CAST(:state AS text) IN ('SUCCEEDED', 'CANCELLED', 'DEAD_LETTER', 'ABANDONED')
    ORDER BY created_at, id DESC
    LIMIT (SELECT CAST(:n AS int))
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM job_executions WHERE id = ANY(ARRAY(SELECT id FROM due))
    RETURNING id, created_at
), deleted_events AS (
    DELETE FROM job_events WHERE execution_id = ANY(ARRAY(SELECT id FROM gone))
    RETURNING id, execution_id, event, type, occurred_at, xact, attempt
), delivered AS (
    -- Events a subscription has not read yet (rare: they are older than the retention).
    $deliver_deleted
)
SELECT g.created_at, g.id, count(*) OVER () AS deleted FROM gone g ORDER BY g.created_at DESC, g.id LIMIT 1
