-- Named statements of GET /v1/executions/{id}/blockers, parsed once by app/db/queries.py.

-- name: execution_blocker_facts
-- What the claim (jobwire_claim) looks at for one execution, in one snapshot: whether it is due,
-- its queue paused, its handler at max_concurrency (counted only for a handler with a limit), its
-- key at key_concurrency or paused, the handler's or its key's rate limit's next slot ahead, a
-- stateful job of its queue PROCESSING or due ahead of it (for a stateful job only: the claim
-- takes one stateful job per queue at a time, best first), and whether a live node claims from
-- its queue (a heartbeat within :timeout whose queues are NULL, every queue, or name it).
SELECT e.state, e.queue,
       CASE WHEN e.scheduled_at > now() THEN e.scheduled_at END AS scheduled_until,
       COALESCE(q.paused, false) AS queue_paused,
       h.max_concurrency AS handler_limit,
       CASE WHEN h.max_concurrency IS NOT NULL THEN
           (SELECT count(*) FROM job_executions p WHERE p.state = 'PROCESSING' AND p.handler = e.handler)
       END AS handler_in_flight,
       e.concurrency_key,
       CASE WHEN e.concurrency_key IS NOT NULL THEN h.key_concurrency END AS key_limit,
       CASE WHEN e.concurrency_key IS NOT NULL AND h.key_concurrency IS NOT NULL THEN
           (SELECT count(*) FROM job_executions p
            WHERE p.state = 'PROCESSING' AND p.handler = e.handler AND p.concurrency_key = e.concurrency_key)
       END AS key_in_flight,
       COALESCE(k.paused, false) AS key_paused,
       CASE WHEN h.rate_limit IS NOT NULL AND f.rate_next > now() THEN f.rate_next END AS handler_rate_next,
       CASE WHEN h.key_rate_limit IS NOT NULL AND k.rate_next > now() THEN k.rate_next END AS key_rate_next,
       CASE WHEN f.circuit_state <> 'closed' AND f.circuit_until > now() THEN f.circuit_until END AS circuit_until,
       CASE WHEN f.retry_after > now() THEN f.retry_after END AS handler_retry_after,
       CASE WHEN k.retry_after > now() THEN k.retry_after END AS key_retry_after,
       -- An adaptive handler's limit over this execution: its key's, or (without a key) the handler's.
       CASE WHEN h.adaptive THEN
           COALESCE(CASE WHEN e.concurrency_key IS NULL THEN f.adaptive_limit ELSE k.adaptive_limit END,
                    LEAST(h.max_concurrency, 4))
       END AS adaptive_limit,
       CASE WHEN h.adaptive THEN
           (SELECT count(*) FROM job_executions p
            WHERE p.state = 'PROCESSING' AND p.handler = e.handler
              AND p.concurrency_key IS NOT DISTINCT FROM e.concurrency_key)
       END AS adaptive_in_flight,
       CASE WHEN e.stateful THEN
           (SELECT p.id FROM job_executions p
            WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = e.queue
            ORDER BY p.started_at LIMIT 1)
       END AS stateful_holder,
       CASE WHEN e.stateful AND e.scheduled_at <= now() THEN
           (SELECT a.id FROM job_executions a
            WHERE a.state = 'ENQUEUED' AND a.stateful AND a.queue = e.queue AND a.scheduled_at <= now()
              AND a.id <> e.id
              AND (a.priority > e.priority OR (a.priority = e.priority AND a.scheduled_at < e.scheduled_at))
            ORDER BY a.priority DESC, a.scheduled_at LIMIT 1)
       END AS stateful_ahead,
       -- A WAITING job of a workflow: its parents not terminal yet, by ref.
       CASE WHEN e.state = 'WAITING' THEN
           ARRAY(SELECT p.workflow_ref FROM job_dependencies d JOIN job_executions p ON p.id = d.parent_id
                 WHERE d.child_id = e.id AND p.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')
                 ORDER BY p.workflow_ref)
       END AS dependencies,
       -- A suspended job: its wait.
       e.state = 'WAITING' AND e.suspensions IS NOT NULL AND e.pending_parents IS NULL AS suspended,
       w.until AS suspended_until, w.signals AS suspended_signals, w.timeout_at AS suspended_timeout_at,
       CASE WHEN w.children THEN
           (SELECT count(*) FROM job_executions c
            WHERE c.spawned_by = e.id AND c.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED'))
       END AS suspended_children,
       EXISTS (SELECT 1 FROM job_server_heartbeats n
               WHERE n.last_heartbeat >= now() - make_interval(secs => :timeout)
                 AND (n.queues IS NULL OR e.queue = ANY(n.queues))) AS node_serves_queue
FROM job_executions e
LEFT JOIN job_queues q ON q.name = e.queue
LEFT JOIN job_handlers h ON h.name = e.handler
LEFT JOIN job_handler_flow f ON f.handler = e.handler
LEFT JOIN job_keys k ON k.handler = e.handler AND k.key = e.concurrency_key
LEFT JOIN job_waits w ON w.execution_id = e.id
WHERE e.id = :id
