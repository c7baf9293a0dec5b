-- The dispatcher's whole claim in one round trip: up to `n` due jobs, best first (priority DESC,
-- scheduled_at), SKIP LOCKED, marked PROCESSING with their deadline (no event row: DESIGN §8, the
-- attempt's start and node travel in its outcome's row, and the live row shows the attempt in
-- flight); their handler's URL, its active signing secrets (newest first; handler_secret, the newest, for a
-- caller that signs with one) and the seconds left before the deadline come with them. locked_by
-- and claimed_by name the claiming node: locked_by while its call is in flight (a 202 clears
-- it), claimed_by until the next claim (the attempt history names the node of each attempt).
--
-- Three steps, as separate statements inside one call (in READ COMMITTED each statement of a
-- VOLATILE function takes a new snapshot, so step 2 sees every earlier lock holder's committed
-- claim; called on its own, in an implicit transaction, the locks end with the call):
-- 1. transaction-scoped advisory locks on the queues that have a due stateful job and none
--    PROCESSING, and on every flow-controlled handler: one with max_concurrency, key_concurrency,
--    a rate limit, or jobs with concurrency keys (a job_handler_flow row). Locked → its free slots
--    are counted (max_concurrency less its calls in flight, and its rate limit's allowance) and
--    its jobs chosen by jobwire_claim_pick (keys in turn, per-key limits); not locked → another
--    claimer is choosing them now, so its jobs are skipped this time. And the paused queues;
-- 2. which jobs: plain jobs, a controlled handler's picks, and the next stateful job of each
--    locked queue, their ids locked FOR UPDATE SKIP LOCKED until commit (so no other claim or
--    transition touches them before step 3); no more of a controlled handler's than its free
--    slots. Claiming from every queue, the plain jobs are found handler by handler, so a
--    controlled handler's backlog (10,000 jobs of keys at their limit) is never walked; from
--    named queues (JOBWIRE_QUEUES, or every queue but the paused ones), queue by queue, so a
--    paused backlog is never walked. When no rule applies (no stateful queue with due work, no controlled handler, no
--    paused queue: the common case) a shorter statement chooses the plain jobs; it plans in a
--    third of the time. Each statement comes in two forms, every queue (queues NULL) or the
--    node's queues, so each uses its own partial index;
-- 3. the claim of those ids, one statement whatever chose them: the guarded write,
--    the flow state (each handler's highest turn claimed and its rate limit's next slot, each
--    key's, in job_handler_flow and job_keys: written only for handlers that use them), the
--    secrets and the result, sorted (UPDATE returns rows in the order it met them); a job in a
--    workflow comes with its `workflow` (its ref and its parents), one that suspended with its
--    `continuation` (jobwire_resume_context: steps, resume), NULL for the others. A stateful
--    queue whose job is suspended (WAITING) is held as while it is PROCESSING.
CREATE OR REPLACE FUNCTION jobwire_claim(node text, n int, default_timeout float8, queues text[] DEFAULT NULL)
RETURNS TABLE (id uuid, job_id text, job_type text, handler text, queue text, attempt int, max_attempts int,
               payload jsonb, parameters jsonb, metadata jsonb, scheduled_at timestamptz,
               started_at timestamptz, deadline_at timestamptz, seconds_left float8,
               handler_url text, handler_secret text, handler_secrets text[], concurrency_key text,
               flow_watch boolean, workflow json, continuation jsonb, handler_batch jsonb)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $function$
#variable_conflict use_column
DECLARE
    v_stateful text[];
    v_limited text[];
    v_blocked text[];
    v_paused text[];
    v_ids uuid[];
    v_slots int[];
    v_keyless int[];
    v_picked uuid[] := '{}';
BEGIN
    -- Step 1, its own statements (each takes a new snapshot, all before step 2's).
    SELECT COALESCE(array_agg(q.queue), '{}') INTO v_stateful
    FROM (SELECT DISTINCT e.queue FROM job_executions e
          WHERE e.state = 'ENQUEUED' AND e.stateful AND e.scheduled_at <= now()
            AND (queues IS NULL OR e.queue = ANY(queues))) AS q
    WHERE NOT EXISTS (SELECT 1 FROM job_executions p
                      WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
      -- A suspended stateful job keeps its queue: one at a time means one unfinished job.
      AND NOT EXISTS (SELECT 1 FROM job_executions p
                      WHERE p.stateful AND p.state = 'WAITING' AND p.suspensions IS NOT NULL AND p.queue = q.queue)
      AND NOT EXISTS (SELECT 1 FROM job_queues jq WHERE jq.name = q.queue AND jq.paused)
      AND pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('queue:' || q.queue));

    SELECT COALESCE(array_agg(l.name) FILTER (WHERE l.locked), '{}'),
           COALESCE(array_agg(l.name) FILTER (WHERE NOT l.locked), '{}')
      INTO v_limited, v_blocked
    FROM (SELECT h.name,
                 pg_try_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('handler:' || h.name))
                     AS locked
          FROM job_handlers h
          WHERE h.max_concurrency IS NOT NULL OR h.key_concurrency IS NOT NULL OR h.rate_limit IS NOT NULL
             OR h.key_rate_limit IS NOT NULL OR h.adaptive
             OR EXISTS (SELECT 1 FROM job_handler_flow f
                        WHERE f.handler = h.name
                          AND (f.keyed OR f.circuit_state <> 'closed' OR f.retry_after > now()))) AS l;

    SELECT COALESCE(array_agg(jq.name), '{}') INTO v_paused FROM job_queues jq WHERE jq.paused;

    -- With queues paused, claim from the others by name: the queues that have ENQUEUED rows,
    -- found by a loose index scan (one probe per queue), so a paused backlog is never walked
    -- row by row, and a claim with only paused work left returns at once.
    IF queues IS NULL AND cardinality(v_paused) > 0 THEN
        queues := ARRAY(
            WITH RECURSIVE q AS (
                (SELECT e.queue FROM job_executions e WHERE e.state = 'ENQUEUED' ORDER BY e.queue LIMIT 1)
                UNION ALL
                SELECT (SELECT e.queue FROM job_executions e
                        WHERE e.state = 'ENQUEUED' AND e.queue > q.queue ORDER BY e.queue LIMIT 1)
                FROM q WHERE q.queue IS NOT NULL
            )
            SELECT q.queue FROM q WHERE q.queue IS NOT NULL AND q.queue <> ALL(v_paused));
        IF cardinality(queues) = 0 AND cardinality(v_stateful) = 0 THEN
            RETURN;
        END IF;
    END IF;

    -- Each locked controlled handler's free slots (its max_concurrency less its calls in flight, its
    -- rate limit's allowance, none while a Retry-After holds it, at most n), counted in this
    -- statement's snapshot, and its picks.
    IF cardinality(v_limited) > 0 THEN
        v_limited := ARRAY(
            SELECT h.name FROM job_handlers h WHERE h.name = ANY(v_limited) ORDER BY h.name);
        SELECT array_agg(GREATEST(LEAST(
                   n,
                   COALESCE(h.max_concurrency - c.in_flight, n),
                   jobwire_rate_allowance(h.rate_limit, f.rate_next),
                   CASE WHEN f.retry_after > now() THEN 0 END,  -- LEAST skips a NULL
                   -- An open circuit: no call until circuit_until, then one probe (half_open until
                   -- the probe's deadline, then another if its outcome never came).
                   CASE WHEN f.circuit_state <> 'closed' THEN CASE WHEN f.circuit_until > now() THEN 0 ELSE 1 END END),
                   0) ORDER BY h.name),
               -- An adaptive handler's jobs without a key: at most its effective limit in flight.
               array_agg(CASE WHEN h.adaptive THEN GREATEST(
                   COALESCE(f.adaptive_limit, LEAST(h.max_concurrency, 4)) - c.keyless_in_flight, 0) END
                   ORDER BY h.name)
          INTO v_slots, v_keyless
        FROM job_handlers h
        LEFT JOIN job_handler_flow f ON f.handler = h.name
        CROSS JOIN LATERAL (
            SELECT count(*) AS in_flight, count(*) FILTER (WHERE p.concurrency_key IS NULL) AS keyless_in_flight
            FROM job_executions p WHERE p.state = 'PROCESSING' AND p.handler = h.name) AS c
        WHERE h.name = ANY(v_limited);
        FOR i IN 1 .. cardinality(v_limited) LOOP
            IF v_slots[i] > 0 THEN
                v_picked := v_picked || jobwire_claim_pick(v_limited[i], v_slots[i], COALESCE(v_keyless[i], v_slots[i]),
                                                           queues, v_paused);
            END IF;
        END LOOP;
    END IF;

    -- Step 2: which jobs.
    IF cardinality(v_stateful) = 0 AND cardinality(v_paused) = 0 AND cardinality(v_limited) > 0
       AND NOT EXISTS (SELECT 1 FROM job_handlers h WHERE h.name <> ALL(v_limited) AND h.name <> ALL(v_blocked)) THEN
        -- Every handler is controlled (and none has due stateful work): the picks are the claim.
        v_ids := v_picked;
    ELSIF cardinality(v_stateful) = 0 AND cardinality(v_limited) = 0 AND cardinality(v_blocked) = 0
       AND cardinality(v_paused) = 0 THEN
        -- No rule applies: the plain jobs.
        IF queues IS NULL THEN
            v_ids := ARRAY(
                SELECT e.id FROM job_executions e
                WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful
                ORDER BY e.priority DESC, e.scheduled_at
                LIMIT n
                FOR UPDATE SKIP LOCKED);
        ELSE
            v_ids := ARRAY(
                SELECT e.id FROM job_executions e
                WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful AND e.queue = ANY(queues)
                ORDER BY e.priority DESC, e.scheduled_at
                LIMIT n
                FOR UPDATE SKIP LOCKED);
        END IF;
    ELSIF queues IS NULL THEN
        v_ids := ARRAY(
            WITH free AS (
                -- Per locked controlled handler: its free slots, counted above.
                SELECT f.name, f.slots FROM unnest(v_limited, v_slots) AS f(name, slots)
            ), plain_top AS (
                -- The best n due jobs of the handlers no rule holds, found handler by handler (an
                -- index probe each: a controlled handler's backlog is never walked here) ...
                SELECT s.id, s.priority, s.scheduled_at
                FROM job_handlers h
                CROSS JOIN LATERAL (
                    SELECT e.id, e.priority, e.scheduled_at FROM job_executions e
                    WHERE e.state = 'ENQUEUED' AND e.handler = h.name AND e.scheduled_at <= now() AND NOT e.stateful
                      AND e.queue <> ALL(v_paused)
                    ORDER BY e.priority DESC, e.fair_tag NULLS FIRST, e.scheduled_at
                    LIMIT n
                ) AS s
                WHERE h.name <> ALL(v_blocked) AND h.name <> ALL(v_limited)
                ORDER BY s.priority DESC, s.scheduled_at
                LIMIT n
            ), plain AS (
                -- ... then locked (one another claim holds is skipped; one claimed meanwhile is no
                -- longer ENQUEUED when re-checked under the lock).
                SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
                WHERE e.id IN (SELECT plain_top.id FROM plain_top) AND e.state = 'ENQUEUED'
                FOR UPDATE SKIP LOCKED
            ), capped AS (
                -- A controlled handler's picks (jobwire_claim_pick: at most its free slots, keys in
                -- turn, each key within its limits), locked FOR UPDATE SKIP LOCKED there. Each pick
                -- takes the k-th earliest scheduled_at of its handler's picks of its priority, k its
                -- place in turn: against other handlers they stand as the same ages, and a cut below
                -- drops the last turns, not a new key's job for being recent.
                SELECT x.id, x.priority, t.scheduled_at, x.handler
                FROM (SELECT e.id, e.priority, e.handler,
                             row_number() OVER (PARTITION BY e.handler, e.priority ORDER BY p.pos) AS k
                      FROM unnest(v_picked) WITH ORDINALITY AS p(id, pos) JOIN job_executions e ON e.id = p.id) AS x
                JOIN (SELECT e.handler, e.priority, e.scheduled_at,
                             row_number() OVER (PARTITION BY e.handler, e.priority ORDER BY e.scheduled_at) AS k
                      FROM job_executions e WHERE e.id = ANY(v_picked)) AS t
                  ON t.handler = x.handler AND t.priority = x.priority AND t.k = x.k
            ), chosen AS (
                -- The next stateful job of each locked queue with none PROCESSING (in this snapshot).
                -- When its handler is blocked, the queue waits (its order is kept).
                SELECT s.id, s.priority, s.scheduled_at, s.handler
                FROM unnest(v_stateful) AS q(queue)
                -- A job that suspended and was resumed goes on first: it holds the queue.
                CROSS JOIN LATERAL (
                    SELECT (SELECT r.id FROM job_executions r
                            WHERE r.stateful AND r.state = 'ENQUEUED' AND r.suspensions IS NOT NULL
                              AND r.queue = q.queue AND r.scheduled_at <= now()
                            ORDER BY r.scheduled_at, r.id LIMIT 1) AS id
                ) AS resumed
                CROSS JOIN LATERAL (
                    SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
                    WHERE e.state = 'ENQUEUED' AND e.stateful AND e.queue = q.queue AND e.scheduled_at <= now()
                      AND (resumed.id IS NULL OR e.id = resumed.id)
                      AND NOT EXISTS (SELECT 1 FROM job_executions p
                                      WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
                    ORDER BY e.priority DESC, e.scheduled_at
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED
                ) AS s
                WHERE s.handler <> ALL(v_blocked)
            )
            -- Per limited handler no more than its free slots; then the best n of everything.
            SELECT r.id
            FROM (SELECT x.id, x.priority, x.scheduled_at, x.handler,
                         row_number() OVER (PARTITION BY x.handler ORDER BY x.priority DESC, x.scheduled_at) AS rank
                  FROM (SELECT * FROM plain UNION ALL SELECT * FROM capped UNION ALL SELECT * FROM chosen) AS x) AS r
            LEFT JOIN free f ON f.name = r.handler
            WHERE f.name IS NULL OR r.rank <= f.slots
            ORDER BY r.priority DESC, r.scheduled_at
            LIMIT n);
    ELSE
        v_ids := ARRAY(
            WITH free AS (
                -- Per locked controlled handler: its free slots, counted above.
                SELECT f.name, f.slots FROM unnest(v_limited, v_slots) AS f(name, slots)
            ), plain AS (
                -- The node's queues (or, with queues paused, those with work), walked in the claim
                -- index of each: a paused backlog is never walked; a controlled handler's jobs in
                -- these queues are passed over one by one.
                SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
                WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful AND e.queue = ANY(queues)
                  AND e.handler <> ALL(v_blocked) AND e.handler <> ALL(v_limited) AND e.queue <> ALL(v_paused)
                ORDER BY e.priority DESC, e.scheduled_at
                LIMIT n
                FOR UPDATE SKIP LOCKED
            ), capped AS (
                -- A controlled handler's picks (jobwire_claim_pick: at most its free slots, keys in
                -- turn, each key within its limits), locked FOR UPDATE SKIP LOCKED there. Each pick
                -- takes the k-th earliest scheduled_at of its handler's picks of its priority, k its
                -- place in turn: against other handlers they stand as the same ages, and a cut below
                -- drops the last turns, not a new key's job for being recent.
                SELECT x.id, x.priority, t.scheduled_at, x.handler
                FROM (SELECT e.id, e.priority, e.handler,
                             row_number() OVER (PARTITION BY e.handler, e.priority ORDER BY p.pos) AS k
                      FROM unnest(v_picked) WITH ORDINALITY AS p(id, pos) JOIN job_executions e ON e.id = p.id) AS x
                JOIN (SELECT e.handler, e.priority, e.scheduled_at,
                             row_number() OVER (PARTITION BY e.handler, e.priority ORDER BY e.scheduled_at) AS k
                      FROM job_executions e WHERE e.id = ANY(v_picked)) AS t
                  ON t.handler = x.handler AND t.priority = x.priority AND t.k = x.k
            ), chosen AS (
                -- The next stateful job of each locked queue with none PROCESSING (in this snapshot).
                -- When its handler is blocked, the queue waits (its order is kept).
                SELECT s.id, s.priority, s.scheduled_at, s.handler
                FROM unnest(v_stateful) AS q(queue)
                -- A job that suspended and was resumed goes on first: it holds the queue.
                CROSS JOIN LATERAL (
                    SELECT (SELECT r.id FROM job_executions r
                            WHERE r.stateful AND r.state = 'ENQUEUED' AND r.suspensions IS NOT NULL
                              AND r.queue = q.queue AND r.scheduled_at <= now()
                            ORDER BY r.scheduled_at, r.id LIMIT 1) AS id
                ) AS resumed
                CROSS JOIN LATERAL (
                    SELECT e.id, e.priority, e.scheduled_at, e.handler FROM job_executions e
                    WHERE e.state = 'ENQUEUED' AND e.stateful AND e.queue = q.queue AND e.scheduled_at <= now()
                      AND (resumed.id IS NULL OR e.id = resumed.id)
                      AND NOT EXISTS (SELECT 1 FROM job_executions p
                                      WHERE p.state = 'PROCESSING' AND p.stateful AND p.queue = q.queue)
                    ORDER BY e.priority DESC, e.scheduled_at
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED
                ) AS s
                WHERE s.handler <> ALL(v_blocked)
            )
            -- Per limited handler no more than its free slots; then the best n of everything.
            SELECT r.id
            FROM (SELECT x.id, x.priority, x.scheduled_at, x.handler,
                         row_number() OVER (PARTITION BY x.handler ORDER BY x.priority DESC, x.scheduled_at) AS rank
                  FROM (SELECT * FROM plain UNION ALL SELECT * FROM capped UNION ALL SELECT * FROM chosen) AS x) AS r
            LEFT JOIN free f ON f.name = r.handler
            WHERE f.name IS NULL OR r.rank <= f.slots
            ORDER BY r.priority DESC, r.scheduled_at
            LIMIT n);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    -- Step 3: the claim of those ids.
    RETURN QUERY
    WITH u AS (
        UPDATE job_executions e
        SET state = 'PROCESSING', started_at = now(), updated_at = now(), locked_by = node, claimed_by = node,
            deadline_at = now() + make_interval(secs => LEAST(
                COALESCE(e.timeout_seconds,
                         (SELECT h.timeout_seconds FROM job_handlers h WHERE h.name = e.handler),
                         default_timeout),
                COALESCE(e.max_duration_seconds, CAST('Infinity' AS float8))))
        WHERE e.id = ANY(v_ids) AND e.state = 'ENQUEUED'
        RETURNING e.id, e.job_id, e.job_type, e.handler, e.queue, e.state, e.attempt, e.max_attempts,
                  e.priority, e.payload, e.parameters, e.metadata, e.error_type, e.scheduled_at,
                  e.created_at, e.started_at, e.completed_at, e.deadline_at, e.concurrency_key, e.fair_tag,
                  e.workflow_id, e.workflow_ref, e.suspensions
    ), per_handler AS (
        -- Flow state, for the handlers that use it only: the highest turn claimed and the calls
        -- started against the handler's rate limit.
        SELECT u.handler, max(u.fair_tag) AS turn, CAST(count(*) AS int) AS calls, h.rate_limit,
               max(u.deadline_at) AS deadline
        FROM u JOIN job_handlers h ON h.name = u.handler
        LEFT JOIN job_handler_flow x ON x.handler = u.handler
        WHERE h.rate_limit IS NOT NULL OR u.fair_tag IS NOT NULL OR x.circuit_state <> 'closed'
        GROUP BY u.handler, h.rate_limit
    ), flow AS (
        INSERT INTO job_handler_flow AS f (handler, fair_round, circuit_until, rate_next, rate_count,
                                           rate_window_start)
        SELECT p.handler, COALESCE(p.turn, 0), p.deadline,
               CASE WHEN p.rate_limit IS NOT NULL THEN jobwire_rate_next(p.rate_limit, NULL, p.calls) END,
               CASE WHEN p.rate_limit IS NOT NULL THEN p.calls ELSE 0 END,
               CASE WHEN p.rate_limit IS NOT NULL THEN now() END
        FROM per_handler p
        ORDER BY p.handler
        ON CONFLICT (handler) DO UPDATE
        -- EXCLUDED.rate_count: the calls started now (with a rate limit).
        SET fair_round = GREATEST(f.fair_round, EXCLUDED.fair_round),
            rate_next = CASE WHEN EXCLUDED.rate_window_start IS NULL THEN f.rate_next
                             ELSE jobwire_rate_next((SELECT h.rate_limit FROM job_handlers h WHERE h.name = f.handler),
                                                    f.rate_next, EXCLUDED.rate_count) END,
            rate_count = CASE WHEN EXCLUDED.rate_window_start IS NULL THEN f.rate_count
                              WHEN f.rate_window_start > now() - make_interval(secs => CAST(
                                       (SELECT h.rate_limit->>'period_seconds' FROM job_handlers h
                                        WHERE h.name = f.handler) AS float8))
                              THEN f.rate_count + EXCLUDED.rate_count ELSE EXCLUDED.rate_count END,
            rate_window_start = CASE WHEN EXCLUDED.rate_window_start IS NULL THEN f.rate_window_start
                                     WHEN f.rate_window_start > now() - make_interval(secs => CAST(
                                              (SELECT h.rate_limit->>'period_seconds' FROM job_handlers h
                                               WHERE h.name = f.handler) AS float8))
                                     THEN f.rate_window_start ELSE now() END,
            -- A call while the circuit is open is its probe: half_open until the probe's deadline.
            circuit_state = CASE WHEN f.circuit_state = 'closed' THEN 'closed' ELSE 'half_open' END,
            circuit_until = CASE WHEN f.circuit_state = 'closed' THEN f.circuit_until ELSE EXCLUDED.circuit_until END,
            updated_at = now()
    ), per_key AS (
        -- Per key of a handler with key_rate_limit: the calls started against it.
        SELECT u.handler, u.concurrency_key AS key, CAST(count(*) AS int) AS calls, h.key_rate_limit
        FROM u JOIN job_handlers h ON h.name = u.handler
        WHERE h.key_rate_limit IS NOT NULL AND u.concurrency_key IS NOT NULL
        GROUP BY u.handler, u.concurrency_key, h.key_rate_limit
    ), keys AS (
        INSERT INTO job_keys AS k (handler, key, rate_next, rate_count, rate_window_start)
        SELECT p.handler, p.key, jobwire_rate_next(p.key_rate_limit, NULL, p.calls), p.calls, now()
        FROM per_key p
        ORDER BY p.handler, p.key
        ON CONFLICT (handler, key) DO UPDATE
        SET rate_next = jobwire_rate_next((SELECT h.key_rate_limit FROM job_handlers h WHERE h.name = k.handler),
                                          k.rate_next, EXCLUDED.rate_count),
            rate_count = CASE WHEN k.rate_window_start > now() - make_interval(secs => CAST(
                                       (SELECT h.key_rate_limit->>'period_seconds' FROM job_handlers h
                                        WHERE h.name = k.handler) AS float8))
                              THEN k.rate_count + EXCLUDED.rate_count ELSE EXCLUDED.rate_count END,
            rate_window_start = CASE WHEN k.rate_window_start > now() - make_interval(secs => CAST(
                                              (SELECT h.key_rate_limit->>'period_seconds' FROM job_handlers h
                                               WHERE h.name = k.handler) AS float8))
                                     THEN k.rate_window_start ELSE now() END,
            updated_at = now()
    ), secrets AS MATERIALIZED (
        -- The handlers' active signing secrets, newest first: one lookup per handler, not per row.
        -- Materialized: inlined, the generic plan (which expects one claimed row) joined it by a
        -- nested loop that ran it again for each claimed row, sorting them all each time.
        SELECT x.handler, array_agg(x.secret ORDER BY x.created_at DESC, x.id DESC) AS secrets
        FROM job_handler_secrets x
        WHERE x.handler IN (SELECT DISTINCT u.handler FROM u) AND (x.expires_at IS NULL OR x.expires_at > now())
        GROUP BY x.handler
    )
    SELECT u.id, u.job_id, u.job_type, u.handler, u.queue, u.attempt, u.max_attempts, u.payload,
           u.parameters, u.metadata, u.scheduled_at, u.started_at, u.deadline_at,
           CAST(EXTRACT(EPOCH FROM u.deadline_at - now()) AS float8), h.url, s.secrets[1], s.secrets,
           u.concurrency_key,
           -- Its reply moves flow state: an adaptive handler's, or a circuit with failures counted.
           COALESCE(h.adaptive OR f.circuit_failures > 0 OR f.circuit_state <> 'closed', false),
           -- A job in a workflow: {id, ref, parents: {ref: {execution_id, state, result}}} (DESIGN §9), its
           -- direct parents by ref, their results inlined while they total at most 256 KiB as JSON text,
           -- else every `result` left out (GET {callback.url}/parents pages through them). A subquery
           -- per such job, in this statement: a function call each cost twice as much in the claim
           -- of 1,000 workflow jobs. A job outside workflows runs none. Each parent is read by its
           -- key (OFFSET 0 keeps the lookup apart): joined, the generic plan, made while
           -- job_executions was small, hashed a scan of the whole table for each claimed job. Built
           -- as json, text sent as it is (refs are unique in a workflow: nothing to merge): as jsonb,
           -- each parent's object was built, merged and sorted in, and the whole converted to text
           -- again, 1.7x the time for a job with 1,000 parents (bench/README.md, 2026-12-07).
           CASE WHEN u.workflow_id IS NOT NULL THEN json_build_object(
               'id', u.workflow_id, 'ref', u.workflow_ref,
               'parents', COALESCE((SELECT json_object_agg(
                                               x.ref, CASE WHEN x.total <= 262144
                                                           THEN json_build_object('execution_id', x.id, 'state', x.state,
                                                                                  'result', x.result)
                                                           ELSE json_build_object('execution_id', x.id, 'state', x.state)
                                                      END)
                                    FROM (SELECT p.ref, p.id, p.state, p.result,
                                                 sum(COALESCE(octet_length(CAST(p.result AS text)), 4)) OVER () AS total
                                          FROM job_dependencies d
                                          CROSS JOIN LATERAL (SELECT pe.workflow_ref AS ref, pe.id, pe.state, pe.result
                                                              FROM job_executions pe WHERE pe.id = d.parent_id
                                                              OFFSET 0) AS p
                                          WHERE d.child_id = u.id) AS x), CAST('{}' AS json))) END,
           -- A job that suspended: its steps, and its `resume` when this attempt was resumed.
           CASE WHEN u.suspensions IS NOT NULL THEN jobwire_resume_context(u.id, u.attempt) END,
           -- The handler's batching ({max_size, max_wait_ms}; NULL: one call per job).
           h.batch
    FROM u LEFT JOIN job_handlers h ON h.name = u.handler
    LEFT JOIN job_handler_flow f ON f.handler = u.handler
    LEFT JOIN secrets s ON s.handler = u.handler
    ORDER BY u.priority DESC, u.scheduled_at;
END
$function$;
