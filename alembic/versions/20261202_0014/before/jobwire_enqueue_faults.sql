-- What is wrong with one jobwire_enqueue item, field by field: one message (or NULL) per entry
-- of the field list below, in that order (delay_seconds twice: both given with run_at, or out
-- of range). The arguments are the item's fields as raw jsonb (NULL when absent or null).
--
-- A plain SQL function without SET clauses: PostgreSQL inlines it into the statement that calls it.
CREATE OR REPLACE FUNCTION jobwire_enqueue_faults(
    handler jsonb, job_id jsonb, queue jsonb, idempotency_key jsonb, priority jsonb, max_attempts jsonb,
    stateful jsonb, timeout_seconds jsonb, max_duration_seconds jsonb, delay_seconds jsonb, run_at jsonb,
    parameters jsonb, metadata jsonb, traceparent jsonb)
RETURNS text[]
LANGUAGE sql STABLE
AS $function$
-- Names: ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$, checked as a length and an unbounded pattern
-- (PostgreSQL expands a bounded repetition into hundreds of states: ~5 µs a match).
-- Integers: CASE, not OR, fixes the order: the cast must come after the type checks.
SELECT ARRAY[
    CASE WHEN handler IS NULL THEN 'field required'
         WHEN jsonb_typeof(handler) <> 'string' OR length(handler #>> '{}') > 255
              OR (handler #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'
         THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
    CASE WHEN job_id IS NULL THEN NULL
         WHEN jsonb_typeof(job_id) <> 'string' OR length(job_id #>> '{}') > 255
              OR (job_id #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'
         THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
    CASE WHEN queue IS NULL THEN NULL
         WHEN jsonb_typeof(queue) <> 'string' OR length(queue #>> '{}') > 255
              OR (queue #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'
         THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
    CASE WHEN idempotency_key IS NULL THEN NULL
         WHEN jsonb_typeof(idempotency_key) <> 'string' OR length(idempotency_key #>> '{}') > 255
              OR (idempotency_key #>> '{}') !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'
         THEN 'must be a string matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$' END,
    CASE WHEN priority IS NULL THEN NULL
         WHEN jsonb_typeof(priority) <> 'number' OR (priority #>> '{}') !~ '^-?[0-9]+$'
         THEN 'must be an integer from -2147483648 to 2147483647'
         WHEN CAST(priority AS numeric) NOT BETWEEN -2147483648 AND 2147483647
         THEN 'must be an integer from -2147483648 to 2147483647' END,
    CASE WHEN max_attempts IS NULL THEN NULL
         WHEN jsonb_typeof(max_attempts) <> 'number' OR (max_attempts #>> '{}') !~ '^-?[0-9]+$'
         THEN 'must be an integer from 1 to 1000'
         WHEN CAST(max_attempts AS numeric) NOT BETWEEN 1 AND 1000 THEN 'must be an integer from 1 to 1000' END,
    CASE WHEN jsonb_typeof(stateful) <> 'boolean' THEN 'must be true or false' END,
    CASE WHEN timeout_seconds IS NULL THEN NULL
         WHEN jsonb_typeof(timeout_seconds) <> 'number' THEN 'must be a number of seconds'
         WHEN NOT (CAST(timeout_seconds AS numeric) > 0 AND CAST(timeout_seconds AS numeric) <= 604800)
         THEN 'must be greater than 0 and at most 604800 seconds' END,
    CASE WHEN max_duration_seconds IS NULL THEN NULL
         WHEN jsonb_typeof(max_duration_seconds) <> 'number' THEN 'must be a number of seconds'
         WHEN NOT (CAST(max_duration_seconds AS numeric) > 0 AND CAST(max_duration_seconds AS numeric) <= 604800)
         THEN 'must be greater than 0 and at most 604800 seconds' END,
    CASE WHEN delay_seconds IS NOT NULL AND run_at IS NOT NULL THEN 'give run_at or delay_seconds, not both' END,
    CASE WHEN delay_seconds IS NULL THEN NULL
         WHEN jsonb_typeof(delay_seconds) <> 'number' THEN 'must be a number of seconds'
         WHEN NOT (CAST(delay_seconds AS numeric) >= 0 AND CAST(delay_seconds AS numeric) <= 31536000)
         THEN 'must be at least 0 and at most 31536000 seconds' END,
    CASE WHEN run_at IS NULL THEN NULL
         WHEN jsonb_typeof(run_at) <> 'string' OR jobwire_parse_time(run_at #>> '{}') IS NULL
         THEN 'must be an RFC 3339 time with a time zone, within the years 1-9999 in UTC' END,
    CASE WHEN jsonb_typeof(parameters) <> 'object' THEN 'must be a JSON object or null' END,
    CASE WHEN jsonb_typeof(metadata) <> 'object' THEN 'must be a JSON object or null' END,
    CASE WHEN traceparent IS NULL THEN NULL
         WHEN jsonb_typeof(traceparent) <> 'string' OR (traceparent #>> '{}') !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
              OR substr(traceparent #>> '{}', 4, 32) = repeat('0', 32)
              OR substr(traceparent #>> '{}', 37, 16) = repeat('0', 16)
         THEN 'must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero' END
]
$function$;
