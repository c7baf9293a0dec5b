-- Named statements for job_handlers and job_meta, parsed once by app/db/queries.py.

-- fragment: handler_columns
-- A handler as rows.handler_from reads it: job_handlers `h` and its flow state `f` (a LEFT JOIN of
-- job_handler_flow; a handler without one has a closed circuit).
h.name, h.url, h.timeout_seconds, h.max_concurrency, h.stateful, h.created_at, h.updated_at,
h.key_concurrency, h.rate_limit, h.key_rate_limit, h.adaptive,
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
                              key_rate_limit, adaptive)
    VALUES (:name, :url, :timeout_seconds, :max_concurrency, :stateful, :key_concurrency,
            CAST(:rate_limit AS jsonb), CAST(:key_rate_limit AS jsonb), :adaptive)
    ON CONFLICT (name) DO UPDATE
    SET url = EXCLUDED.url, timeout_seconds = EXCLUDED.timeout_seconds,
        max_concurrency = EXCLUDED.max_concurrency, stateful = EXCLUDED.stateful,
        key_concurrency = EXCLUDED.key_concurrency, rate_limit = EXCLUDED.rate_limit,
        key_rate_limit = EXCLUDED.key_rate_limit, adaptive = EXCLUDED.adaptive, updated_at = now()
    RETURNING name, url, timeout_seconds, max_concurrency, stateful, created_at, updated_at, key_concurrency,
              rate_limit, key_rate_limit, adaptive, (xmax = 0) AS created
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

-- name: handler_secrets_list
-- The named handlers' secrets that still sign (expires_at unset or ahead), newest first (the
-- order of the signatures); never their values.
SELECT id, handler, created_at, expires_at FROM job_handler_secrets
WHERE handler = ANY(:names) AND (expires_at IS NULL OR expires_at > now())
ORDER BY handler, created_at DESC, id DESC

-- name: handler_lock_for_secrets
-- Adding and deleting a handler's secrets hold its row FOR NO KEY UPDATE until commit, so they
-- run one at a time per handler (the "last secret" guard of handler_secret_delete, a later
-- statement, sees every earlier one committed), while enqueues (FOR KEY SHARE) and claims go on.
SELECT name FROM job_handlers WHERE name = :name FOR NO KEY UPDATE

-- name: handler_secret_add
-- A new signing secret (:secret as stored), newest of all; with :expire_after (seconds) the
-- handler's other active secrets expire that long from now (an earlier expiry is kept). Secrets
-- already expired are removed: they never sign again. One snapshot: the UPDATE does not see the
-- new row.
WITH expired AS (
    DELETE FROM job_handler_secrets WHERE handler = :name AND expires_at <= now()
), expiring AS (
    UPDATE job_handler_secrets
    SET expires_at = LEAST(expires_at, now() + make_interval(secs => CAST(:expire_after AS float8)))
    WHERE handler = :name AND CAST(:expire_after AS float8) IS NOT NULL
      AND (expires_at IS NULL OR expires_at > now())
)
INSERT INTO job_handler_secrets (handler, secret) VALUES (:name, :secret)
RETURNING id, handler, created_at, expires_at

-- name: handler_secret_delete
-- Run after handler_lock_for_secrets. Removes the secret unless it is the handler's last one
-- without an expiry (the others expired or expiring: it would be left with none that signs);
-- says whether it was found and whether it was removed.
WITH target AS (
    SELECT id, expires_at FROM job_handler_secrets WHERE id = :id AND handler = :name
), gone AS (
    DELETE FROM job_handler_secrets s
    USING target t
    WHERE s.id = t.id
      AND (t.expires_at IS NOT NULL
           OR EXISTS (SELECT 1 FROM job_handler_secrets o
                      WHERE o.handler = :name AND o.id <> t.id AND o.expires_at IS NULL))
    RETURNING s.id
)
SELECT EXISTS (SELECT 1 FROM target) AS found, EXISTS (SELECT 1 FROM gone) AS deleted

-- name: handler_secrets_stored
-- Every stored signing secret (expired ones too: they are at rest all the same), for the start-up
-- that seals them under this node's JOBWIRE_SECRET_KEY.
SELECT id, handler, secret FROM job_handler_secrets ORDER BY id

-- name: handler_secrets_reseal
-- Replace stored secrets (:ids, each from :stored to :sealed), each only if it is still as read:
-- nodes starting together all try, and each secret is sealed once (the others' writes match no
-- row and change nothing). The rows are locked in id order first, so two such batches wait for
-- each other instead of deadlocking. Returns the ids this statement changed.
WITH locked AS MATERIALIZED (
    SELECT id FROM job_handler_secrets WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR NO KEY UPDATE
)
UPDATE job_handler_secrets s SET secret = u.sealed
FROM unnest(CAST(:ids AS uuid[]), CAST(:stored AS text[]), CAST(:sealed AS text[])) AS u(id, stored, sealed)
WHERE s.id = u.id AND s.secret = u.stored AND s.id IN (SELECT id FROM locked)
RETURNING s.id

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
