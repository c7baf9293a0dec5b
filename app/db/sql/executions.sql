-- Named statements for job_executions, parsed once by app/db/queries.py.
-- $COLUMNS expands to the execution's named columns (never RETURNING *: asyncpg's statement
-- cache breaks on running nodes when a migration adds a column). $EVENT(alias, state, attempt)
-- expands to the curated transition event of DESIGN §4, written in the same statement.

-- name: executions_insert
-- Insert a batch of DELAYED jobs through jobwire_enqueue(jobs jsonb) (revision 20261130_0002), the
-- one insert path the API shares with applications: validation, defaults, idempotency keys, the
-- ENQUEUED events and the NOTIFY all happen there. One row per item in input order (ord); created
-- is false where an idempotency key returned an execution stored before.
SELECT ord, created, $COLUMNS FROM jobwire_enqueue(CAST(:jobs AS jsonb)) ORDER BY ord

-- name: executions_get_by_idempotency_keys
-- Rows already holding these keys, with the fingerprint of the request that created them.
SELECT $COLUMNS, idempotency_key, request_hash FROM job_executions WHERE idempotency_key = ANY(:keys)

-- name: execution_get
SELECT $COLUMNS FROM job_executions WHERE id = :id

-- fragment: claim_tail
-- The end of both claims: mark the claimed rows PROCESSING with their deadline, record the
-- events, and return what a dispatch needs (the handler's URL and secret, the seconds left).
u AS (
    UPDATE job_executions e
    SET state = 'PROCESSING', started_at = now(), updated_at = now(), locked_by = :node,
        deadline_at = now() + make_interval(secs => LEAST(
            COALESCE(e.timeout_seconds,
                     (SELECT h.timeout_seconds FROM job_handlers h WHERE h.name = e.handler),
                     :default_timeout),
            COALESCE(e.max_duration_seconds, CAST('Infinity' AS float8))))
    FROM c
    WHERE e.id = c.id AND e.state = 'ENQUEUED'
    RETURNING $E_COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
-- UPDATE … FROM returns rows in join order, not the CTE's: sort the batch here.
SELECT $U_COLUMNS, h.url AS handler_url, h.secret AS handler_secret,
       EXTRACT(EPOCH FROM u.deadline_at - now()) AS seconds_left
FROM u LEFT JOIN job_handlers h ON h.name = u.handler
ORDER BY u.priority DESC, u.scheduled_at

-- fragment: claim_locks_rest
-- Handlers with max_concurrency: try each one's lock (locked → its free slots are counted by the
-- claim; not locked → another claimer is counting them now, so skip its jobs this time). And the
-- paused queues, which no claim takes from.
UNION ALL
SELECT 'handler', h.name, pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('handler:' || h.name))
FROM job_handlers h
WHERE h.max_concurrency IS NOT NULL
UNION ALL
SELECT 'paused', name, true FROM job_queues WHERE paused

-- name: claim_locks_all_queues
-- The first statement of a claim transaction: transaction-scoped advisory locks (keyed by schema,
-- so two Jobwire schemas in one database never block each other) on the queues
-- that have a due stateful job and none PROCESSING. Only their holder may claim a stateful job
-- there until it commits, and the claim statement that follows takes a new snapshot, so it sees
-- every earlier holder's claim: the check-then-claim cannot race. (Taken inside the claim's own
-- WHERE, a lock would come after the snapshot was taken, and race.)
SELECT 'queue' AS kind, q.queue AS name, true AS locked
FROM (SELECT DISTINCT queue FROM job_executions
      WHERE state = 'ENQUEUED' AND stateful AND scheduled_at <= now()) AS q
WHERE NOT EXISTS (SELECT 1 FROM job_executions p
                  WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
  AND NOT EXISTS (SELECT 1 FROM job_queues jq WHERE jq.name = q.queue AND jq.paused)
  AND pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('queue:' || q.queue))
$claim_locks_rest

-- name: claim_locks_queues
-- As claim_locks_all_queues, for the node's queues only.
SELECT 'queue' AS kind, q.queue AS name, true AS locked
FROM (SELECT DISTINCT queue FROM job_executions
      WHERE state = 'ENQUEUED' AND stateful AND scheduled_at <= now()
        AND queue = ANY(CAST(:queues AS text[]))) AS q
WHERE NOT EXISTS (SELECT 1 FROM job_executions p
                  WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
  AND NOT EXISTS (SELECT 1 FROM job_queues jq WHERE jq.name = q.queue AND jq.paused)
  AND pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('queue:' || q.queue))
$claim_locks_rest

-- fragment: claim_free
-- Per handler with max_concurrency whose lock this transaction holds: its free slots, counted in
-- this statement's snapshot (taken after the lock was granted).
free AS (
    SELECT h.name, GREATEST(h.max_concurrency - (SELECT count(*) FROM job_executions p
                                                 WHERE p.state = 'PROCESSING' AND p.handler = h.name), 0) AS slots
    FROM job_handlers h
    WHERE h.name = ANY(CAST(:limited AS text[]))
)

-- fragment: claim_stateful
-- The next stateful job of each queue whose lock this transaction holds, if that queue has none
-- PROCESSING (checked in this statement's snapshot, taken after the lock was granted). When the
-- next one's handler is blocked, the queue waits (its order is kept) rather than skipping ahead.
chosen AS (
    SELECT s.id, s.priority, s.scheduled_at, s.handler
    FROM unnest(CAST(:stateful_queues AS text[])) AS q(queue)
    CROSS JOIN LATERAL (
        SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
        WHERE e.state = 'ENQUEUED' AND e.stateful AND e.queue = q.queue AND e.scheduled_at <= now()
          AND NOT EXISTS (SELECT 1 FROM job_executions p
                          WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
        ORDER BY e.priority DESC, e.scheduled_at
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    ) AS s
    WHERE s.handler <> ALL(CAST(:blocked AS text[]))
),
-- Per handler with max_concurrency, keep no more than its free slots (a stateful job of a limited
-- handler comes through chosen, beside that handler's capped jobs); then the best :n of everything.
c AS (
    SELECT r.id
    FROM (SELECT x.id, x.priority, x.scheduled_at, x.handler,
                 row_number() OVER (PARTITION BY x.handler ORDER BY x.priority DESC, x.scheduled_at) AS rank
          FROM (SELECT * FROM plain UNION ALL SELECT * FROM capped UNION ALL SELECT * FROM chosen) AS x) AS r
    LEFT JOIN free f ON f.name = r.handler
    WHERE f.name IS NULL OR r.rank <= f.slots
    ORDER BY r.priority DESC, r.scheduled_at
    LIMIT :n
), $claim_tail

-- name: executions_claim_all_queues
-- Claim up to :n due jobs of any queue, best first; SKIP LOCKED lets claimers pass each other.
-- The CTE is the optimisation fence: LIMIT applies before the UPDATE, and the planner uses the
-- partial index ix_job_executions_claim_all. Stateful jobs come only through claim_stateful.
-- A limited handler's jobs come apart (capped), at most its free slots: were they in plain, its
-- backlog could fill the batch and be dropped, starving every other handler.
WITH $claim_free, plain AS (
    SELECT id, priority, scheduled_at, handler FROM job_executions
    WHERE state = 'ENQUEUED' AND scheduled_at <= now() AND NOT stateful
      AND handler <> ALL(CAST(:blocked AS text[])) AND handler <> ALL(CAST(:limited AS text[]))
      AND queue <> ALL(CAST(:paused AS text[]))
    ORDER BY priority DESC, scheduled_at
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), capped AS (
    SELECT s.id, s.priority, s.scheduled_at, s.handler
    FROM free f
    CROSS JOIN LATERAL (
        SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
        WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful AND e.handler = f.name
          AND e.queue <> ALL(CAST(:paused AS text[]))
        ORDER BY e.priority DESC, e.scheduled_at
        LIMIT LEAST(f.slots, :n)
        FOR UPDATE SKIP LOCKED
    ) AS s
), $claim_stateful

-- name: executions_claim_queues
-- As executions_claim_all_queues, limited to the node's queues (index ix_job_executions_claim).
WITH $claim_free, plain AS (
    SELECT id, priority, scheduled_at, handler FROM job_executions
    WHERE state = 'ENQUEUED' AND scheduled_at <= now() AND queue = ANY(CAST(:queues AS text[]))
      AND NOT stateful
      AND handler <> ALL(CAST(:blocked AS text[])) AND handler <> ALL(CAST(:limited AS text[]))
      AND queue <> ALL(CAST(:paused AS text[]))
    ORDER BY priority DESC, scheduled_at
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), capped AS (
    SELECT s.id, s.priority, s.scheduled_at, s.handler
    FROM free f
    CROSS JOIN LATERAL (
        SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
        WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful AND e.handler = f.name
          AND e.queue = ANY(CAST(:queues AS text[])) AND e.queue <> ALL(CAST(:paused AS text[]))
        ORDER BY e.priority DESC, e.scheduled_at
        LIMIT LEAST(f.slots, :n)
        FOR UPDATE SKIP LOCKED
    ) AS s
), $claim_stateful

-- name: executions_succeed
-- Record successes in one statement. Guarded per row: the attempt must be current, and a
-- success wins over PROCESSING, ABANDONED, and a DEAD_LETTER reached by abandoning.
-- The batch comes as parallel arrays (results as JSON text): unnest() of a parameter is
-- estimated at 10 rows, so even the generic plan of this prepared statement looks rows up by
-- primary key. (jsonb_to_recordset is estimated at 100 rows: on a table of a few thousand rows
-- the generic plan scanned the whole table for every single completion.)
WITH input AS (
    SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:attempts AS int[]), CAST(:results AS text[]))
        AS i(id, attempt, result)
), u AS (
    UPDATE job_executions e
    SET state = 'SUCCEEDED', result = CAST(input.result AS jsonb), completed_at = now(), updated_at = now(),
        locked_by = NULL
    FROM input
    WHERE e.id = input.id AND e.attempt = input.attempt
      AND (e.state = ANY(CAST(:from_states AS text[]))
           AND (e.state <> 'DEAD_LETTER' OR e.error_type LIKE 'abandoned\_%'))
    RETURNING $E_COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event)
    SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
), health AS (
    -- A CRON fire that succeeds resets its schedule's failure count (db-scheduler's health).
    UPDATE job_schedules s SET last_success_at = now(), consecutive_failures = 0
    FROM (SELECT DISTINCT job_id FROM u WHERE job_type = 'CRON') AS c
    WHERE s.job_id = c.job_id
)
SELECT $COLUMNS FROM u

-- name: executions_release_to_handler
-- A 202: the handler now holds the execution, so this node lets go (locked_by cleared).
-- Guarded on state, attempt and locked_by: the handler's callback may reach another node first.
-- Parallel arrays, as executions_succeed (an index plan even when generic).
WITH input AS (
    SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:attempts AS int[])) AS i(id, attempt)
)
UPDATE job_executions e
SET locked_by = NULL, updated_at = now()
FROM input
WHERE e.id = input.id AND e.attempt = input.attempt AND e.state = 'PROCESSING'
  AND e.locked_by = :node
RETURNING e.id

-- fragment: end_attempt
-- Ends the attempts selected by a CTE t(id, attempt, started_at, again) with cause :cause
-- (FAILED or ABANDONED), in ONE statement with their retry: `again` → re-enqueued as attempt + 1
-- after :delay seconds; else DEAD_LETTER (an abandoned CRON attempt stays ABANDONED: its schedule
-- fires again). Guarded per row on state and attempt. Events: the cause (with the ended
-- attempt's start, and now as its end), then the new state. A CRON row that ends DEAD_LETTER or
-- ABANDONED here counts against its schedule's health (consecutive_failures, last_failure_at).
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
    FROM t
    WHERE e.id = t.id AND e.attempt = t.attempt AND e.state = ANY(CAST(:from_states AS text[]))
    RETURNING $E_COLUMNS, t.attempt AS ended_attempt, t.started_at AS ended_started_at
), ev AS (
    INSERT INTO job_events (execution_id, event)
    SELECT u.id, $EVENT(u, x.state, x.attempt) || CASE WHEN x.ord = 1
               THEN jsonb_build_object('started_at', u.ended_started_at, 'completed_at', now())
               ELSE '{}' END
    FROM u, LATERAL (VALUES (1, CAST(:cause AS text), u.ended_attempt),
                            (2, u.state, u.attempt)) AS x(ord, state, attempt)
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
SELECT $COLUMNS FROM u

-- name: execution_fail
-- One failed or abandoned attempt (a dispatch outcome or a handler's failure callback).
WITH t AS (
    SELECT id, attempt, started_at,
           :retryable AND attempt + 1 < max_attempts
               AND NOT (:cause = 'ABANDONED' AND job_type = 'CRON') AS again
    FROM job_executions
    WHERE id = :id AND attempt = :attempt
), $end_attempt

-- name: executions_abandon_held_by
-- Dead-node recovery: abandon what the given nodes held (their HTTP calls died with them), a
-- batch at a time, except the :keep ids. SKIP LOCKED lets racing scanners share the work; the
-- guard in end_attempt makes sure no attempt is ended twice.
WITH t AS (
    SELECT id, attempt, started_at, attempt + 1 < max_attempts AND job_type <> 'CRON' AS again
    FROM job_executions
    WHERE state = 'PROCESSING' AND locked_by = ANY(CAST(:nodes AS text[]))
      AND id <> ALL(CAST(:keep AS uuid[]))
    ORDER BY id
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), $end_attempt

-- name: executions_abandon_past_deadline
-- Deadline enforcement: abandon attempts whose deadline (database time) has passed, whoever
-- holds them (a node's hanging call, or a handler that accepted with 202 and went quiet).
WITH t AS (
    SELECT id, attempt, started_at, attempt + 1 < max_attempts AND job_type <> 'CRON' AS again
    FROM job_executions
    WHERE state = 'PROCESSING' AND deadline_at < now()
    ORDER BY deadline_at
    LIMIT :n
    FOR UPDATE SKIP LOCKED
), $end_attempt

-- name: execution_extend_deadline
-- A handler's progress or heartbeat for the current attempt: the deadline moves to now() + its
-- timeout, never past started_at + max_duration_seconds; a progress snapshot is merged in
-- (omitted fields keep their values). Zero rows: not PROCESSING any more (or another attempt).
UPDATE job_executions e
SET deadline_at = LEAST(
        now() + make_interval(secs => COALESCE(
            e.timeout_seconds,
            (SELECT h.timeout_seconds FROM job_handlers h WHERE h.name = e.handler),
            :default_timeout)),
        COALESCE(e.started_at + make_interval(secs => e.max_duration_seconds),
                 CAST('infinity' AS timestamptz))),
    progress = e.progress || COALESCE(CAST(:progress AS jsonb), CAST('{}' AS jsonb)),
    updated_at = now()
WHERE e.id = :id AND e.attempt = :attempt AND e.state = 'PROCESSING'
RETURNING e.id

-- name: execution_cancel
-- A user's cancel: ENQUEUED or PROCESSING → CANCELLED.
WITH u AS (
    UPDATE job_executions
    SET state = 'CANCELLED', completed_at = now(), locked_by = NULL, updated_at = now()
    WHERE id = :id AND state = ANY(CAST(:from_states AS text[]))
    RETURNING $COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT $COLUMNS FROM u

-- name: execution_retry_manually
-- A user's retry of DEAD_LETTER or CANCELLED: a new attempt, due now, max_attempts raised if spent.
WITH u AS (
    UPDATE job_executions
    SET state = 'ENQUEUED', attempt = attempt + 1, max_attempts = GREATEST(max_attempts, attempt + 2),
        scheduled_at = now(), started_at = NULL, completed_at = NULL, deadline_at = NULL,
        locked_by = NULL, updated_at = now()
    WHERE id = :id AND state = ANY(CAST(:from_states AS text[]))
    RETURNING $COLUMNS
), ev AS (
    INSERT INTO job_events (execution_id, event) SELECT u.id, $EVENT(u, u.state, u.attempt) FROM u
)
SELECT $COLUMNS FROM u

-- name: events_for_execution
SELECT id, event, occurred_at FROM job_events WHERE execution_id = :id ORDER BY id

-- name: notify
-- Wake the dispatchers (delivered on commit; channel names carry the schema).
SELECT pg_notify(:channel, :queue)

-- name: notify_if_limited
-- Wake the dispatchers if one of these handlers has max_concurrency (a slot was freed).
SELECT pg_notify(:channel, '') FROM job_handlers
WHERE name = ANY(CAST(:handlers AS text[])) AND max_concurrency IS NOT NULL
LIMIT 1
