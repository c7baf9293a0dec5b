-- Named statements of debounce at enqueue (app/services/enqueue.py), parsed once by
-- app/db/queries.py. A debounced enqueue holds its (handler, key) row of job_debounce until
-- commit, so two nodes debouncing the same key at once take turns and leave one execution.

-- name: debounce_make
-- The row of (:handler, :key), made if missing (none for a handler that does not exist).
INSERT INTO job_debounce (handler, key)
SELECT h.name, :key FROM job_handlers h WHERE h.name = :handler
ON CONFLICT (handler, key) DO NOTHING

-- name: debounce_read
-- The row, locked until commit, with the state of the execution it names (NULL: none, or gone).
SELECT d.execution_id, d.first_at, d.until, now() AS now, e.state
FROM job_debounce d LEFT JOIN job_executions e ON e.id = d.execution_id
WHERE d.handler = :handler AND d.key = :key
FOR UPDATE OF d

-- name: debounce_push
-- Trailing mode: the waiting execution takes this enqueue: due :delay seconds from now (never past
-- :until, the first enqueue of the run + max_delay_seconds), with this enqueue's payload and
-- metadata. Guarded: still ENQUEUED.
UPDATE job_executions
SET scheduled_at = LEAST(now() + make_interval(secs => CAST(:delay AS float8)), CAST(:until AS timestamptz)),
    payload = CAST(:payload AS jsonb), metadata = CAST(:metadata AS jsonb), updated_at = now()
WHERE id = :id AND state = 'ENQUEUED'
RETURNING $COLUMNS

-- name: debounce_extend
-- Leading mode: an enqueue dropped within the window moves its end (never past :cap).
UPDATE job_debounce
SET until = LEAST(now() + make_interval(secs => CAST(:delay AS float8)), CAST(:cap AS timestamptz))
WHERE handler = :handler AND key = :key

-- name: debounce_start
-- A new run of enqueues: its execution, begun now; in leading mode enqueues are dropped for
-- :window seconds (NULL: trailing mode, no window).
UPDATE job_debounce
SET execution_id = :id, first_at = now(),
    until = now() + make_interval(secs => CAST(:window AS float8))
WHERE handler = :handler AND key = :key
