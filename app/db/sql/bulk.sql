-- Named statements of bulk actions (POST /v1/executions/bulk-*), parsed once by app/db/queries.py.
--
-- A bulk action selects only rows it can change, so that every call makes progress: a row it
-- selected and did not change moved meanwhile, and no longer matches. app/db/bulk.py appends each
-- filter given as `AND column = :column` (ids: `AND id = ANY(:ids)`) where the comment below stands,
-- so every combination is a statement of its own, planned for the indexes it can use.
-- Every call takes the executions created by :as_of (the first call's time), after the previous
-- call's last row in this order (app/db/bulk.py appends that too), so a repetition is one pass
-- that ends: a row it changed that came back into the selection (a retried job dead-lettered again
-- at once) lies behind it, and a job enqueued meanwhile is newer than :as_of.
-- `created_at, id DESC`: a backward walk of the listing index (state, created_at DESC, id), once
-- per state, the walks merged (each state's first :n enough for the first :n of all). The caller
-- asks one row more than it takes, to tell whether more match.

-- name: executions_select_for_bulk
-- A cancel's or a delete's rows: those in a state the action may change (:states) that match its
-- filters, oldest first, up to :n.
SELECT x.id, x.handler, x.created_at
FROM unnest(CAST(:states AS text[])) AS s(state)
CROSS JOIN LATERAL (
    SELECT id, handler, created_at FROM job_executions
    WHERE state = s.state AND created_at <= :as_of /* filters */
    ORDER BY created_at, id DESC
    LIMIT :n) AS x
ORDER BY x.created_at, x.id DESC
LIMIT :n

-- name: executions_select_for_bulk_retry
-- A retry's rows: as executions_select_for_bulk, of handlers still registered. A retry skips a
-- row whose handler was deleted (its check under the handler's lock stays, for a handler deleted
-- after this read): selected, such rows would come first in every call, forever, and newer rows
-- would never be reached.
SELECT x.id, x.handler, x.created_at
FROM unnest(CAST(:states AS text[])) AS s(state)
CROSS JOIN LATERAL (
    SELECT id, handler, created_at FROM job_executions e
    WHERE state = s.state AND created_at <= :as_of /* filters */
      AND EXISTS (SELECT 1 FROM job_handlers h WHERE h.name = e.handler)
    ORDER BY created_at, id DESC
    LIMIT :n) AS x
ORDER BY x.created_at, x.id DESC
LIMIT :n

-- name: bulk_as_of
-- The instant a repetition of a bulk action takes its executions at: the first call's.
SELECT now()
