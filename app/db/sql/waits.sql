-- Named statements of durable waits and signals (job_waits, job_signals and the suspension columns
-- of job_executions), parsed once by app/db/queries.py. A suspended job is WAITING with
-- `suspensions` set and `pending_parents` NULL; every statement here holds its row's lock before it
-- reads its signals, so a signal and a wait never miss each other (the one that locks second sees
-- what the first committed).

-- name: execution_suspensions
-- The attempt's execution, locked, and how often it suspended; no row when it is not PROCESSING at
-- that attempt any more.
SELECT COALESCE(e.suspensions, 0) AS suspensions FROM job_executions e
WHERE e.id = :id AND e.attempt = :attempt AND e.state = ANY(CAST(:from_states AS text[]))
FOR UPDATE

-- name: execution_suspend
-- A handler's suspend of its attempt: PROCESSING → WAITING, the same attempt, its lease and
-- deadline dropped (its slot is free); :steps recorded as run-step-once results (a step recorded
-- before keeps its first result); the wait stored (its number, until, timeout, signals, children).
-- wake_at: the sooner of until and the timeout (the coordinator's wake scan). A wait that is over
-- already (a signal there, every spawned child ended) is resumed next, in this transaction, by
-- executions_resume; a child's end that commits after it waits for the row's lock, then sees it
-- WAITING and resumes it (jobwire_workflow_transitions).
WITH t AS (
    SELECT e.id, COALESCE(e.suspensions, 0) + 1 AS n FROM job_executions e
    WHERE e.id = :id AND e.attempt = :attempt AND e.state = ANY(CAST(:from_states AS text[]))
    FOR UPDATE
), steps AS (
    INSERT INTO job_steps (execution_id, name, result)
    SELECT t.id, s.key, s.value FROM t, jsonb_each(CAST(:steps AS jsonb)) AS s
    ON CONFLICT (execution_id, name) DO NOTHING
), w AS (
    INSERT INTO job_waits AS w (execution_id, n, attempt, until, timeout_at, signals, children)
    SELECT t.id, t.n, :attempt, CAST(:until AS timestamptz),
           now() + make_interval(secs => CAST(:timeout AS float8)), CAST(:signals AS text[]), :children
    FROM t
    ON CONFLICT (execution_id) DO UPDATE
    SET n = EXCLUDED.n, attempt = EXCLUDED.attempt, until = EXCLUDED.until, timeout_at = EXCLUDED.timeout_at,
        signals = EXCLUDED.signals, children = EXCLUDED.children, suspended_at = now(), resumed_at = NULL,
        reason = NULL, delivered = NULL
    RETURNING w.execution_id, w.n, w.until, w.timeout_at, w.children
), u AS (
    UPDATE job_executions e
    SET state = 'WAITING', locked_by = NULL, deadline_at = NULL, suspensions = w.n, pending_parents = NULL,
        wake_at = LEAST(w.until, w.timeout_at), updated_at = now()
    FROM w
    WHERE e.id = w.execution_id AND e.state = ANY(CAST(:from_states AS text[]))
    RETURNING e.*
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT u.id, u.suspensions, u.handler FROM u

-- name: executions_resume
-- Resume the suspended WAITING executions whose wait is over: those of :ids (whose rows the caller
-- holds), or with :ids NULL those whose wake_at passed, :n at most, SKIP LOCKED (the wake scan of
-- every node). Over: a signal it names is there (every one it names is consumed, by this
-- resumption), else it waits for its spawned children and none is unfinished, else its `until`
-- came, else its timeout passed. ENQUEUED, due now, the same attempt (a resumption spends none);
-- its wait says why and holds the signals for the dispatch; one not over is left as it is.
WITH t AS (
    SELECT e.id FROM job_executions e
    WHERE e.state = 'WAITING' AND e.suspensions IS NOT NULL AND e.pending_parents IS NULL
      AND CASE WHEN CAST(:ids AS uuid[]) IS NULL THEN e.wake_at <= now() ELSE e.id = ANY(CAST(:ids AS uuid[])) END
    ORDER BY e.id
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), ready AS (
    SELECT t.id, w.n, w.until, w.timeout_at,
           (SELECT array_agg(s.id ORDER BY s.id) FROM job_signals s
            WHERE s.execution_id = t.id AND s.consumed_at IS NULL AND s.name = ANY(w.signals)) AS signal_ids,
           w.children AND NOT EXISTS (SELECT 1 FROM job_executions c
                                      WHERE c.spawned_by = t.id
                                        AND c.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')) AS children_done
    FROM t JOIN job_waits w ON w.execution_id = t.id
), why AS (
    SELECT r.*, CASE WHEN r.signal_ids IS NOT NULL THEN 'signal'
                     WHEN r.children_done THEN 'children'
                     WHEN r.until <= now() THEN 'timer'
                     WHEN r.timeout_at <= now() THEN 'timeout' END AS reason
    FROM ready r
), consumed AS (
    UPDATE job_signals s SET consumed_at = now(), resume = why.n
    FROM why
    WHERE why.reason = 'signal' AND s.id = ANY(why.signal_ids)
    RETURNING s.execution_id, s.id, s.name, s.payload, s.sent_at
), w AS (
    UPDATE job_waits w
    SET resumed_at = now(), reason = why.reason,
        -- sent_at as the dispatch writes its times: RFC 3339 in UTC with a Z.
        delivered = COALESCE((SELECT jsonb_agg(jsonb_build_object(
                                         'name', c.name, 'payload', c.payload,
                                         'sent_at', to_char(c.sent_at AT TIME ZONE 'UTC',
                                                            'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) ORDER BY c.id)
                              FROM consumed c WHERE c.execution_id = why.id), CAST('[]' AS jsonb))
    FROM why
    WHERE w.execution_id = why.id AND why.reason IS NOT NULL
), u AS (
    UPDATE job_executions e
    SET state = 'ENQUEUED', scheduled_at = now(), wake_at = NULL, updated_at = now()
    FROM why
    WHERE e.id = why.id AND why.reason IS NOT NULL AND e.state = 'WAITING'
    RETURNING e.*
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT u.id, u.queue FROM u

-- name: signal_send
-- POST /v1/executions/{id}/signals/{name}: the execution locked (a suspend or a resumption of it
-- waits, or is waited for), then the signal stored unless it is terminal. No row: gone or terminal.
WITH e AS (
    SELECT x.id, x.state FROM job_executions x WHERE x.id = :id FOR UPDATE
)
INSERT INTO job_signals (execution_id, name, payload)
SELECT e.id, :name, CAST(:payload AS jsonb) FROM e
WHERE e.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')
RETURNING id, sent_at

-- name: signals_page
-- GET /v1/executions/{id}/signals: oldest first, after the cursor's id.
SELECT s.id, s.execution_id, s.name, s.payload, s.sent_at, s.consumed_at
FROM job_signals s
WHERE s.execution_id = :id AND s.id > :after
ORDER BY s.id
LIMIT :limit

-- name: signal_consumed
SELECT s.consumed_at IS NOT NULL FROM job_signals s WHERE s.id = :id
