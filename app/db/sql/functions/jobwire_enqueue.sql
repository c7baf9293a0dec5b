-- Enqueue a JSON array of jobs, set-based, exactly as POST /v1/jobs and /v1/jobs/batch do (they
-- call it too): the same validation, defaults, stateful handlers, idempotency keys and NOTIFY (no
-- event row for the insert: DESIGN §8; an execution's first row is its first outcome, suspension
-- or user action). An application sharing the database calls it on its own connection, so the
-- job commits or rolls back with its business data (the outbox pattern; README, "Transactional
-- enqueue"). One row per input item, `ord` its zero-based position; `created` is false where an
-- idempotency key returned an execution stored before. Invalid input raises SQLSTATE 22023 with
-- CONSTRAINT jobwire_enqueue and, in DETAIL, every field at fault (jobwire_enqueue_refuse).
--
-- The workflow arguments are Jobwire's own (POST /v1/workflows, app/db/sql/workflows.sql), NULL
-- for everyone else: the jobs join the workflow `wf` as they are inserted, the item at position
-- ord with the ref wf_refs[ord + 1], the policy wf_policies[ord + 1] and, when wf_pending[ord + 1]
-- is set (it has parents), WAITING with that many parents unfinished;
-- else ENQUEUED, no parent pending; wf_spawned_by, the parent that spawned them (a handler's POST
-- {callback.url}/children), or NULL.
--
-- search_path is pinned to the schema the migration ran in (callers with any search_path reach
-- the right tables: call it schema-qualified) and TimeZone to UTC (times inside the event are
-- rendered as the API renders them). The NOTIFY channel is read from job_meta
-- ('notify_channel'), where the migration wrote the name app.db.database.Database listens on.
CREATE OR REPLACE FUNCTION jobwire_enqueue(jobs jsonb, wf uuid DEFAULT NULL, wf_refs text[] DEFAULT NULL,
                                           wf_policies text[] DEFAULT NULL, wf_pending int[] DEFAULT NULL,
                                           wf_spawned_by uuid DEFAULT NULL)
RETURNS TABLE (
    ord int, created boolean,
    id uuid, job_id text, job_type text, handler text, queue text, state text, attempt int, max_attempts int,
    priority int, stateful boolean, payload jsonb, parameters jsonb, metadata jsonb, result jsonb, progress jsonb,
    scheduled_at timestamptz, created_at timestamptz, started_at timestamptz, completed_at timestamptz,
    deadline_at timestamptz, locked_by text, last_error text, error_type text, timeout_seconds float8,
    max_duration_seconds float8, idempotency_key text, concurrency_key text)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
SET TimeZone = 'UTC'
AS $function$
#variable_conflict use_column
DECLARE
    known constant text[] := ARRAY['handler', 'payload', 'job_id', 'queue', 'priority', 'run_at', 'delay_seconds',
                                   'max_attempts', 'stateful', 'timeout_seconds', 'max_duration_seconds',
                                   'parameters', 'metadata', 'idempotency_key', 'traceparent', 'concurrency_key'];
    -- The field each entry of jobwire_enqueue_faults' result speaks of.
    checked constant text[] := ARRAY['handler', 'job_id', 'queue', 'idempotency_key', 'priority', 'max_attempts',
                                     'stateful', 'timeout_seconds', 'max_duration_seconds', 'delay_seconds',
                                     'delay_seconds', 'run_at', 'parameters', 'metadata', 'traceparent',
                                     'concurrency_key'];
    n_jobs int;
    ids uuid[];
    errors jsonb;
    n_errors int;
    inserted int;
    resolved int;
BEGIN
    IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN
        RAISE EXCEPTION 'jobwire_enqueue: jobs must be a JSON array of job objects'
            USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'jobwire_enqueue',
                  DETAIL = '[{"field": "jobs", "message": "must be a JSON array of job objects"}]';
    END IF;
    n_jobs := jsonb_array_length(jobs);
    IF n_jobs = 0 THEN
        RETURN;
    END IF;

    -- 1. Validate every item (set-based): what is wrong with each item, and only for the items
    --    with a fault (none, commonly) every field at fault named (the first 100).
    WITH items AS (
        SELECT t.ord, t.j, jobwire_enqueue_faults(r.handler, r.job_id, r.queue, r.idempotency_key, r.priority,
                                                  r.max_attempts, r.stateful, r.timeout_seconds,
                                                  r.max_duration_seconds, r.delay_seconds, r.run_at,
                                                  r.parameters, r.metadata, r.traceparent,
                                                  r.concurrency_key) AS faults
        FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord)
        CROSS JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j ELSE '{}' END)
            AS r(handler jsonb, job_id jsonb, queue jsonb, priority jsonb, run_at jsonb, delay_seconds jsonb,
                 max_attempts jsonb, stateful jsonb, timeout_seconds jsonb, max_duration_seconds jsonb,
                 parameters jsonb, metadata jsonb, idempotency_key jsonb, traceparent jsonb,
                 concurrency_key jsonb)
    ), faulty AS MATERIALIZED (
        SELECT t.ord, t.j, t.faults FROM items t
        WHERE CASE WHEN jsonb_typeof(t.j) <> 'object' THEN true  -- CASE: `-` needs an object
                   ELSE t.j - known <> '{}' OR num_nonnulls(VARIADIC t.faults) > 0 END
    ), found(ord, rank, key, message) AS (
        -- An item that is not an object gets that error alone.
        SELECT t.ord, 0, '', 'must be a JSON object' FROM faulty t WHERE jsonb_typeof(t.j) <> 'object'
        UNION ALL
        -- Unknown keys (the API refuses them too).
        SELECT t.ord, 1, k.key, 'unknown field'
        FROM faulty t, jsonb_object_keys(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j - known ELSE '{}' END)
            AS k(key)
        UNION ALL
        SELECT t.ord, c.rank + 1, c.key, c.message
        FROM faulty t, unnest(t.faults, checked) WITH ORDINALITY AS c(message, key, rank)
        WHERE jsonb_typeof(t.j) = 'object' AND c.message IS NOT NULL
    )
    SELECT jsonb_agg(jsonb_build_object(
               'field', format('jobs[%s]', f.ord - 1) || CASE WHEN f.key = '' THEN '' ELSE '.' || f.key END,
               'message', f.message) ORDER BY f.ord, f.rank)
    INTO errors
    FROM (SELECT * FROM found ORDER BY ord, rank LIMIT 100) AS f;
    IF errors IS NOT NULL THEN
        PERFORM jobwire_enqueue_refuse(errors);
    END IF;

    -- 2. The handlers must exist. FOR KEY SHARE until commit: a concurrent delete of a handler
    --    waits for this transaction, then sees its jobs.
    PERFORM 1 FROM job_handlers h
    WHERE h.name IN (SELECT DISTINCT t.j->>'handler' FROM jsonb_array_elements(jobs) AS t(j))
    ORDER BY h.name
    FOR KEY SHARE;
    SELECT jsonb_agg(jsonb_build_object(
               'field', format('jobs[%s].handler', t.ord - 1),
               'message', format('no handler named %L is registered', t.j->>'handler')) ORDER BY t.ord),
           count(*)
    INTO errors, n_errors
    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord)
    WHERE NOT EXISTS (SELECT 1 FROM job_handlers h WHERE h.name = t.j->>'handler');
    IF n_errors > 0 THEN
        PERFORM jobwire_enqueue_refuse(errors);
    END IF;

    -- 2b. Concurrency keys (none, commonly: one JSON path test). A stateful handler's jobs take
    --     none; a handler's first key gives it flow state (job_handler_flow): from then on its jobs
    --     take turns by key (fair_tag) and its claims go through jobwire_claim_pick.
    IF jobs @? '$[*] ? (@.concurrency_key != null)' THEN
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s].concurrency_key', t.ord - 1),
                   'message', format('handler %L is stateful: its jobs run one at a time in their queue '
                                     'and take no concurrency key', t.j->>'handler')) ORDER BY t.ord),
               count(*)
        INTO errors, n_errors
        FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord)
        JOIN job_handlers h ON h.name = t.j->>'handler'
        WHERE h.stateful AND t.j->>'concurrency_key' IS NOT NULL;
        IF n_errors > 0 THEN
            PERFORM jobwire_enqueue_refuse(errors);
        END IF;
        INSERT INTO job_handler_flow AS f (handler, keyed)
        SELECT DISTINCT t.j->>'handler', true FROM jsonb_array_elements(jobs) AS t(j)
        WHERE t.j->>'concurrency_key' IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_handler_flow x WHERE x.handler = t.j->>'handler' AND x.keyed)
        ORDER BY 1
        ON CONFLICT (handler) DO UPDATE SET keyed = true;
    END IF;

    -- 3. Insert (no event row: DESIGN §8). A stored idempotency key inserts nothing (a
    --    concurrent insert of the same key is waited for: the unique index decides). Rows go in
    --    in the order of their keys, so two calls naming the same keys in any order wait for
    --    each other instead of deadlocking (each would hold a key the other waits for).
    --    A job of a handler with flow state takes the next turn of its key (jobs without a key are
    --    one key): after the key's last waiting job, and never before the handler's turn now
    --    (fair_round), so a new key's first job is among the next claims, not behind a backlog.
    ids := ARRAY(SELECT jobwire_uuid7() FROM generate_series(1, n_jobs));
    RETURN QUERY
    WITH input AS (
        SELECT * FROM jobwire_enqueue_input(jobs, ids)
    ), new_rows AS (
        SELECT i.ord, i.id, COALESCE(i.job_id, CAST(i.id AS text)) AS job_id, i.handler, i.queue,
               CASE WHEN wf_pending[i.ord + 1] IS NOT NULL THEN 'WAITING' ELSE 'ENQUEUED' END AS state,
               i.priority, i.payload, i.parameters, i.metadata, i.max_attempts,
               i.stateful OR h.stateful AS stateful,  -- a stateful handler makes every job sent to it stateful
               i.timeout_seconds, i.max_duration_seconds, i.idempotency_key, i.request_hash,
               COALESCE(i.run_at, now() + make_interval(secs => COALESCE(i.delay_seconds, 0))) AS scheduled_at,
               i.concurrency_key,
               CASE WHEN f.handler IS NOT NULL THEN
                   GREATEST(f.fair_round,
                            1 + CASE WHEN i.concurrency_key IS NULL THEN
                                    (SELECT x.fair_tag FROM job_executions x
                                     WHERE x.handler = i.handler AND x.state = 'ENQUEUED'
                                       AND x.concurrency_key IS NULL AND x.fair_tag IS NOT NULL
                                     ORDER BY x.fair_tag DESC LIMIT 1)
                                ELSE
                                    (SELECT x.fair_tag FROM job_executions x
                                     WHERE x.handler = i.handler AND x.concurrency_key = i.concurrency_key
                                       AND x.state = 'ENQUEUED' AND x.fair_tag IS NOT NULL
                                     ORDER BY x.fair_tag DESC LIMIT 1) END)
                   + row_number() OVER (PARTITION BY i.handler, i.concurrency_key ORDER BY i.ord) - 1
               END AS fair_tag,
               wf AS workflow_id, wf_refs[i.ord + 1] AS workflow_ref, wf_policies[i.ord + 1] AS on_dependency_failure,
               CASE WHEN wf IS NOT NULL THEN COALESCE(wf_pending[i.ord + 1], 0) END AS pending_parents,
               wf_spawned_by AS spawned_by
        FROM input i JOIN job_handlers h ON h.name = i.handler
        LEFT JOIN job_handler_flow f ON f.handler = i.handler AND f.keyed
    ), keyed AS (
        -- Only the rows with a key are inserted ON CONFLICT: that insert is speculative (an extra
        -- lookup in the arbiter index and a WAL record to confirm each row), a plain one is not.
        INSERT INTO job_executions AS e (
            id, job_id, job_type, handler, queue, state, priority, payload, parameters, metadata,
            max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
            request_hash, scheduled_at, concurrency_key, fair_tag,
            workflow_id, workflow_ref, on_dependency_failure, pending_parents, spawned_by)
        SELECT r.id, r.job_id, 'DELAYED', r.handler, r.queue, r.state, r.priority, r.payload, r.parameters,
               r.metadata, r.max_attempts, r.stateful, r.timeout_seconds, r.max_duration_seconds,
               r.idempotency_key, r.request_hash, r.scheduled_at, r.concurrency_key, r.fair_tag,
               r.workflow_id, r.workflow_ref, r.on_dependency_failure, r.pending_parents, r.spawned_by
        FROM new_rows r WHERE r.idempotency_key IS NOT NULL
        ORDER BY r.idempotency_key COLLATE "C", r.ord
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING e.*
    ), keyless AS (
        INSERT INTO job_executions AS e (
            id, job_id, job_type, handler, queue, state, priority, payload, parameters, metadata,
            max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
            request_hash, scheduled_at, concurrency_key, fair_tag,
            workflow_id, workflow_ref, on_dependency_failure, pending_parents, spawned_by)
        SELECT r.id, r.job_id, 'DELAYED', r.handler, r.queue, r.state, r.priority, r.payload, r.parameters,
               r.metadata, r.max_attempts, r.stateful, r.timeout_seconds, r.max_duration_seconds,
               r.idempotency_key, r.request_hash, r.scheduled_at, r.concurrency_key, r.fair_tag,
               r.workflow_id, r.workflow_ref, r.on_dependency_failure, r.pending_parents, r.spawned_by
        FROM new_rows r WHERE r.idempotency_key IS NULL
        ORDER BY r.ord
        RETURNING e.*
    ), ins AS (
        SELECT * FROM keyed UNION ALL SELECT * FROM keyless
    )
    SELECT i.ord, true,
           ins.id, ins.job_id, ins.job_type, ins.handler, ins.queue, ins.state, ins.attempt, ins.max_attempts,
           ins.priority, ins.stateful, ins.payload, ins.parameters, ins.metadata, ins.result, ins.progress,
           ins.scheduled_at, ins.created_at, ins.started_at, ins.completed_at, ins.deadline_at, ins.locked_by,
           ins.last_error, ins.error_type, ins.timeout_seconds, ins.max_duration_seconds, ins.idempotency_key,
           ins.concurrency_key
    FROM ins JOIN input i ON i.id = ins.id;
    GET DIAGNOSTICS inserted = ROW_COUNT;

    -- 4. Items whose key was stored before (or earlier in this array): that execution, provided
    --    the request is the same. A new statement: its snapshot sees a concurrent insert of the
    --    key that committed while step 3 waited for it.
    IF inserted < n_jobs THEN
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s].idempotency_key', i.ord),
                   'message', format('idempotency key %L was used with a different request body',
                                     i.idempotency_key)) ORDER BY i.ord),
               count(*)
        INTO errors, n_errors
        FROM jobwire_enqueue_input(jobs, ids) i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id)
          AND x.request_hash IS DISTINCT FROM i.request_hash;
        IF n_errors > 0 THEN
            PERFORM jobwire_enqueue_refuse(errors);
        END IF;
        RETURN QUERY
        SELECT i.ord, false,
               x.id, x.job_id, x.job_type, x.handler, x.queue, x.state, x.attempt, x.max_attempts, x.priority,
               x.stateful, x.payload, x.parameters, x.metadata, x.result, x.progress, x.scheduled_at,
               x.created_at, x.started_at, x.completed_at, x.deadline_at, x.locked_by, x.last_error,
               x.error_type, x.timeout_seconds, x.max_duration_seconds, x.idempotency_key, x.concurrency_key
        FROM jobwire_enqueue_input(jobs, ids) i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id);
        GET DIAGNOSTICS resolved = ROW_COUNT;
        IF inserted + resolved < n_jobs THEN
            -- Only a row deleted between the two statements can do this: try again.
            RAISE EXCEPTION 'jobwire_enqueue: an idempotency key''s execution vanished; retry'
                USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;

    -- Wake the dispatchers (on commit) only for a job they may claim now: due, in a queue not
    -- paused. Read from the input, not the table: a lookup of the new rows by id is planned as a
    -- scan of the whole table while its statistics still say it is empty.
    IF inserted > 0 AND EXISTS (
        SELECT 1 FROM jsonb_array_elements(jobs) AS t(j)
        WHERE COALESCE(CAST(t.j->>'delay_seconds' AS float8), 0) = 0
          AND (t.j->>'run_at' IS NULL OR jobwire_parse_time(t.j->>'run_at') <= now())
          AND NOT EXISTS (SELECT 1 FROM job_queues q
                          WHERE q.name = COALESCE(t.j->>'queue', 'default') AND q.paused)
    ) THEN
        PERFORM pg_notify((SELECT m.value FROM job_meta m WHERE m.key = 'notify_channel'), '');
    END IF;
END
$function$;
