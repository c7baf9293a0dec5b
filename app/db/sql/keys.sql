-- Named statements for a handler's concurrency keys (job_keys, and the live jobs that carry keys),
-- parsed once by app/db/queries.py. Keys need no registration: a key is listed while a job of it
-- is ENQUEUED (found by a loose index scan over ix_job_executions_keys, one probe per key, never a
-- scan of the finished history) or PROCESSING (through the index on PROCESSING rows: as many rows
-- as calls), or while it has a row in job_keys (paused, or a rate window the claim keeps). Pages are in key order after :after ('' for the first).

-- fragment: key_view
-- Per key of `chosen`: what holds it back, read in one snapshot.
key_view AS (
    SELECT c.key,
           (SELECT count(*) FROM job_executions e
            WHERE e.handler = :handler AND e.concurrency_key = c.key AND e.state = 'ENQUEUED') AS waiting,
           (SELECT count(*) FROM job_executions e
            WHERE e.handler = :handler AND e.concurrency_key = c.key AND e.state = 'PROCESSING') AS in_flight,
           COALESCE(k.paused, false) AS paused,
           CASE WHEN k.rate_window_start > now() - make_interval(
                         secs => CAST(h.key_rate_limit->>'period_seconds' AS float8))
                THEN k.rate_count ELSE 0 END AS rate_count,
           CASE WHEN k.rate_window_start > now() - make_interval(
                         secs => CAST(h.key_rate_limit->>'period_seconds' AS float8))
                THEN k.rate_window_start END AS rate_window_start,
           CASE WHEN k.rate_next > now() THEN k.rate_next END AS rate_next,
           CASE WHEN k.retry_after > now() THEN k.retry_after END AS retry_after,
           h.key_concurrency
    FROM chosen c
    JOIN job_handlers h ON h.name = :handler
    LEFT JOIN job_keys k ON k.handler = :handler AND k.key = c.key
)

-- fragment: live_keys
-- The keys with a job ENQUEUED, in key order after :after, one index probe each.
live AS (
    (SELECT e.concurrency_key AS key FROM job_executions e
     WHERE e.handler = :handler AND e.state = 'ENQUEUED' AND e.concurrency_key IS NOT NULL
       AND e.concurrency_key > :after
     ORDER BY e.concurrency_key LIMIT 1)
    UNION ALL
    SELECT (SELECT e.concurrency_key FROM job_executions e
            WHERE e.handler = :handler AND e.state = 'ENQUEUED' AND e.concurrency_key IS NOT NULL
              AND e.concurrency_key > live.key
            ORDER BY e.concurrency_key LIMIT 1)
    FROM live WHERE live.key IS NOT NULL
)

-- name: keys_page
-- Every key: the first :limit of those with jobs waiting, of those with calls in flight (as many
-- rows as calls), and of job_keys, merged.
WITH RECURSIVE $live_keys, chosen AS (
    SELECT x.key FROM (
        (SELECT live.key FROM live WHERE live.key IS NOT NULL LIMIT :limit)
        UNION
        (SELECT DISTINCT p.concurrency_key FROM job_executions p
         WHERE p.handler = :handler AND p.state = 'PROCESSING' AND p.concurrency_key > :after
         ORDER BY p.concurrency_key LIMIT :limit)
        UNION
        (SELECT k.key FROM job_keys k WHERE k.handler = :handler AND k.key > :after ORDER BY k.key LIMIT :limit)
    ) AS x
    ORDER BY x.key LIMIT :limit
), $key_view
SELECT * FROM key_view ORDER BY key

-- name: keys_page_waiting
-- Keys with a job ENQUEUED; with :throttled, only those held back now (paused, a Retry-After,
-- their rate limit's next slot ahead, or key_concurrency calls in flight).
WITH RECURSIVE $live_keys, chosen AS (
    SELECT live.key FROM live WHERE live.key IS NOT NULL
), $key_view
SELECT * FROM key_view
WHERE waiting > 0
  AND (NOT :throttled OR paused OR retry_after IS NOT NULL OR rate_next IS NOT NULL
       OR in_flight >= key_concurrency)
ORDER BY key
LIMIT :limit

-- name: keys_page_paused
WITH chosen AS (
    SELECT k.key FROM job_keys k WHERE k.handler = :handler AND k.paused AND k.key > :after
    ORDER BY k.key LIMIT :limit
), $key_view
SELECT * FROM key_view ORDER BY key

-- name: key_set_paused
-- Pause or resume one key of a handler (a row is made for it: keys need no registration); says
-- whether the handler exists.
WITH h AS (
    SELECT name FROM job_handlers WHERE name = :handler
), k AS (
    INSERT INTO job_keys AS k (handler, key, paused)
    SELECT h.name, :key, :paused FROM h
    ON CONFLICT (handler, key) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()
    RETURNING k.key
)
SELECT EXISTS (SELECT 1 FROM h)

-- name: key_get
WITH chosen AS (SELECT CAST(:key AS text) AS key), $key_view
SELECT * FROM key_view
