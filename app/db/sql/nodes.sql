-- Named statements for job_server_heartbeats, parsed once by app/db/queries.py.
-- "Dead" is judged by the database clock (now()), never a node's.

-- name: node_heartbeat
-- Returns the database time it wrote (the outage rule counts in it). :queues: the queues the node
-- claims from, NULL for every queue.
INSERT INTO job_server_heartbeats AS h (server_id, last_heartbeat, started_at, queues)
VALUES (:server_id, now(), now(), CAST(:queues AS text[]))
ON CONFLICT (server_id) DO UPDATE SET last_heartbeat = now(), queues = excluded.queues
RETURNING h.last_heartbeat

-- name: nodes_live
-- Live nodes and the HTTP calls each has in flight (rows it holds; 202-accepted rows are held
-- by their handlers, not by a node). locked_by is in no index (revision 20261204_0025): the
-- PROCESSING rows are counted by node in one pass, not once per node.
SELECT h.server_id, h.started_at, h.last_heartbeat, h.queues, COALESCE(c.n, 0) AS in_flight
FROM job_server_heartbeats h
LEFT JOIN (SELECT e.locked_by, count(*) AS n FROM job_executions e
           WHERE e.state = 'PROCESSING' AND e.locked_by IS NOT NULL
           GROUP BY e.locked_by) AS c ON c.locked_by = h.server_id
WHERE h.last_heartbeat >= now() - make_interval(secs => :timeout)
ORDER BY h.started_at, h.server_id

-- name: nodes_dead
-- Nodes whose heartbeat is older than the timeout, and nodes that hold executions but have no
-- heartbeat row at all (a row lost to a crash between shutdown steps).
SELECT server_id FROM job_server_heartbeats
WHERE last_heartbeat < now() - make_interval(secs => :timeout) AND server_id <> :self
UNION
SELECT DISTINCT e.locked_by FROM job_executions e
WHERE e.state = 'PROCESSING' AND e.locked_by IS NOT NULL AND e.locked_by <> :self
  AND NOT EXISTS (SELECT 1 FROM job_server_heartbeats h WHERE h.server_id = e.locked_by)

-- name: db_now
SELECT now()

-- name: node_forget_if_idle
-- Delete a node's heartbeat only once nothing is PROCESSING under its name: a recovery that did
-- not commit leaves the row for the next scan. Its EVERY_INSTANCE firing cursors go with it (a
-- node id is never used again; fire_node '' is the SINGLE_INSTANCE slot, never a node's).
WITH gone AS (
    DELETE FROM job_server_heartbeats h
    WHERE h.server_id = :server_id
      AND NOT EXISTS (SELECT 1 FROM job_executions e
                      WHERE e.state = 'PROCESSING' AND e.locked_by = :server_id)
    RETURNING h.server_id
), cursors AS (
    DELETE FROM job_schedule_fires f USING gone WHERE f.fire_node = gone.server_id
)
SELECT server_id FROM gone
