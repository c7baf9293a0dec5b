-- jobwire_enqueue as revision 20261130_0008 left it (its downgrade restores it), but for the NOTIFY channel,
-- read from job_meta. Generated from pg_get_functiondef; kept as it was.
CREATE OR REPLACE FUNCTION jobwire_enqueue(jobs jsonb)
 RETURNS TABLE(ord integer, created boolean, id uuid, job_id text, job_type text, handler text, queue text, state text, attempt integer, max_attempts integer, priority integer, stateful boolean, payload jsonb, parameters jsonb, metadata jsonb, result jsonb, progress jsonb, scheduled_at timestamp with time zone, created_at timestamp with time zone, started_at timestamp with time zone, completed_at timestamp with time zone, deadline_at timestamp with time zone, locked_by text, last_error text, error_type text, timeout_seconds double precision, max_duration_seconds double precision, idempotency_key text)
 LANGUAGE plpgsql
 SET search_path FROM CURRENT
 SET "TimeZone" TO 'UTC'
AS $function$
#variable_conflict use_column
DECLARE
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

    -- 1. Validate every item (set-based): one pass finds whether anything is wrong, a second
    --    one (only then) names every field at fault.
    WITH items AS (SELECT t.ord, t.j, r.* FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord) CROSS JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j ELSE '{}' END) AS r(handler jsonb, payload jsonb, job_id jsonb, queue jsonb, priority jsonb, run_at jsonb, delay_seconds jsonb, max_attempts jsonb, stateful jsonb, timeout_seconds jsonb, max_duration_seconds jsonb, parameters jsonb, metadata jsonb, idempotency_key jsonb, traceparent jsonb))
    SELECT count(*) INTO n_errors FROM items t WHERE CASE WHEN jsonb_typeof(t.j) <> 'object' THEN true WHEN t.j - ARRAY['handler', 'payload', 'job_id', 'queue', 'priority', 'run_at', 'delay_seconds', 'max_attempts', 'stateful', 'timeout_seconds', 'max_duration_seconds', 'parameters', 'metadata', 'idempotency_key', 'traceparent'] <> '{}' THEN true ELSE COALESCE(
            CASE WHEN t.handler IS NULL THEN 'field required' WHEN jsonb_typeof(t.handler) <> 'string' OR length((t.handler #>> '{}')) > 255 OR (t.handler #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.job_id IS NULL THEN NULL WHEN jsonb_typeof(t.job_id) <> 'string' OR length((t.job_id #>> '{}')) > 255 OR (t.job_id #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.queue IS NULL THEN NULL WHEN jsonb_typeof(t.queue) <> 'string' OR length((t.queue #>> '{}')) > 255 OR (t.queue #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.idempotency_key IS NULL THEN NULL WHEN jsonb_typeof(t.idempotency_key) <> 'string' OR length((t.idempotency_key #>> '{}')) > 255 OR (t.idempotency_key #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.priority IS NULL THEN NULL WHEN jsonb_typeof(t.priority) <> 'number' THEN 'must be an integer from -2147483648 to 2147483647' WHEN (t.priority #>> '{}') !~ '^-?[0-9]+$' THEN 'must be an integer from -2147483648 to 2147483647' WHEN CAST(t.priority AS numeric) NOT BETWEEN -2147483648 AND 2147483647 THEN 'must be an integer from -2147483648 to 2147483647' END,
            CASE WHEN t.max_attempts IS NULL THEN NULL WHEN jsonb_typeof(t.max_attempts) <> 'number' THEN 'must be an integer from 1 to 1000' WHEN (t.max_attempts #>> '{}') !~ '^-?[0-9]+$' THEN 'must be an integer from 1 to 1000' WHEN CAST(t.max_attempts AS numeric) NOT BETWEEN 1 AND 1000 THEN 'must be an integer from 1 to 1000' END,
            CASE WHEN jsonb_typeof(t.stateful) <> 'boolean' THEN 'must be true or false' END,
            CASE WHEN t.timeout_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.timeout_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.timeout_seconds AS numeric) > 0 AND CAST(t.timeout_seconds AS numeric) <= 604800) THEN 'must be greater than 0 and at most 604800 seconds' END,
            CASE WHEN t.max_duration_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.max_duration_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.max_duration_seconds AS numeric) > 0 AND CAST(t.max_duration_seconds AS numeric) <= 604800) THEN 'must be greater than 0 and at most 604800 seconds' END,
            CASE WHEN t.delay_seconds IS NOT NULL AND t.run_at IS NOT NULL THEN 'give run_at or delay_seconds, not both' END,
            CASE WHEN t.delay_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.delay_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.delay_seconds AS numeric) >= 0 AND CAST(t.delay_seconds AS numeric) <= 31536000) THEN 'must be at least 0 and at most 31536000 seconds' END,
            CASE WHEN t.run_at IS NULL THEN NULL WHEN jsonb_typeof(t.run_at) <> 'string' OR jobwire_parse_time((t.run_at #>> '{}')) IS NULL THEN 'must be an RFC 3339 time with a time zone, within the years 1-9999 in UTC' END,
            CASE WHEN jsonb_typeof(t.parameters) <> 'object' THEN 'must be a JSON object or null' END,
            CASE WHEN jsonb_typeof(t.metadata) <> 'object' THEN 'must be a JSON object or null' END,
            CASE WHEN t.traceparent IS NULL THEN NULL WHEN jsonb_typeof(t.traceparent) <> 'string' OR (t.traceparent #>> '{}') !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR substr((t.traceparent #>> '{}'), 4, 32) = repeat('0', 32) OR substr((t.traceparent #>> '{}'), 37, 16) = repeat('0', 16) THEN 'must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero' END
        ) IS NOT NULL END;
    IF n_errors > 0 THEN
        WITH items AS (SELECT t.ord, t.j, r.* FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord) CROSS JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j ELSE '{}' END) AS r(handler jsonb, payload jsonb, job_id jsonb, queue jsonb, priority jsonb, run_at jsonb, delay_seconds jsonb, max_attempts jsonb, stateful jsonb, timeout_seconds jsonb, max_duration_seconds jsonb, parameters jsonb, metadata jsonb, idempotency_key jsonb, traceparent jsonb)),
        found(ord, rank, key, message) AS (
        SELECT t.ord, 0, '', 'must be a JSON object' FROM items t WHERE jsonb_typeof(t.j) <> 'object'
        UNION ALL
        SELECT t.ord, 1, k.key, 'unknown field' FROM items t, jsonb_object_keys(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j - ARRAY['handler', 'payload', 'job_id', 'queue', 'priority', 'run_at', 'delay_seconds', 'max_attempts', 'stateful', 'timeout_seconds', 'max_duration_seconds', 'parameters', 'metadata', 'idempotency_key', 'traceparent'] ELSE '{}' END) AS k(key)
        UNION ALL
        SELECT t.ord, c.rank + 1, c.key, c.message FROM items t, LATERAL unnest(
            ARRAY[
            CASE WHEN t.handler IS NULL THEN 'field required' WHEN jsonb_typeof(t.handler) <> 'string' OR length((t.handler #>> '{}')) > 255 OR (t.handler #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.job_id IS NULL THEN NULL WHEN jsonb_typeof(t.job_id) <> 'string' OR length((t.job_id #>> '{}')) > 255 OR (t.job_id #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.queue IS NULL THEN NULL WHEN jsonb_typeof(t.queue) <> 'string' OR length((t.queue #>> '{}')) > 255 OR (t.queue #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.idempotency_key IS NULL THEN NULL WHEN jsonb_typeof(t.idempotency_key) <> 'string' OR length((t.idempotency_key #>> '{}')) > 255 OR (t.idempotency_key #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
            CASE WHEN t.priority IS NULL THEN NULL WHEN jsonb_typeof(t.priority) <> 'number' THEN 'must be an integer from -2147483648 to 2147483647' WHEN (t.priority #>> '{}') !~ '^-?[0-9]+$' THEN 'must be an integer from -2147483648 to 2147483647' WHEN CAST(t.priority AS numeric) NOT BETWEEN -2147483648 AND 2147483647 THEN 'must be an integer from -2147483648 to 2147483647' END,
            CASE WHEN t.max_attempts IS NULL THEN NULL WHEN jsonb_typeof(t.max_attempts) <> 'number' THEN 'must be an integer from 1 to 1000' WHEN (t.max_attempts #>> '{}') !~ '^-?[0-9]+$' THEN 'must be an integer from 1 to 1000' WHEN CAST(t.max_attempts AS numeric) NOT BETWEEN 1 AND 1000 THEN 'must be an integer from 1 to 1000' END,
            CASE WHEN jsonb_typeof(t.stateful) <> 'boolean' THEN 'must be true or false' END,
            CASE WHEN t.timeout_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.timeout_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.timeout_seconds AS numeric) > 0 AND CAST(t.timeout_seconds AS numeric) <= 604800) THEN 'must be greater than 0 and at most 604800 seconds' END,
            CASE WHEN t.max_duration_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.max_duration_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.max_duration_seconds AS numeric) > 0 AND CAST(t.max_duration_seconds AS numeric) <= 604800) THEN 'must be greater than 0 and at most 604800 seconds' END,
            CASE WHEN t.delay_seconds IS NOT NULL AND t.run_at IS NOT NULL THEN 'give run_at or delay_seconds, not both' END,
            CASE WHEN t.delay_seconds IS NULL THEN NULL WHEN jsonb_typeof(t.delay_seconds) <> 'number' THEN 'must be a number of seconds' WHEN NOT (CAST(t.delay_seconds AS numeric) >= 0 AND CAST(t.delay_seconds AS numeric) <= 31536000) THEN 'must be at least 0 and at most 31536000 seconds' END,
            CASE WHEN t.run_at IS NULL THEN NULL WHEN jsonb_typeof(t.run_at) <> 'string' OR jobwire_parse_time((t.run_at #>> '{}')) IS NULL THEN 'must be an RFC 3339 time with a time zone, within the years 1-9999 in UTC' END,
            CASE WHEN jsonb_typeof(t.parameters) <> 'object' THEN 'must be a JSON object or null' END,
            CASE WHEN jsonb_typeof(t.metadata) <> 'object' THEN 'must be a JSON object or null' END,
            CASE WHEN t.traceparent IS NULL THEN NULL WHEN jsonb_typeof(t.traceparent) <> 'string' OR (t.traceparent #>> '{}') !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' OR substr((t.traceparent #>> '{}'), 4, 32) = repeat('0', 32) OR substr((t.traceparent #>> '{}'), 37, 16) = repeat('0', 16) THEN 'must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero' END
            ],
            ARRAY['handler', 'job_id', 'queue', 'idempotency_key', 'priority', 'max_attempts', 'stateful', 'timeout_seconds', 'max_duration_seconds', 'delay_seconds', 'delay_seconds', 'run_at', 'parameters', 'metadata', 'traceparent']
        ) WITH ORDINALITY AS c(message, key, rank) WHERE jsonb_typeof(t.j) = 'object' AND c.message IS NOT NULL
        )
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s]', f.ord - 1) || CASE WHEN f.key = '' THEN '' ELSE '.' || f.key END,
                   'message', f.message) ORDER BY f.ord, f.rank)
        INTO errors
        FROM (SELECT * FROM found ORDER BY ord, rank LIMIT 100) AS f;
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

    -- 3. Insert, in input order, with one ENQUEUED event each. A stored idempotency key inserts
    --    nothing (a concurrent insert of the same key is waited for: the unique index decides).
    ids := ARRAY(SELECT jobwire_uuid7() FROM generate_series(1, n_jobs));
    RETURN QUERY
    WITH input AS (
        SELECT CAST(r.ord - 1 AS int) AS ord, ids[r.ord] AS id, r.handler, r.job_id,
               COALESCE(r.queue, 'default') AS queue, COALESCE(r.priority, 0) AS priority, r.payload, r.parameters,
               CASE
                   WHEN r.traceparent IS NULL THEN r.metadata
                   WHEN r.metadata IS NULL
                       THEN jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN NULLIF(r.metadata->'context', 'null') IS NULL
                       THEN r.metadata || jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN jsonb_typeof(r.metadata->'context') = 'object' AND NOT (r.metadata->'context') ? 'traceparent'
                       THEN jsonb_set(r.metadata, '{context,traceparent}', to_jsonb(r.traceparent))
                   ELSE r.metadata  -- the body's own context (or traceparent) wins
               END AS metadata,
               jobwire_parse_time(r.run_at) AS run_at, r.delay_seconds, COALESCE(r.max_attempts, 5) AS max_attempts,
               COALESCE(r.stateful, false) AS stateful, r.timeout_seconds, r.max_duration_seconds, r.idempotency_key,
               CASE WHEN r.idempotency_key IS NOT NULL THEN encode(sha256(convert_to(CAST(jsonb_build_object(
                   'handler', r.handler, 'job_id', r.job_id, 'queue', COALESCE(r.queue, 'default'),
                   'priority', COALESCE(r.priority, 0), 'payload', r.payload, 'parameters', r.parameters,
                   'metadata', r.metadata, 'run_at', jobwire_parse_time(r.run_at), 'delay_seconds', r.delay_seconds,
                   'max_attempts', COALESCE(r.max_attempts, 5), 'stateful', COALESCE(r.stateful, false),
                   'timeout_seconds', r.timeout_seconds, 'max_duration_seconds', r.max_duration_seconds
               ) AS text), 'UTF8')), 'hex') END AS request_hash
        FROM ROWS FROM (jsonb_to_recordset(jobs) AS (
            handler text, job_id text, queue text, priority int, payload jsonb, parameters jsonb, metadata jsonb,
            run_at text, delay_seconds float8, max_attempts int, stateful boolean, timeout_seconds float8,
            max_duration_seconds float8, idempotency_key text, traceparent text)
        ) WITH ORDINALITY AS r(handler, job_id, queue, priority, payload, parameters, metadata, run_at, delay_seconds,
                               max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
                               traceparent, ord)
    ), ins AS (
        INSERT INTO job_executions AS e (
            id, job_id, job_type, handler, queue, state, priority, payload, parameters, metadata,
            max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
            request_hash, scheduled_at)
        SELECT i.id, COALESCE(i.job_id, CAST(i.id AS text)), 'DELAYED', i.handler, i.queue, 'ENQUEUED',
               i.priority, i.payload, i.parameters, i.metadata, i.max_attempts,
               i.stateful OR h.stateful,  -- a stateful handler makes every job sent to it stateful
               i.timeout_seconds, i.max_duration_seconds, i.idempotency_key, i.request_hash,
               COALESCE(i.run_at, now() + make_interval(secs => COALESCE(i.delay_seconds, 0)))
        FROM input i JOIN job_handlers h ON h.name = i.handler
        ORDER BY i.ord
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING e.id, e.job_id, e.job_type, e.handler, e.queue, e.state, e.attempt, e.max_attempts, e.priority, e.stateful, e.payload, e.parameters, e.metadata, e.result, e.progress, e.scheduled_at, e.created_at, e.started_at, e.completed_at, e.deadline_at, e.locked_by, e.last_error, e.error_type, e.timeout_seconds, e.max_duration_seconds, e.idempotency_key
    ), ev AS (
        INSERT INTO job_events (execution_id, event) SELECT ins.id, jsonb_build_object('execution_id', ins.id, 'job_id', ins.job_id, 'job_type', ins.job_type, 'queue', ins.queue, 'handler', ins.handler, 'new_state', ins.state, 'attempt', ins.attempt, 'max_attempts', ins.max_attempts, 'error_type', ins.error_type, 'scheduled_at', ins.scheduled_at, 'created_at', ins.created_at, 'started_at', ins.started_at, 'completed_at', ins.completed_at, 'metadata', ins.metadata) FROM ins
    )
    SELECT i.ord, true, ins.id, ins.job_id, ins.job_type, ins.handler, ins.queue, ins.state, ins.attempt, ins.max_attempts, ins.priority, ins.stateful, ins.payload, ins.parameters, ins.metadata, ins.result, ins.progress, ins.scheduled_at, ins.created_at, ins.started_at, ins.completed_at, ins.deadline_at, ins.locked_by, ins.last_error, ins.error_type, ins.timeout_seconds, ins.max_duration_seconds, ins.idempotency_key FROM ins JOIN input i ON i.id = ins.id;
    GET DIAGNOSTICS inserted = ROW_COUNT;

    -- 4. Items whose key was stored before (or earlier in this array): that execution, provided
    --    the request is the same. A new statement: its snapshot sees a concurrent insert of the
    --    key that committed while step 3 waited for it.
    IF inserted < n_jobs THEN
        WITH input AS (
        SELECT CAST(r.ord - 1 AS int) AS ord, ids[r.ord] AS id, r.handler, r.job_id,
               COALESCE(r.queue, 'default') AS queue, COALESCE(r.priority, 0) AS priority, r.payload, r.parameters,
               CASE
                   WHEN r.traceparent IS NULL THEN r.metadata
                   WHEN r.metadata IS NULL
                       THEN jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN NULLIF(r.metadata->'context', 'null') IS NULL
                       THEN r.metadata || jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN jsonb_typeof(r.metadata->'context') = 'object' AND NOT (r.metadata->'context') ? 'traceparent'
                       THEN jsonb_set(r.metadata, '{context,traceparent}', to_jsonb(r.traceparent))
                   ELSE r.metadata  -- the body's own context (or traceparent) wins
               END AS metadata,
               jobwire_parse_time(r.run_at) AS run_at, r.delay_seconds, COALESCE(r.max_attempts, 5) AS max_attempts,
               COALESCE(r.stateful, false) AS stateful, r.timeout_seconds, r.max_duration_seconds, r.idempotency_key,
               CASE WHEN r.idempotency_key IS NOT NULL THEN encode(sha256(convert_to(CAST(jsonb_build_object(
                   'handler', r.handler, 'job_id', r.job_id, 'queue', COALESCE(r.queue, 'default'),
                   'priority', COALESCE(r.priority, 0), 'payload', r.payload, 'parameters', r.parameters,
                   'metadata', r.metadata, 'run_at', jobwire_parse_time(r.run_at), 'delay_seconds', r.delay_seconds,
                   'max_attempts', COALESCE(r.max_attempts, 5), 'stateful', COALESCE(r.stateful, false),
                   'timeout_seconds', r.timeout_seconds, 'max_duration_seconds', r.max_duration_seconds
               ) AS text), 'UTF8')), 'hex') END AS request_hash
        FROM ROWS FROM (jsonb_to_recordset(jobs) AS (
            handler text, job_id text, queue text, priority int, payload jsonb, parameters jsonb, metadata jsonb,
            run_at text, delay_seconds float8, max_attempts int, stateful boolean, timeout_seconds float8,
            max_duration_seconds float8, idempotency_key text, traceparent text)
        ) WITH ORDINALITY AS r(handler, job_id, queue, priority, payload, parameters, metadata, run_at, delay_seconds,
                               max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
                               traceparent, ord)
    )
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s].idempotency_key', i.ord),
                   'message', format('idempotency key %L was used with a different request body',
                                     i.idempotency_key)) ORDER BY i.ord),
               count(*)
        INTO errors, n_errors
        FROM input i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id)
          AND x.request_hash IS DISTINCT FROM i.request_hash;
        IF n_errors > 0 THEN
            PERFORM jobwire_enqueue_refuse(errors);
        END IF;
        RETURN QUERY
        WITH input AS (
        SELECT CAST(r.ord - 1 AS int) AS ord, ids[r.ord] AS id, r.handler, r.job_id,
               COALESCE(r.queue, 'default') AS queue, COALESCE(r.priority, 0) AS priority, r.payload, r.parameters,
               CASE
                   WHEN r.traceparent IS NULL THEN r.metadata
                   WHEN r.metadata IS NULL
                       THEN jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN NULLIF(r.metadata->'context', 'null') IS NULL
                       THEN r.metadata || jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
                   WHEN jsonb_typeof(r.metadata->'context') = 'object' AND NOT (r.metadata->'context') ? 'traceparent'
                       THEN jsonb_set(r.metadata, '{context,traceparent}', to_jsonb(r.traceparent))
                   ELSE r.metadata  -- the body's own context (or traceparent) wins
               END AS metadata,
               jobwire_parse_time(r.run_at) AS run_at, r.delay_seconds, COALESCE(r.max_attempts, 5) AS max_attempts,
               COALESCE(r.stateful, false) AS stateful, r.timeout_seconds, r.max_duration_seconds, r.idempotency_key,
               CASE WHEN r.idempotency_key IS NOT NULL THEN encode(sha256(convert_to(CAST(jsonb_build_object(
                   'handler', r.handler, 'job_id', r.job_id, 'queue', COALESCE(r.queue, 'default'),
                   'priority', COALESCE(r.priority, 0), 'payload', r.payload, 'parameters', r.parameters,
                   'metadata', r.metadata, 'run_at', jobwire_parse_time(r.run_at), 'delay_seconds', r.delay_seconds,
                   'max_attempts', COALESCE(r.max_attempts, 5), 'stateful', COALESCE(r.stateful, false),
                   'timeout_seconds', r.timeout_seconds, 'max_duration_seconds', r.max_duration_seconds
               ) AS text), 'UTF8')), 'hex') END AS request_hash
        FROM ROWS FROM (jsonb_to_recordset(jobs) AS (
            handler text, job_id text, queue text, priority int, payload jsonb, parameters jsonb, metadata jsonb,
            run_at text, delay_seconds float8, max_attempts int, stateful boolean, timeout_seconds float8,
            max_duration_seconds float8, idempotency_key text, traceparent text)
        ) WITH ORDINALITY AS r(handler, job_id, queue, priority, payload, parameters, metadata, run_at, delay_seconds,
                               max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
                               traceparent, ord)
    )
        SELECT i.ord, false, x.id, x.job_id, x.job_type, x.handler, x.queue, x.state, x.attempt, x.max_attempts, x.priority, x.stateful, x.payload, x.parameters, x.metadata, x.result, x.progress, x.scheduled_at, x.created_at, x.started_at, x.completed_at, x.deadline_at, x.locked_by, x.last_error, x.error_type, x.timeout_seconds, x.max_duration_seconds, x.idempotency_key
        FROM input i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id);
        GET DIAGNOSTICS resolved = ROW_COUNT;
        IF inserted + resolved < n_jobs THEN
            -- Only a row deleted between the two statements can do this: try again.
            RAISE EXCEPTION 'jobwire_enqueue: an idempotency key''s execution vanished; retry'
                USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;

    IF inserted > 0 AND EXISTS (
        -- Wake the dispatchers only for a job they may claim now: due, in a queue not paused.
        -- Read from the input, not the table: a lookup of the new rows by id is planned as a
        -- scan of the whole table while its statistics still say it is empty.
        SELECT 1 FROM jsonb_array_elements(jobs) AS t(j)
        WHERE COALESCE(CAST(t.j->>'delay_seconds' AS float8), 0) = 0
          AND (t.j->>'run_at' IS NULL OR jobwire_parse_time(t.j->>'run_at') <= now())
          AND NOT EXISTS (SELECT 1 FROM job_queues q
                          WHERE q.name = COALESCE(t.j->>'queue', 'default') AND q.paused)
    ) THEN
        PERFORM pg_notify((SELECT m.value FROM job_meta m WHERE m.key = 'notify_channel'), '');  -- wakes the dispatchers on commit
    END IF;
END
$function$;
