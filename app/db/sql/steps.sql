-- Named statements for job_steps, parsed once by app/db/queries.py.

-- name: step_get
SELECT name, result, completed_at FROM job_steps WHERE execution_id = :execution_id AND name = :name

-- name: step_insert_if_absent
-- Run-step-once: the first writer wins. A concurrent writer of the same step waits on the
-- primary key for the first one's transaction, then inserts nothing (and reads the step).
INSERT INTO job_steps (execution_id, name, result)
VALUES (:execution_id, :name, CAST(:result AS jsonb))
ON CONFLICT (execution_id, name) DO NOTHING
RETURNING name, result, completed_at
