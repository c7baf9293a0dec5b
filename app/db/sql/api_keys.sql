-- Named statements for job_api_keys (keys kept in the database: only each key's SHA-256 hash is
-- stored), parsed once by app/db/queries.py.

-- name: api_key_insert
INSERT INTO job_api_keys (name, key_hash, scopes, queues)
VALUES (:name, :key_hash, CAST(:scopes AS text[]), CAST(:queues AS text[]))
RETURNING id, name, scopes, queues, created_at

-- name: api_key_by_hash
-- The key a request presents, found by its hash through the unique index (the secret itself is
-- never stored, so never compared); key_hash comes back for the caller's constant-time check.
SELECT id, name, scopes, queues, created_at, key_hash FROM job_api_keys WHERE key_hash = :key_hash

-- name: api_keys_list
SELECT id, name, scopes, queues, created_at FROM job_api_keys ORDER BY created_at, id

-- name: api_keys_exist
SELECT EXISTS (SELECT 1 FROM job_api_keys)

-- name: api_keys_lock
-- Deletes of keys take turns (transaction-scoped, keyed by schema): the "is it the last (admin)
-- key?" check of one delete and its write cannot interleave with another's. Without it two
-- deletes of the last two keys would each see the other's key still there (READ COMMITTED) and
-- both succeed, leaving none: an open API (or, of the last two admin keys, none that can manage
-- keys: a lock-out).
SELECT pg_advisory_xact_lock(hashtext('jobwire:' || current_schema()), hashtext('api_keys'))

-- name: api_key_delete
-- Read after api_keys_lock, in a new statement: its snapshot sees every earlier holder's commit.
-- Deletes the key unless :keep_last (no bootstrap key is configured) and it is the last key (an
-- empty table would open the API) or the last key with scope admin (none would be left to manage
-- keys, handlers and schedules: a lock-out). No row: no such key, or one kept (the caller asks
-- api_key_kept_because which).
DELETE FROM job_api_keys k
WHERE k.id = :id
  AND (NOT :keep_last
       OR (EXISTS (SELECT 1 FROM job_api_keys o WHERE o.id <> k.id)
           AND (NOT 'admin' = ANY(k.scopes)
                OR EXISTS (SELECT 1 FROM job_api_keys o WHERE o.id <> k.id AND 'admin' = ANY(o.scopes)))))
RETURNING k.id

-- name: api_key_kept_because
-- Why api_key_delete kept key :id (in the same transaction, after it): 'last' (no other key),
-- 'last_admin' (no other key with scope admin); no row: there is no such key.
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM job_api_keys o WHERE o.id <> k.id) THEN 'last' ELSE 'last_admin' END
FROM job_api_keys k WHERE k.id = :id

-- name: api_key_by_id
-- A dashboard session's key (app/ui: the signed cookie holds its id), read on each request so a
-- deleted key's session ends.
SELECT id, name, scopes, queues, created_at FROM job_api_keys WHERE id = :id
