-- Named statements for job_handlers and job_meta, parsed once by app/db/queries.py.

-- name: handler_upsert
-- PUT semantics: the caller's definition replaces the stored one; the secret is minted on
-- insert only, as the handler's first signing secret (job_handler_secrets; job_handlers.secret
-- too, for nodes of the version before revision 20261201_0011). (xmax = 0) tells an insert from
-- an update.
WITH h AS (
    INSERT INTO job_handlers (name, url, timeout_seconds, max_concurrency, stateful, secret)
    VALUES (:name, :url, :timeout_seconds, :max_concurrency, :stateful, :secret)
    ON CONFLICT (name) DO UPDATE
    SET url = EXCLUDED.url, timeout_seconds = EXCLUDED.timeout_seconds,
        max_concurrency = EXCLUDED.max_concurrency, stateful = EXCLUDED.stateful, updated_at = now()
    RETURNING name, url, timeout_seconds, max_concurrency, stateful, secret, created_at, updated_at,
              (xmax = 0) AS created
), first_secret AS (
    INSERT INTO job_handler_secrets (handler, secret) SELECT h.name, :secret FROM h WHERE h.created
)
SELECT name, url, timeout_seconds, max_concurrency, stateful, secret, created_at, updated_at, created FROM h

-- name: handler_get
SELECT name, url, timeout_seconds, max_concurrency, stateful, secret, created_at, updated_at
FROM job_handlers WHERE name = :name

-- name: handlers_list
SELECT name, url, timeout_seconds, max_concurrency, stateful, secret, created_at, updated_at
FROM job_handlers ORDER BY name

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

-- name: migration_heads
-- The revisions alembic recorded (readiness compares them with this build's head).
SELECT version_num FROM alembic_version
