-- Named statements for job_executions, parsed once by app/db/queries.py.
-- $COLUMNS expands to the execution's named columns (never RETURNING *: asyncpg's statement
-- cache breaks on running nodes when a migration adds a column). $EVENT(alias, state, attempt)
-- expands to the curated transition event of DESIGN §4, written in the same statement.

-- name: executions_insert
-- Insert a batch of DELAYED jobs through jobwire_enqueue(jobs jsonb) (app/db/sql/functions), the
-- one insert path the API shares with applications: validation, defaults, idempotency keys and
-- the NOTIFY all happen there (the insert writes no event row: DESIGN §8). One row per item in
-- input order (ord); created is false where an idempotency key returned an execution stored
-- before. A job it inserts is in no workflow (yet): the function's result has no workflow columns.
SELECT ord, created, $COLUMNS
FROM (SELECT f.*, CAST(NULL AS uuid) AS workflow_id, CAST(NULL AS text) AS workflow_ref
      FROM jobwire_enqueue(CAST(:jobs AS jsonb)) AS f) AS enqueued
ORDER BY ord

-- name: executions_insert_ids
-- As executions_insert, the ids alone (POST /v1/jobs/batch with `Prefer: return=minimal`).
SELECT ord, created, CAST(id AS text) AS id FROM jobwire_enqueue(CAST(:jobs AS jsonb)) ORDER BY ord

-- name: execution_get
SELECT $COLUMNS FROM job_executions WHERE id = :id

-- name: execution_has_idempotency_key
SELECT EXISTS (SELECT 1 FROM job_executions WHERE idempotency_key = :key)

-- name: executions_claim
-- The dispatcher's claim: jobwire_claim (app/db/sql/functions/jobwire_claim.sql) takes the advisory
-- locks (stateful queues, limited handlers) and then claims up to :n due jobs, best first, marking
-- them PROCESSING (no event row: DESIGN §8); one statement, so on its own it is one round trip.
-- :queues NULL claims from every queue. The JSON documents come as text, to be embedded in the request body
-- as they are (no decoding and encoding again on the way to the handler).
SELECT id, job_id, job_type, handler, queue, attempt, max_attempts, CAST(payload AS text) AS payload,
       CAST(parameters AS text) AS parameters, CAST(metadata AS text) AS metadata, scheduled_at,
       started_at, deadline_at, seconds_left, handler_url, handler_secret, handler_secrets, concurrency_key,
       flow_watch, CAST(workflow AS text) AS workflow, CAST(continuation AS text) AS continuation,
       CAST(handler_batch AS text) AS handler_batch
FROM jobwire_claim(:node, :n, :default_timeout, CAST(:queues AS text[]))

-- fragment: locked
-- The rows of a batch (:ids) in a state the statement may change (:from_states), locked in id
-- order before they are written. Two batches over the same rows (the dispatcher's outcomes, a
-- group of completion callbacks) then wait for each other; locked in whatever order their
-- plans reach the rows, they could deadlock. A row already past them is not locked at all.
-- By the primary key: `state || ''` keeps the indexes on state (ix_job_executions_state_created,
-- the partial ones of PROCESSING rows) out of the plan, here and in the writes after it. With
-- statistics taken before a burst of claims those look empty, and a plan through one read every
-- row in flight, once per row of the batch: a 202's release of 256 among 2,400 in flight took
-- 424 ms, a batch of 500 successes among 17,300 in flight 3.8 s.
locked AS MATERIALIZED (
    SELECT e.id FROM job_executions e
    WHERE e.id = ANY(CAST(:ids AS uuid[])) AND e.state || '' = ANY(CAST(:from_states AS text[]))
    ORDER BY e.id
    FOR UPDATE
)

-- fragment: succeed
-- Record successes in one statement. Guarded per row: the attempt must be current, and a
-- success wins over PROCESSING, ABANDONED, and a DEAD_LETTER reached by abandoning.
-- The batch comes as parallel arrays (results as JSON text; http_statuses the handler's status
-- when the success was its synchronous reply, NULL for a completion callback): unnest() of a
-- parameter is estimated at 10 rows, so even the generic plan of this prepared statement looks
-- rows up by primary key. (jsonb_to_recordset is estimated at 100 rows: on a table of a few
-- thousand rows the generic plan scanned the whole table for every single completion.)
-- The event row is typed execution.succeeded and carries, beside the curated event, the
-- attempt it ends, its start, its node (claimed_by) and the HTTP status: the attempt history.
-- A success clears the error an earlier attempt (or the abandonment it wins over) left on the row:
-- each attempt keeps its own in the history, and the row tells what is true now.
WITH input AS (
    SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:attempts AS int[]), CAST(:results AS text[]),
                         CAST(:http_statuses AS int[]))
        AS i(id, attempt, result, http_status)
), $locked, u AS (
    UPDATE job_executions e
    SET state = 'SUCCEEDED', result = CAST(input.result AS jsonb), completed_at = now(), updated_at = now(),
        locked_by = NULL, last_error = NULL, error_type = NULL
    FROM input JOIN locked ON locked.id = input.id
    WHERE e.id = input.id AND e.attempt = input.attempt
      AND (e.state || '' = ANY(CAST(:from_states AS text[]))
           AND (e.state <> 'DEAD_LETTER' OR e.error_type LIKE 'abandoned\_%'))
    RETURNING $E_COLUMNS, e.claimed_by, input.http_status
), ev AS (
    INSERT INTO job_events (execution_id, event, type, attempt, started_at, node, http_status)
    SELECT u.id, $EVENT(u, u.state, u.attempt), 'execution.succeeded', u.attempt, u.started_at, u.claimed_by,
           u.http_status
    FROM u
), health AS (
    -- A CRON fire that succeeds resets its schedule's failure count (db-scheduler's health).
    UPDATE job_schedules s SET last_success_at = now(), consecutive_failures = 0
    FROM (SELECT DISTINCT job_id FROM u WHERE job_type = 'CRON') AS c
    WHERE s.job_id = c.job_id
), circuit_reset AS (
    -- A success ends a run of failures its handler's closed circuit counts (app/domain/flow.py):
    -- an index probe per handler, a write only after failures. Rows locked in name order.
    UPDATE job_handler_flow f SET circuit_failures = 0, updated_at = now()
    FROM (SELECT x.handler FROM job_handler_flow x
          WHERE x.handler IN (SELECT u.handler FROM u) AND x.circuit_failures > 0 AND x.circuit_state = 'closed'
          ORDER BY x.handler
          FOR NO KEY UPDATE) AS r
    WHERE f.handler = r.handler
), wake AS (
    -- A success that frees a stateful queue or a max_concurrency slot wakes the dispatchers
    -- (one NOTIFY, delivered on commit). Evaluated once, through the select list below.
    SELECT pg_notify(:channel, '') FROM u LEFT JOIN job_handlers h ON h.name = u.handler
    WHERE u.stateful OR h.max_concurrency IS NOT NULL
    LIMIT 1
)

-- name: executions_succeed
-- Successes, returning each execution as it now is (the completion callback answers with it)
-- and the attempt each ended (ended_*: what its log line tells).
$succeed
SELECT $COLUMNS, 'SUCCEEDED' AS ended_as, attempt AS ended_attempt, started_at AS ended_started_at,
       claimed_by AS ended_node, completed_at AS ended_at, (SELECT count(*) FROM wake) AS woke
FROM u

-- name: executions_succeed_quietly
-- Successes, returning only how many applied (the dispatcher's outcome batches need no more).
$succeed
SELECT count(*) AS succeeded, (SELECT count(*) FROM wake) AS woke FROM u

-- name: executions_release_to_handler
-- A 202: the handler now holds the execution, so this node lets go (locked_by cleared).
-- Guarded on state (:from_states, PROCESSING), attempt and locked_by: the handler's callback
-- may reach another node first. Parallel arrays, as executions_succeed (an index plan even
-- when generic), and by the primary key as in `locked`.
WITH input AS (
    SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:attempts AS int[])) AS i(id, attempt)
), $locked
UPDATE job_executions e
SET locked_by = NULL, updated_at = now()
FROM input JOIN locked ON locked.id = input.id
WHERE e.id = input.id AND e.attempt = input.attempt AND e.state || '' = ANY(CAST(:from_states AS text[]))
  AND e.locked_by = :node
RETURNING e.id

-- fragment: end_attempt
-- Ends the attempts selected by a CTE t(id, attempt, started_at, again, at_deadline) with cause
-- :cause (FAILED or ABANDONED), in ONE statement with their retry: `again` → re-enqueued as
-- attempt + 1 after :delay seconds; else DEAD_LETTER (an abandoned CRON attempt stays ABANDONED:
-- its schedule fires again). Guarded per row on state and attempt, and where `at_deadline` on the
-- deadline having passed (database time; re-checked on the row as it is when locked, so a
-- heartbeat that moved the deadline meanwhile wins and a stale timer abandons nothing). Events: the cause (with the ended
-- attempt's start, and now as its end), then the new state. The cause's row is typed
-- execution.failed or execution.abandoned and carries, beside the curated event, the ended
-- attempt, its start, its node (claimed_by), :http_status (NULL for a connection error or an
-- abandonment) and :error, the attempt's own error text; the row after it is typed
-- execution.dead_lettered (with the attempt) when the attempt ends DEAD_LETTER, and has no type
-- when the row is re-enqueued. A CRON row that ends DEAD_LETTER or ABANDONED here counts against
-- its schedule's health (consecutive_failures, last_failure_at). Each row returned names the
-- attempt it ended (ended_*: what its log line tells).
u AS (
    UPDATE job_executions e
    SET state = CASE WHEN t.again THEN 'ENQUEUED'
                     WHEN :cause = 'ABANDONED' AND e.job_type = 'CRON' THEN 'ABANDONED'
                     ELSE 'DEAD_LETTER' END,
        attempt = CASE WHEN t.again THEN e.attempt + 1 ELSE e.attempt END,
        scheduled_at = CASE WHEN t.again THEN now() + make_interval(secs => :delay) ELSE e.scheduled_at END,
        -- A re-enqueued row shows no times of the attempt that just ended (as a manual retry).
        started_at = CASE WHEN t.again THEN NULL ELSE e.started_at END,
        deadline_at = CASE WHEN t.again THEN NULL ELSE e.deadline_at END,
        completed_at = CASE WHEN t.again THEN NULL ELSE now() END,
        last_error = :error, error_type = :error_type, locked_by = NULL, updated_at = now()
    FROM t  -- by the primary key, as in `locked` (state || '')
    WHERE e.id = t.id AND e.attempt = t.attempt AND e.state || '' = ANY(CAST(:from_states AS text[]))
      AND (NOT t.at_deadline OR e.deadline_at <= now())
    RETURNING $E_COLUMNS, t.attempt AS ended_attempt, t.started_at AS ended_started_at, e.claimed_by AS ended_node
), ev AS (
    INSERT INTO job_events (execution_id, event, type, attempt, started_at, node, http_status, error)
    SELECT u.id, $EVENT(u, x.state, x.event_attempt) || CASE WHEN x.ord = 1
               THEN jsonb_build_object('started_at', u.ended_started_at, 'completed_at', now())
               ELSE '{}' END,
           x.type, x.attempt, x.started_at, x.node, x.http_status, x.error
    FROM u, LATERAL (VALUES (1, CAST(:cause AS text), u.ended_attempt,
                             CASE WHEN :cause = 'FAILED' THEN 'execution.failed' ELSE 'execution.abandoned' END,
                             u.ended_attempt, u.ended_started_at, u.ended_node, CAST(:http_status AS int),
                             CAST(:error AS text)),
                            (2, u.state, u.attempt,
                             CASE WHEN u.state = 'DEAD_LETTER' THEN 'execution.dead_lettered' END,
                             CASE WHEN u.state = 'DEAD_LETTER' THEN u.attempt END, NULL, NULL, NULL, NULL))
        AS x(ord, state, event_attempt, type, attempt, started_at, node, http_status, error)
    WHERE x.ord = 1 OR u.state <> :cause
    ORDER BY u.id, x.ord
), health AS (
    -- A CRON fire that ends DEAD_LETTER or ABANDONED counts against its schedule's health.
    UPDATE job_schedules s
    SET last_failure_at = now(), consecutive_failures = s.consecutive_failures + c.n
    FROM (SELECT job_id, count(*) AS n FROM u
          WHERE job_type = 'CRON' AND state IN ('DEAD_LETTER', 'ABANDONED') GROUP BY job_id) AS c
    WHERE s.job_id = c.job_id
)
SELECT $COLUMNS, CAST(:cause AS text) AS ended_as, ended_attempt, ended_started_at, ended_node, now() AS ended_at
FROM u

-- name: execution_fail
-- One failed or abandoned attempt (a dispatch outcome or a handler's failure callback).
-- :at_deadline: an abandonment because the deadline passed, which applies only if it has.
WITH t AS (
    SELECT id, attempt, started_at,
           :retryable AND attempt + 1 < max_attempts
               AND NOT (:cause = 'ABANDONED' AND job_type = 'CRON') AS again,
           CAST(:at_deadline AS boolean) AS at_deadline
    FROM job_executions
    WHERE id = :id AND attempt = :attempt
), $end_attempt

-- name: executions_abandon_held_by
-- Dead-node recovery: abandon what the given nodes held (their HTTP calls died with them), a
-- batch at a time, except the :keep ids. SKIP LOCKED lets racing scanners share the work; the
-- guard in end_attempt makes sure no attempt is ended twice.
WITH t AS (
    SELECT id, attempt, started_at, attempt + 1 < max_attempts AND job_type <> 'CRON' AS again,
           false AS at_deadline
    FROM job_executions
    WHERE state = 'PROCESSING' AND locked_by = ANY(CAST(:nodes AS text[]))
      AND id <> ALL(CAST(:keep AS uuid[]))
    ORDER BY id
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), $end_attempt

-- name: executions_release_undispatched
-- Rows :node claimed but never dispatched (a claim that committed although its reply was lost
-- with the connection), all but the :keep ids it is working on: back to ENQUEUED with the same
-- attempt, still due as before (no call was made, so nothing ran and no attempt is spent; a CRON
-- fire still runs for its instant). A batch at a time, with an event each.
WITH t AS (
    SELECT id FROM job_executions
    WHERE state = 'PROCESSING' AND locked_by = :node AND id <> ALL(CAST(:keep AS uuid[]))
    ORDER BY id
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), u AS (
    UPDATE job_executions e
    SET state = 'ENQUEUED', started_at = NULL, deadline_at = NULL, locked_by = NULL, updated_at = now()
    FROM t
    WHERE e.id = t.id AND e.state = ANY(CAST(:from_states AS text[])) AND e.locked_by = :node
    RETURNING $E_COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT $COLUMNS FROM u

-- name: executions_release_refused
-- Calls an adaptive handler refused (429, app/domain/flow.py): back to ENQUEUED with the same
-- attempt and the same place in line (nothing was worked on, so no attempt is spent), with an
-- event each. Guarded: PROCESSING at that attempt.
WITH input AS (
    SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:attempts AS int[])) AS i(id, attempt)
), $locked, u AS (
    UPDATE job_executions e
    SET state = 'ENQUEUED', started_at = NULL, deadline_at = NULL, locked_by = NULL, updated_at = now()
    FROM input JOIN locked ON locked.id = input.id
    WHERE e.id = input.id AND e.attempt = input.attempt AND e.state || '' = ANY(CAST(:from_states AS text[]))
    RETURNING $E_COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT $COLUMNS FROM u

-- name: executions_abandon_past_deadline
-- Deadline enforcement: abandon attempts whose deadline (database time) has passed, whoever
-- holds them (a node's hanging call, or a handler that accepted with 202 and went quiet).
WITH t AS (
    SELECT id, attempt, started_at, attempt + 1 < max_attempts AND job_type <> 'CRON' AS again,
           true AS at_deadline
    FROM job_executions
    WHERE state = 'PROCESSING' AND deadline_at < now()
    ORDER BY deadline_at
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), $end_attempt

-- name: executions_next_deadline
-- Seconds (database time) until the earliest deadline of a PROCESSING attempt, or NULL when none
-- is PROCESSING: one probe of the deadline index.
SELECT CAST(EXTRACT(EPOCH FROM min(deadline_at) - now()) AS float8) FROM job_executions WHERE state = 'PROCESSING'

-- name: execution_seconds_left
-- Seconds (database time) until this attempt's deadline, which heartbeat and progress callbacks
-- move; no row once it is no longer PROCESSING at that attempt.
SELECT CAST(EXTRACT(EPOCH FROM deadline_at - now()) AS float8) FROM job_executions
WHERE id = :id AND attempt = :attempt AND state = 'PROCESSING'

-- name: executions_next_rate_slot
-- Seconds (database time) until the soonest next slot of a rate limit, a handler's or a key's,
-- that has due work waiting (negative: the slot came while the claim ran); NULL when none has (no
-- rate limit in use, or none with work). A node whose claim came back short sleeps no longer than
-- this: a job held back by a rate limit starts as soon as the window allows. Limiters idle for a
-- minute are not looked at; the keys' are walked in slot order up to the first with work.
SELECT CAST(EXTRACT(EPOCH FROM LEAST(
           (SELECT min(f.rate_next) FROM job_handler_flow f
            WHERE f.rate_next > now() - interval '1 minute'
              AND EXISTS (SELECT 1 FROM job_executions e
                          WHERE e.handler = f.handler AND e.state = 'ENQUEUED' AND e.scheduled_at <= now())),
           (SELECT k.rate_next FROM job_keys k
            WHERE k.rate_next > now() - interval '1 minute'
              AND EXISTS (SELECT 1 FROM job_executions e
                          WHERE e.handler = k.handler AND e.concurrency_key = k.key AND e.state = 'ENQUEUED'
                            AND e.scheduled_at <= now())
            ORDER BY k.rate_next LIMIT 1)) - now()) AS float8)

-- name: execution_extend_deadline
-- A handler's progress or heartbeat for the current attempt: the deadline moves to now() + its
-- timeout, never past started_at + max_duration_seconds; a progress snapshot is merged in
-- (omitted fields keep their values; progress stays NULL until a first snapshot, a heartbeat
-- leaves it as it is). Zero rows: not PROCESSING any more (or another attempt).
UPDATE job_executions e
SET deadline_at = LEAST(
        now() + make_interval(secs => COALESCE(
            e.timeout_seconds,
            (SELECT h.timeout_seconds FROM job_handlers h WHERE h.name = e.handler),
            :default_timeout)),
        COALESCE(e.started_at + make_interval(secs => e.max_duration_seconds),
                 CAST('infinity' AS timestamptz))),
    progress = CASE WHEN CAST(:progress AS jsonb) IS NULL THEN e.progress
                    ELSE COALESCE(e.progress, CAST('{}' AS jsonb)) || CAST(:progress AS jsonb) END,
    updated_at = now()
WHERE e.id = :id AND e.attempt = :attempt AND e.state = 'PROCESSING'
RETURNING e.id

-- fragment: cancel_selected
-- A user's cancel of the rows a CTE t(id, was) selected and locked (was: the state each had):
-- CANCELLED, each with its event row typed execution.cancelled; a cancel of a PROCESSING execution
-- ends its attempt, so that row also carries the attempt, its start and its node.
u AS (
    UPDATE job_executions e
    SET state = 'CANCELLED', completed_at = now(), locked_by = NULL, updated_at = now()
    FROM t
    WHERE e.id = t.id AND e.state = ANY(CAST(:from_states AS text[]))
    RETURNING $E_COLUMNS, t.was, e.claimed_by
), ev AS (
    INSERT INTO job_events (execution_id, event, type, attempt, started_at, node)
    SELECT u.id, $EVENT(u, u.state, u.attempt), 'execution.cancelled',
           CASE WHEN u.was = 'PROCESSING' THEN u.attempt END,
           CASE WHEN u.was = 'PROCESSING' THEN u.started_at END,
           CASE WHEN u.was = 'PROCESSING' THEN u.claimed_by END
    FROM u
)
SELECT $COLUMNS FROM u

-- name: execution_cancel
-- A user's cancel: ENQUEUED, PROCESSING or WAITING → CANCELLED.
WITH t AS (
    SELECT id, state AS was FROM job_executions
    WHERE id = :id AND state = ANY(CAST(:from_states AS text[]))
    FOR UPDATE
), $cancel_selected

-- name: execution_retry_manually
-- A user's retry of DEAD_LETTER or CANCELLED: a new attempt, due now, max_attempts raised if spent.
-- Its event row is typed execution.retried (it ends no attempt: no attempt columns). A CANCELLED job
-- of a workflow (cancelled while it waited) with parents not terminal yet waits for them again
-- (WAITING, counting them), as it did before the cancel.
WITH p AS (
    SELECT count(*) AS unfinished FROM job_dependencies d JOIN job_executions x ON x.id = d.parent_id
    WHERE d.child_id = :id AND x.state NOT IN ('SUCCEEDED', 'DEAD_LETTER', 'CANCELLED')
), u AS (
    UPDATE job_executions
    SET state = CASE WHEN state = 'CANCELLED' AND workflow_id IS NOT NULL AND (SELECT unfinished FROM p) > 0
                     THEN 'WAITING' ELSE 'ENQUEUED' END,
        pending_parents = CASE WHEN workflow_id IS NOT NULL AND pending_parents IS NOT NULL
                               THEN (SELECT unfinished FROM p) ELSE pending_parents END,
        attempt = attempt + 1, max_attempts = GREATEST(max_attempts, attempt + 2),
        scheduled_at = now(), started_at = NULL, completed_at = NULL, deadline_at = NULL,
        locked_by = NULL, updated_at = now()
    WHERE id = :id AND state = ANY(CAST(:from_states AS text[]))
    RETURNING $COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event, type)
    SELECT u.id, $EVENT(u, u.state, u.attempt), 'execution.retried' FROM u
)
SELECT $COLUMNS FROM u

-- name: events_for_execution
-- Every event row of an execution, typed or not, oldest first (the insert and the claims write
-- none: DESIGN §8).
SELECT id, event, occurred_at FROM job_events WHERE execution_id = :id ORDER BY id

-- name: execution_attempts
-- GET /v1/executions/{id}/attempts, oldest first: one item per attempt dispatched, from the
-- typed outcome rows that name an attempt's start (a cancel of an ENQUEUED execution ends no
-- attempt). The LAST outcome row of an attempt wins: a late success after ABANDONED (or after a
-- DEAD_LETTER reached by abandoning) makes that attempt SUCCEEDED. The attempt in flight is the
-- execution itself: PROCESSING, started, no outcome row yet. A claim put back undispatched
-- (PROCESSING → ENQUEUED, same attempt) wrote no outcome and is not PROCESSING: no attempt.
WITH outcome AS (
    SELECT DISTINCT ON (ev.attempt) ev.attempt, ev.type, ev.started_at, ev.occurred_at, ev.node,
           ev.http_status, ev.error, ev.event->>'error_type' AS error_type
    FROM job_events ev
    WHERE ev.execution_id = :id AND ev.started_at IS NOT NULL
      AND ev.type IN ('execution.succeeded', 'execution.failed', 'execution.abandoned', 'execution.cancelled')
    ORDER BY ev.attempt, ev.id DESC
)
SELECT o.attempt,
       CASE o.type WHEN 'execution.succeeded' THEN 'SUCCEEDED' WHEN 'execution.failed' THEN 'FAILED'
                   WHEN 'execution.abandoned' THEN 'ABANDONED' ELSE 'CANCELLED' END AS state,
       o.started_at, o.occurred_at AS ended_at, o.node,
       -- The event's error_type is the execution's: only a failure or an abandonment set it.
       CASE WHEN o.type IN ('execution.failed', 'execution.abandoned') THEN o.error_type END AS error_type,
       o.error, o.http_status
FROM outcome o
UNION ALL
SELECT e.attempt, 'PROCESSING', e.started_at, NULL, e.claimed_by, NULL, NULL, NULL
FROM job_executions e
WHERE e.id = :id AND e.state = 'PROCESSING' AND e.started_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM outcome o WHERE o.attempt = e.attempt)
ORDER BY attempt

-- name: notify
-- Wake the dispatchers (delivered on commit; channel names carry the schema).
SELECT pg_notify(:channel, :queue)

-- name: notify_if_limited
-- Wake the dispatchers if one of these handlers has max_concurrency (a slot was freed).
SELECT pg_notify(:channel, '') FROM job_handlers
WHERE name = ANY(CAST(:handlers AS text[])) AND max_concurrency IS NOT NULL
LIMIT 1
