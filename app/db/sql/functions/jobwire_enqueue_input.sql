-- The items of a jobwire_enqueue call, valid by now, with the defaults applied: one row per
-- item, ord its zero-based position, id the one minted for it beforehand (ids[ord + 1]) so
-- that a later statement can tell inserted items from those an idempotency key skipped.
-- request_hash fingerprints the request as sent, defaults applied (run_at in UTC,
-- delay_seconds as given, stateful before a stateful handler forces it), without
-- idempotency_key and traceparent: "the same key with another body" is refused. A field added
-- later (concurrency_key) enters it only when set, so a key stored before it still matches.
--
-- A plain SQL function, STABLE, without SET clauses: PostgreSQL inlines it into the statement
-- that calls it, as if its SELECT were written there.
CREATE OR REPLACE FUNCTION jobwire_enqueue_input(jobs jsonb, ids uuid[])
RETURNS TABLE (ord int, id uuid, handler text, job_id text, queue text, priority int, payload jsonb,
               parameters jsonb, metadata jsonb, run_at timestamptz, delay_seconds float8, max_attempts int,
               stateful boolean, timeout_seconds float8, max_duration_seconds float8, idempotency_key text,
               request_hash text, concurrency_key text)
LANGUAGE sql STABLE
AS $function$
SELECT CAST(r.ord - 1 AS int), ids[r.ord], r.handler, r.job_id,
       COALESCE(r.queue, 'default'), COALESCE(r.priority, 0), r.payload, r.parameters,
       CASE  -- a traceparent (header or field) joins the metadata as context.traceparent
           WHEN r.traceparent IS NULL THEN r.metadata
           WHEN r.metadata IS NULL
               THEN jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
           WHEN NULLIF(r.metadata->'context', 'null') IS NULL
               THEN r.metadata || jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
           WHEN jsonb_typeof(r.metadata->'context') = 'object' AND NOT (r.metadata->'context') ? 'traceparent'
               THEN jsonb_set(r.metadata, '{context,traceparent}', to_jsonb(r.traceparent))
           ELSE r.metadata  -- the body's own context (or traceparent) wins
       END,
       jobwire_parse_time(r.run_at), r.delay_seconds, COALESCE(r.max_attempts, 5),
       COALESCE(r.stateful, false), r.timeout_seconds, r.max_duration_seconds, r.idempotency_key,
       CASE WHEN r.idempotency_key IS NOT NULL THEN encode(sha256(convert_to(CAST(jsonb_build_object(
           'handler', r.handler, 'job_id', r.job_id, 'queue', COALESCE(r.queue, 'default'),
           'priority', COALESCE(r.priority, 0), 'payload', r.payload, 'parameters', r.parameters,
           'metadata', r.metadata, 'run_at', jobwire_parse_time(r.run_at), 'delay_seconds', r.delay_seconds,
           'max_attempts', COALESCE(r.max_attempts, 5), 'stateful', COALESCE(r.stateful, false),
           'timeout_seconds', r.timeout_seconds, 'max_duration_seconds', r.max_duration_seconds
       ) || CASE WHEN r.concurrency_key IS NULL THEN '{}'
                 ELSE jsonb_build_object('concurrency_key', r.concurrency_key) END
       AS text), 'UTF8')), 'hex') END,
       r.concurrency_key
FROM ROWS FROM (jsonb_to_recordset(jobs) AS (
    handler text, job_id text, queue text, priority int, payload jsonb, parameters jsonb, metadata jsonb,
    run_at text, delay_seconds float8, max_attempts int, stateful boolean, timeout_seconds float8,
    max_duration_seconds float8, idempotency_key text, traceparent text, concurrency_key text)
) WITH ORDINALITY AS r(handler, job_id, queue, priority, payload, parameters, metadata, run_at, delay_seconds,
                       max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
                       traceparent, concurrency_key, ord)
$function$;
