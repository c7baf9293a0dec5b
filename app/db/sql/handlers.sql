-- Named statements for job_handlers and job_meta, parsed once by app/db/queries.py.

-- fragment: handler_columns
-- A handler as rows.handler_from reads it: job_handlers `h` and its flow state `f` (a LEFT JOIN of
-- job_handler_flow; a handler without one has a closed circuit).
h.name, h.url, h.timeout_seconds, h.max_concurrency, h.stateful, h.created_at, h.updated_at,
h.key_concurrency, h.rate_limit, h.key_rate_limit, h.adaptive, h.batch,
COALESCE(f.circuit_state, 'closed') AS circuit_state,
CASE WHEN f.circuit_state <> 'closed' THEN f.circuit_until END AS circuit_until,
COALESCE(f.circuit_failures, 0) AS circuit_failures, f.adaptive_limit, f.adaptive_since

-- name: handler_upsert
-- PUT semantics: the caller's definition replaces the stored one; the secret (:secret, as stored:
-- whsec_… or jwenc1:…) is minted on insert only, as the handler's first signing secret, in
-- job_handler_secrets alone (job_handlers.secret, deprecated, stays NULL: a copy there would
-- outlive its rotation). (xmax = 0) tells an insert from an update.
WITH h AS (
    INSERT INTO job_handlers (name, url, timeout_seconds, max_concurrency, stateful, key_concurrency, rate_limit,
                              key_rate_limit, adaptive, batch)
    VALUES (:name, :url, :timeout_seconds, :max_concurrency, :stateful, :key_concurrency,
            CAST(:rate_limit AS jsonb), CAST(:key_rate_limit AS jsonb), :adaptive, CAST(:batch AS jsonb))
    ON CONFLICT (name) DO UPDATE
    SET url = EXCLUDED.url, timeout_seconds = EXCLUDED.timeout_seconds,
        max_concurrency = EXCLUDED.max_concurrency, stateful = EXCLUDED.stateful,
        key_concurrency = EXCLUDED.key_concurrency, rate_limit = EXCLUDED.rate_limit,
        key_rate_limit = EXCLUDED.key_rate_limit, adaptive = EXCLUDED.adaptive, batch = EXCLUDED.batch,
        updated_at = now()
    RETURNING name, url, timeout_seconds, max_concurrency, stateful, created_at, updated_at, key_concurrency,
              rate_limit, key_rate_limit, adaptive, batch, (xmax = 0) AS created
), first_secret AS (
    INSERT INTO job_handler_secrets (handler, secret) SELECT h.name, :secret FROM h WHERE h.created
)
SELECT $handler_columns, h.created
FROM h LEFT JOIN job_handler_flow f ON f.handler = h.name

-- name: handler_get
SELECT $handler_columns
FROM job_handlers h LEFT JOIN job_handler_flow f ON f.handler = h.name
WHERE h.name = :name

-- name: handlers_list
SELECT $handler_columns
FROM job_handlers h LEFT JOIN job_handler_flow f ON f.handler = h.name
ORDER BY h.name

-- name: handlers_clear_legacy_secret
-- job_handlers.secret is deprecated and never read; a node of the previous version still writes a
-- new handler's first secret there, where it would outlive its rotation. Start-ups clear it (rows
-- locked in name order first: nodes starting together wait for each other, never deadlock).
WITH locked AS MATERIALIZED (
    SELECT name FROM job_handlers WHERE secret IS NOT NULL ORDER BY name FOR NO KEY UPDATE
)
UPDATE job_handlers h SET secret = NULL FROM locked WHERE h.name = locked.name AND h.secret IS NOT NULL

-- name: handlers_lock_for_enqueue
-- Enqueue holds the handlers it uses FOR KEY SHARE until commit, so a concurrent delete waits
-- for it and then sees its jobs.
SELECT name, stateful FROM job_handlers WHERE name = ANY(:names) FOR KEY SHARE

-- name: handler_lock_for_delete
SELECT name FROM job_handlers WHERE name = :name FOR UPDATE

-- name: handler_usage
-- Run after handler_lock_for_delete, in a new statement, so its snapshot sees every enqueue
-- that held the handler before the lock was granted.
SELECT
    EXISTS (SELECT 1 FROM job_executions
            WHERE handler = :name AND state IN ('ENQUEUED', 'PROCESSING')) AS has_executions,
    EXISTS (SELECT 1 FROM job_schedules WHERE handler = :name) AS has_schedules

-- name: handler_delete
DELETE FROM job_handlers WHERE name = :name

-- name: meta_insert_if_missing
-- Every node shares one server key: the first writer wins, the rest read it.
INSERT INTO job_meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING

-- name: meta_get
SELECT value FROM job_meta WHERE key = :key

-- name: meta_replace
-- Replace a value only if it is still :stored (the server key sealed under JOBWIRE_SECRET_KEY by
-- nodes starting together: one write applies). Whether it applied.
UPDATE job_meta SET value = :value WHERE key = :key AND value = :stored RETURNING key

-- name: migration_heads
-- The revisions alembic recorded (readiness compares them with this build's head).
SELECT version_num FROM alembic_version

-- name: handlers_flow_gauges
-- Each handler's circuit (every handler: one without flow state is closed) and, for an adaptive
-- one, its effective limit: the gauges of /metrics.
SELECT h.name, COALESCE(f.circuit_state, 'closed') AS circuit_state, COALESCE(f.circuit_failures, 0) AS failures,
       CASE WHEN h.adaptive THEN COALESCE(f.adaptive_limit, LEAST(h.max_concurrency, 4)) END AS adaptive_limit
FROM job_handlers h LEFT JOIN job_handler_flow f ON f.handler = h.name
ORDER BY h.name
