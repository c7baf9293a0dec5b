-- Named statements of purges (DELETE /v1/executions/{id}, bulk-delete), parsed once by
-- app/db/queries.py. An execution is deleted with its events (job_events has no foreign key); its
-- logs and steps go by their foreign keys (ON DELETE CASCADE). A deleted execution frees its
-- idempotency key.

-- name: executions_delete
-- Purge (DELETE /v1/executions/{id}, bulk-delete): the executions of :ids in a state they may be
-- deleted from (:from_states: any but ENQUEUED and PROCESSING), locked in id order first (the
-- order of every batch write, so two batches over the same rows wait for each other rather than
-- deadlock). The ids deleted come back; their events go in the next statement of the same
-- transaction (executions_delete_events).
WITH locked AS MATERIALIZED (
    SELECT id FROM job_executions
    WHERE id = ANY(CAST(:ids AS uuid[])) AND state = ANY(CAST(:from_states AS text[]))
    ORDER BY id
    FOR UPDATE
)
DELETE FROM job_executions WHERE id = ANY(ARRAY(SELECT id FROM locked))
RETURNING id

-- name: executions_delete_events
-- The events of executions just deleted. A statement of its own, after the delete: a purge that
-- waited for a row lock (a late success committing) deletes the row as that writer left it, and
-- only a new snapshot sees the event it wrote. No writer adds one later: the row is gone. Events a
-- subscription has not read yet are delivered from the rows going (deliver_deleted).
WITH deleted_events AS (
    DELETE FROM job_events WHERE execution_id = ANY(CAST(:ids AS uuid[]))
    RETURNING id, execution_id, event, type, occurred_at, xact, attempt
)
$deliver_deleted
