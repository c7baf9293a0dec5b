-- Named statements of bulk actions (POST /v1/executions/bulk-*), parsed once by app/db/queries.py.

-- name: executions_select_for_bulk
-- A bulk action's rows: those in a state the action may change (:states) that match its filters,
-- oldest first, up to :n (the caller asks one more than it takes, to tell whether more match).
-- app/db/bulk.py appends each filter given as `AND column = :column` (ids: `AND id =
-- ANY(:ids)`) where the comment below stands, so every combination is a statement of its own,
-- planned for the indexes it can use. `created_at, id DESC`: a backward walk of the listing
-- indexes (state, created_at DESC, id) and (created_at DESC, id).
SELECT id, handler FROM job_executions
WHERE state = ANY(CAST(:states AS text[])) /* filters */
ORDER BY created_at, id DESC
LIMIT :n
