-- Named statements for job_logs, parsed once by app/db/queries.py.

-- name: logs_append
-- A handler's entries for one attempt, already normalized, in the order sent (the identity
-- values follow the ORDER BY, so reading by id gives them back in that order). A missing
-- logged_at is the database's now().
INSERT INTO job_logs (execution_id, attempt, level, message, logged_at)
SELECT :execution_id, :attempt, x.entry->>'level', x.entry->>'message',
       COALESCE(CAST(x.entry->>'logged_at' AS timestamptz), now())
FROM jsonb_array_elements(CAST(:entries AS jsonb)) WITH ORDINALITY AS x(entry, ord)
ORDER BY x.ord

-- name: logs_page
-- Oldest first (in the order received), a page after the cursor's id; index ix_job_logs_execution.
SELECT id, attempt, level, message, logged_at
FROM job_logs
WHERE execution_id = :execution_id AND id > :after
ORDER BY id
LIMIT :limit
