-- Named statements for the flow state the replies move (app/services/flow.py: the circuit
-- breaker, Retry-After, adaptive limits), parsed once by app/db/queries.py. Rows are made when
-- first needed (a handler deleted meanwhile gets none) and locked in key order, so two nodes
-- recording replies of the same handlers wait for each other instead of deadlocking.

-- fragment: adaptive_set
-- An adaptive limiter's new state, from the input row `i` of a save.
adaptive_limit = i.adaptive_limit, adaptive_since = i.adaptive_since, adaptive_successes = i.adaptive_successes,
adaptive_slow_start = i.adaptive_slow_start, refusals = i.refusals

-- name: flow_handlers_make
INSERT INTO job_handler_flow (handler)
SELECT h.name FROM job_handlers h WHERE h.name = ANY(CAST(:handlers AS text[])) ORDER BY h.name
ON CONFLICT (handler) DO NOTHING

-- name: flow_handlers_read
SELECT f.handler, f.circuit_state, f.circuit_until, f.circuit_failures, f.circuit_open_seconds, f.adaptive_limit,
       f.adaptive_since, f.adaptive_successes, f.adaptive_slow_start, f.refusals, h.adaptive,
       COALESCE(h.max_concurrency, 1) AS ceiling, now() AS now
FROM job_handler_flow f JOIN job_handlers h ON h.name = f.handler
WHERE f.handler = ANY(CAST(:handlers AS text[]))
ORDER BY f.handler
FOR NO KEY UPDATE OF f

-- name: flow_handlers_save
UPDATE job_handler_flow f
SET circuit_state = i.circuit_state, circuit_until = i.circuit_until, circuit_failures = i.circuit_failures,
    circuit_open_seconds = i.circuit_open_seconds, $adaptive_set,
    retry_after = CASE WHEN i.retry_seconds IS NULL THEN f.retry_after
                       ELSE GREATEST(f.retry_after, now() + make_interval(secs => i.retry_seconds)) END,
    updated_at = now()
FROM unnest(CAST(:handlers AS text[]), CAST(:circuit_states AS text[]), CAST(:circuit_untils AS timestamptz[]),
            CAST(:circuit_failures AS int[]), CAST(:circuit_open_seconds AS float8[]),
            CAST(:adaptive_limits AS int[]), CAST(:adaptive_sinces AS timestamptz[]),
            CAST(:adaptive_successes AS int[]), CAST(:adaptive_slow_starts AS boolean[]), CAST(:refusals AS int[]),
            CAST(:retry_seconds AS float8[]))
    AS i(handler, circuit_state, circuit_until, circuit_failures, circuit_open_seconds, adaptive_limit,
         adaptive_since, adaptive_successes, adaptive_slow_start, refusals, retry_seconds)
WHERE f.handler = i.handler

-- name: flow_keys_make
INSERT INTO job_keys (handler, key)
SELECT i.handler, i.key
FROM unnest(CAST(:handlers AS text[]), CAST(:keys AS text[])) AS i(handler, key)
WHERE EXISTS (SELECT 1 FROM job_handlers h WHERE h.name = i.handler)
ORDER BY i.handler, i.key
ON CONFLICT (handler, key) DO NOTHING

-- name: flow_keys_read
SELECT k.handler, k.key, k.adaptive_limit, k.adaptive_since, k.adaptive_successes, k.adaptive_slow_start,
       k.refusals
FROM job_keys k
JOIN unnest(CAST(:handlers AS text[]), CAST(:keys AS text[])) AS i(handler, key)
  ON k.handler = i.handler AND k.key = i.key
ORDER BY k.handler, k.key
FOR NO KEY UPDATE OF k

-- name: flow_keys_save
UPDATE job_keys k
SET $adaptive_set,
    retry_after = CASE WHEN i.retry_seconds IS NULL THEN k.retry_after
                       ELSE GREATEST(k.retry_after, now() + make_interval(secs => i.retry_seconds)) END,
    updated_at = now()
FROM unnest(CAST(:handlers AS text[]), CAST(:keys AS text[]), CAST(:adaptive_limits AS int[]),
            CAST(:adaptive_sinces AS timestamptz[]), CAST(:adaptive_successes AS int[]),
            CAST(:adaptive_slow_starts AS boolean[]), CAST(:refusals AS int[]), CAST(:retry_seconds AS float8[]))
    AS i(handler, key, adaptive_limit, adaptive_since, adaptive_successes, adaptive_slow_start, refusals,
         retry_seconds)
WHERE k.handler = i.handler AND k.key = i.key
