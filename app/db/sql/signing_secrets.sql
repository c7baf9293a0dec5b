-- Named statements of signing secrets, written once for the two kinds that have them: a handler's
-- (job_handler_secrets, owner column `handler`, owners job_handlers) and a subscription's
-- (job_subscription_secrets, `subscription`, job_subscriptions). app/db/signing_secrets.py gives
-- the fragments secrets, owner and owners. Every active secret (expires_at unset or ahead) signs each request.

-- name: secrets_list
-- The named owners' secrets that still sign, newest first (the order of the signatures); never
-- their values.
SELECT id, $owner AS owner, created_at, expires_at FROM $secrets
WHERE $owner = ANY(:names) AND (expires_at IS NULL OR expires_at > now())
ORDER BY $owner, created_at DESC, id DESC

-- name: lock_for_secrets
-- Adding and deleting an owner's secrets hold its row FOR NO KEY UPDATE until commit, so they
-- run one at a time per owner (the "last secret" guard of secret_delete, a later statement, sees
-- every earlier one committed), while enqueues (FOR KEY SHARE) and claims go on.
SELECT name FROM $owners WHERE name = :name FOR NO KEY UPDATE

-- name: secret_add
-- A new signing secret (:secret as stored), newest of all; with :expire_after (seconds) the
-- owner's other active secrets expire that long from now (an earlier expiry is kept). Secrets
-- already expired are removed: they never sign again. One snapshot: the UPDATE does not see the
-- new row.
WITH expired AS (
    DELETE FROM $secrets WHERE $owner = :name AND expires_at <= now()
), expiring AS (
    UPDATE $secrets
    SET expires_at = LEAST(expires_at, now() + make_interval(secs => CAST(:expire_after AS float8)))
    WHERE $owner = :name AND CAST(:expire_after AS float8) IS NOT NULL
      AND (expires_at IS NULL OR expires_at > now())
)
INSERT INTO $secrets ($owner, secret) VALUES (:name, :secret)
RETURNING id, $owner AS owner, created_at, expires_at

-- name: secret_delete
-- Run after lock_for_secrets. Removes the secret unless it is the owner's last one without an
-- expiry (the others expired or expiring: it would be left with none that signs); says whether it
-- was found and whether it was removed.
WITH target AS (
    SELECT id, expires_at FROM $secrets WHERE id = :id AND $owner = :name
), gone AS (
    DELETE FROM $secrets s
    USING target t
    WHERE s.id = t.id
      AND (t.expires_at IS NOT NULL
           OR EXISTS (SELECT 1 FROM $secrets o
                      WHERE o.$owner = :name AND o.id <> t.id AND o.expires_at IS NULL))
    RETURNING s.id
)
SELECT EXISTS (SELECT 1 FROM target) AS found, EXISTS (SELECT 1 FROM gone) AS deleted

-- name: secrets_stored
-- Every stored signing secret (expired ones too: they are at rest all the same), for the start-up
-- that seals them under this node's JOBWIRE_SECRET_KEY.
SELECT id, $owner AS owner, secret FROM $secrets ORDER BY id

-- name: secrets_reseal
-- Replace stored secrets (:ids, each from :stored to :sealed), each only if it is still as read:
-- nodes starting together all try, and each secret is sealed once (the others' writes match no
-- row and change nothing). The rows are locked in id order first, so two such batches wait for
-- each other instead of deadlocking. Returns the ids this statement changed.
WITH locked AS MATERIALIZED (
    SELECT id FROM $secrets WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR NO KEY UPDATE
)
UPDATE $secrets s SET secret = u.sealed
FROM unnest(CAST(:ids AS uuid[]), CAST(:stored AS text[]), CAST(:sealed AS text[])) AS u(id, stored, sealed)
WHERE s.id = u.id AND s.secret = u.stored AND s.id IN (SELECT id FROM locked)
RETURNING s.id

-- name: secrets_signing
-- Every secret that still signs, as stored, of the named owners: newest first (the order of the
-- signatures).
SELECT $owner AS owner, secret FROM $secrets
WHERE $owner = ANY(:names) AND (expires_at IS NULL OR expires_at > now())
ORDER BY $owner, created_at DESC, id DESC
