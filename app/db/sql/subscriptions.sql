-- Named statements of event subscriptions (job_subscriptions) and their deliveries
-- (job_event_deliveries), parsed once by app/db/queries.py. event_data is events.sql's fragment.

-- fragment: subscription_columns
s.name, s.url, s.types, s.queues, s.handlers, s.state, s.failing_since, s.failures, s.retry_at, s.last_error,
s.disabled_at, s.created_at, s.updated_at

-- fragment: backlog
(SELECT count(*) FROM job_event_deliveries d WHERE d.subscription = s.name AND d.status IN ('pending', 'failed'))

-- fragment: confined
-- A key limited to :confine (NULL: every queue) sees the subscriptions of its queues only: those
-- with a queue filter within them.
(CAST(:confine AS text[]) IS NULL OR (s.queues IS NOT NULL AND s.queues <@ CAST(:confine AS text[])))

-- fragment: matches
-- The event `ev` (a job_events row) is one subscription `s` wants.
(s.types IS NULL OR ev.type = ANY(s.types))
AND (s.queues IS NULL OR ev.event->>'queue' = ANY(s.queues))
AND (s.handlers IS NULL OR ev.event->>'handler' = ANY(s.handlers))

-- fragment: deliver_deleted
-- For a statement that deletes typed events (an execution deleted: DELETE, bulk-delete, retention,
-- a `tracked: false` schedule's success): the deliveries of those an enabled subscription has not
-- read yet (past its position), written now from the rows going, as the pump would have. Reads the
-- rows being deleted as `deleted_events` (job_events' columns). A pump racing it writes the same
-- delivery or none (the unique index); the event's other rows are still visible to event_data.
INSERT INTO job_event_deliveries (subscription, event_id, execution_id, type, occurred_at, data)
SELECT s.name, ev.id, ev.execution_id, ev.type, ev.occurred_at, $event_data
FROM deleted_events ev
JOIN job_subscriptions s ON s.state = 'enabled' AND (ev.xact, ev.id) > (s.pos_xact, s.pos_id)
WHERE ev.type IS NOT NULL AND $matches
  AND NOT pg_visible_in_snapshot(CAST(CAST(ev.xact AS text) AS xid8), CAST(s.since AS pg_snapshot))
ORDER BY s.name, ev.xact, ev.id
ON CONFLICT (subscription, event_id) DO NOTHING

-- fragment: deadline
-- When an open delivery `d` is dead: its own deadline (resent or recovered), else its creation's.
COALESCE(d.deadline_at, d.created_at + make_interval(secs => CAST(:retry_seconds AS float8)))

-- fragment: delivery_columns
d.id, d.subscription, d.event_id, d.execution_id, d.type, d.occurred_at, d.data, d.status, d.tries, d.created_at,
CASE WHEN d.status IN ('pending', 'failed') THEN d.next_try_at END AS next_try_at, d.last_try_at, d.last_status,
d.last_error, d.completed_at

-- name: subscription_upsert
-- PUT: a new subscription starts where the feed is now: at the oldest transaction still running,
-- `since` (this statement's snapshot) telling which events of the transactions from there on
-- committed before it (those are not its). Replacing one keeps its position, its snapshot and its
-- secrets, enables it and forgets its failures (a new URL is tried at once). The first secret
-- (:secret, as stored) is minted on insert only. A key limited to :confine replaces only a
-- subscription it sees (no row otherwise). (xmax = 0) tells an insert from an update.
WITH s AS (
    INSERT INTO job_subscriptions AS s (name, url, types, queues, handlers, since, pos_xact)
    VALUES (:name, :url, CAST(:types AS text[]), CAST(:queues AS text[]), CAST(:handlers AS text[]),
            CAST(pg_current_snapshot() AS text),
            CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint))
    ON CONFLICT (name) DO UPDATE
    SET url = EXCLUDED.url, types = EXCLUDED.types, queues = EXCLUDED.queues, handlers = EXCLUDED.handlers,
        state = 'enabled', disabled_at = NULL, failing_since = NULL, failures = 0, retry_at = NULL,
        updated_at = now()
    WHERE $confined
    RETURNING $subscription_columns, (xmax = 0) AS created
), first_secret AS (
    INSERT INTO job_subscription_secrets (subscription, secret) SELECT s.name, :secret FROM s WHERE s.created
)
SELECT s.*, $backlog AS backlog FROM s

-- name: subscription_get
SELECT $subscription_columns, $backlog AS backlog
FROM job_subscriptions s
WHERE s.name = :name AND $confined

-- name: subscriptions_list
SELECT $subscription_columns, $backlog AS backlog
FROM job_subscriptions s
WHERE $confined
ORDER BY s.name

-- name: subscription_delete
-- Its secrets and deliveries go with it (ON DELETE CASCADE).
DELETE FROM job_subscriptions s WHERE s.name = :name AND $confined RETURNING s.name

-- name: deliveries_pump
-- Every enabled subscription no other node is pumping (SKIP LOCKED) takes up to :batch typed
-- events after its position, of transactions below the oldest one still running (as the feed:
-- none can commit behind it), writes a delivery for each it wants (not one its creation's
-- snapshot shows committed: those came before it) and moves its position past every event read.
-- The delivery holds the item it sends, so it outlives the execution and the event row.
WITH subs AS MATERIALIZED (
    SELECT s.name, s.types, s.queues, s.handlers, s.since, s.pos_xact, s.pos_id
    FROM job_subscriptions s
    WHERE s.state = 'enabled'
    ORDER BY s.name
    FOR NO KEY UPDATE SKIP LOCKED
), horizon AS MATERIALIZED (
    SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint) AS xmin
), scanned AS MATERIALIZED (
    SELECT s.name AS subscription, ev.id, ev.xact, ev.execution_id, ev.type, ev.occurred_at, ev.data,
           ev.wanted
    FROM subs s CROSS JOIN horizon h
    CROSS JOIN LATERAL (
        SELECT ev.id, ev.xact, ev.execution_id, ev.type, ev.occurred_at, $event_data AS data,
               ($matches) AND NOT pg_visible_in_snapshot(CAST(CAST(ev.xact AS text) AS xid8),
                                                         CAST(s.since AS pg_snapshot)) AS wanted
        FROM job_events ev
        WHERE ev.type IS NOT NULL AND (ev.xact, ev.id) > (s.pos_xact, s.pos_id) AND ev.xact < h.xmin
        ORDER BY ev.xact, ev.id
        LIMIT :batch
    ) ev
), written AS (
    INSERT INTO job_event_deliveries (subscription, event_id, execution_id, type, occurred_at, data, deadline_at)
    SELECT c.subscription, c.id, c.execution_id, c.type, c.occurred_at, c.data,
           now() + make_interval(secs => CAST(:retry_seconds AS float8))
    FROM scanned c
    WHERE c.wanted
    ORDER BY c.subscription, c.xact, c.id
    ON CONFLICT (subscription, event_id) DO NOTHING
    RETURNING 1
), moved AS (
    UPDATE job_subscriptions j SET pos_xact = l.xact, pos_id = l.id
    FROM (SELECT DISTINCT ON (c.subscription) c.subscription, c.xact, c.id
          FROM scanned c ORDER BY c.subscription, c.xact DESC, c.id DESC) l
    WHERE j.name = l.subscription
)
SELECT (SELECT count(*) FROM scanned) AS scanned, (SELECT count(*) FROM written) AS written,
       (SELECT count(*) FROM subs) AS subscriptions

-- fragment: earlier_open
-- An earlier event of the same execution still open to the same subscriber (the delivery `d`
-- waits for it), found through ix_job_event_deliveries_order (subscription, execution_id,
-- event_id): a parameterized lookup per candidate, the first in that index's order (which no
-- other index gives without a sort). As NOT EXISTS, the plan made from statistics of an empty
-- table rescanned every open delivery of the subscription for each candidate (the bench's events
-- step: 3,960 rows for each of 16, 72 ms a lease).
(SELECT o.event_id FROM job_event_deliveries o
 WHERE o.subscription = d.subscription AND o.execution_id = d.execution_id
   AND o.event_id < d.event_id AND o.status IN ('pending', 'failed')
 ORDER BY o.event_id
 LIMIT 1) AS earlier

-- name: deliveries_claim
-- Up to :limit due deliveries for this node to send, each leased for :lease seconds (a node that
-- dies with it leaves it to another once the lease runs out). A healthy subscription's due ones,
-- oldest due first; a failing one's single probe, when it is due and no other node holds it (its
-- row locked here; retry_at moved past the lease, so no second probe starts meanwhile). Per
-- execution, a delivery waits while an earlier event of it is open to the same subscriber.
WITH healthy AS MATERIALIZED (
    SELECT s.name FROM job_subscriptions s WHERE s.state = 'enabled' AND s.failing_since IS NULL
), probing AS MATERIALIZED (
    SELECT s.name FROM job_subscriptions s
    WHERE s.state = 'enabled' AND s.failing_since IS NOT NULL AND s.retry_at <= now()
    FOR NO KEY UPDATE SKIP LOCKED
), due AS MATERIALIZED (
    SELECT d.id, d.subscription FROM healthy s
    CROSS JOIN LATERAL (
        SELECT d.id, d.subscription, d.next_try_at FROM job_event_deliveries d
        LEFT JOIN LATERAL $earlier_open ON true
        WHERE d.subscription = s.name AND d.status IN ('pending', 'failed') AND d.next_try_at <= now()
          AND (d.leased_until IS NULL OR d.leased_until <= now()) AND earlier.event_id IS NULL
        ORDER BY d.next_try_at
        LIMIT :limit
        FOR NO KEY UPDATE OF d SKIP LOCKED
    ) d
    UNION ALL
    -- A probe: the open delivery due soonest (tried or not: a subscriber that refuses one event
    -- is probed with another), not one still leased.
    SELECT d.id, d.subscription FROM probing s
    CROSS JOIN LATERAL (
        SELECT d.id, d.subscription FROM job_event_deliveries d
        LEFT JOIN LATERAL $earlier_open ON true
        WHERE d.subscription = s.name AND d.status IN ('pending', 'failed')
          AND (d.leased_until IS NULL OR d.leased_until <= now()) AND earlier.event_id IS NULL
        ORDER BY d.next_try_at
        LIMIT 1
        FOR NO KEY UPDATE OF d SKIP LOCKED
    ) d
), picked AS MATERIALIZED (
    SELECT id, subscription FROM due ORDER BY id LIMIT :limit
), held AS (
    UPDATE job_subscriptions s SET retry_at = now() + make_interval(secs => CAST(:lease AS float8))
    WHERE s.name IN (SELECT p.subscription FROM picked p WHERE p.subscription IN (SELECT name FROM probing))
), u AS (
    -- No indexed column changes: a heap-only update where the page has room (the table's fillfactor
    -- leaves it), no index written.
    UPDATE job_event_deliveries d
    SET tries = d.tries + 1, last_try_at = now(),
        leased_until = now() + make_interval(secs => CAST(:lease AS float8))
    FROM picked p
    WHERE d.id = p.id
    RETURNING d.id, d.subscription, d.tries, d.event_id, d.type, d.occurred_at, d.data
), secrets AS (
    SELECT x.subscription, array_agg(x.secret ORDER BY x.created_at DESC, x.id DESC) AS secrets
    FROM job_subscription_secrets x
    WHERE x.subscription IN (SELECT DISTINCT u.subscription FROM u) AND (x.expires_at IS NULL OR x.expires_at > now())
    GROUP BY x.subscription
)
SELECT u.id, u.subscription, u.tries, u.event_id, u.type, u.occurred_at, u.data, s.url, x.secrets
FROM u JOIN job_subscriptions s ON s.name = u.subscription
LEFT JOIN secrets x ON x.subscription = u.subscription
ORDER BY u.id

-- name: deliveries_record
-- The outcomes of tries (arrays, one element per try, in the order they ended): each only if it
-- is still the try a node holds (:tries; a lease that ran out and was taken again is another's).
-- Acknowledged: delivered. Else failed, tried again after the doubling delay (:first_delay,
-- doubling, at most :max_delay), or dead when that passes its deadline or the destination is
-- refused. A subscription's state follows its last outcome: a failure starts (or continues) its
-- failing and puts its next probe off by the same delay, a success ends it; a subscription that
-- is not failing is not written by successes.
WITH o AS (
    SELECT * FROM unnest(CAST(:ids AS bigint[]), CAST(:tries AS int[]), CAST(:ok AS boolean[]),
                         CAST(:statuses AS int[]), CAST(:errors AS text[]), CAST(:refused AS boolean[]))
                  WITH ORDINALITY AS o(id, tries, ok, status, error, refused, n)
), cur AS (
    SELECT o.*, d.subscription,
           now() + make_interval(secs => LEAST(CAST(:first_delay AS float8) * power(2, LEAST(GREATEST(d.tries - 1, 0), 20)),
                                               CAST(:max_delay AS float8))) AS next_at,
           $deadline AS deadline_at
    FROM o JOIN job_event_deliveries d ON d.id = o.id
), settled AS (
    SELECT cur.*, CASE WHEN cur.ok THEN 'delivered'
                       WHEN cur.refused OR cur.next_at > cur.deadline_at THEN 'dead'
                       ELSE 'failed' END AS status_after
    FROM cur
), d AS (
    UPDATE job_event_deliveries d
    SET status = x.status_after,
        next_try_at = CASE WHEN x.status_after = 'failed' THEN x.next_at ELSE d.next_try_at END,
        completed_at = CASE WHEN x.status_after <> 'failed' THEN now() END,
        leased_until = NULL, last_status = x.status, last_error = x.error
    FROM settled x
    WHERE d.id = x.id AND d.tries = x.tries AND d.status IN ('pending', 'failed')
    RETURNING d.subscription, x.ok, x.error, x.n
), last AS (
    SELECT DISTINCT ON (d.subscription) d.subscription, d.ok, d.error FROM d ORDER BY d.subscription, d.n DESC
)
UPDATE job_subscriptions s
SET failing_since = CASE WHEN l.ok THEN NULL ELSE COALESCE(s.failing_since, now()) END,
    failures = CASE WHEN l.ok THEN 0 ELSE s.failures + 1 END,
    retry_at = CASE WHEN l.ok THEN NULL
                    ELSE now() + make_interval(secs => LEAST(CAST(:first_delay AS float8) * power(2, LEAST(s.failures, 20)),
                                                             CAST(:max_delay AS float8))) END,
    last_error = CASE WHEN l.ok THEN s.last_error ELSE l.error END
FROM last l
WHERE s.name = l.subscription AND (NOT l.ok OR s.failing_since IS NOT NULL)
RETURNING s.name, l.ok

-- name: deliveries_expire
-- Open deliveries past their deadline that no node holds (a subscription that fails probes one at
-- a time: the rest wait and run out here), at most :limit a run: dead.
WITH expired AS (
    SELECT d.id FROM job_event_deliveries d
    WHERE d.status IN ('pending', 'failed') AND $deadline <= now()
      AND (d.leased_until IS NULL OR d.leased_until <= now())
    LIMIT :limit
    FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE job_event_deliveries d
SET status = 'dead', completed_at = now(), leased_until = NULL,
    last_error = COALESCE(d.last_error || '; ', '') || 'not delivered within JOBWIRE_EVENT_RETRY_SECONDS'
FROM expired e WHERE d.id = e.id
RETURNING d.id

-- name: subscriptions_disable
-- Enabled subscriptions failing since before :disable_after seconds ago: disabled (their
-- deliveries kept). Returns them, for the warning.
UPDATE job_subscriptions s
SET state = 'disabled', disabled_at = now(), updated_at = now()
WHERE s.state = 'enabled' AND s.failing_since <= now() - make_interval(secs => CAST(:disable_after AS float8))
RETURNING s.name, s.failing_since, s.last_error

-- name: deliveries_prune
-- Delivered deliveries older than :delivered seconds and dead ones older than :dead seconds (0:
-- kept forever, as the executions' retention), at most :limit a run.
DELETE FROM job_event_deliveries d
WHERE d.id IN (SELECT x.id FROM job_event_deliveries x
               WHERE (x.status = 'dead' AND CAST(:dead AS float8) > 0
                      AND x.completed_at < now() - make_interval(secs => CAST(:dead AS float8)))
                  OR (x.status = 'delivered' AND CAST(:delivered AS float8) > 0
                      AND x.completed_at < now() - make_interval(secs => CAST(:delivered AS float8)))
               LIMIT :limit)
RETURNING d.id

-- name: deliveries_page
-- GET /v1/subscriptions/{name}/deliveries: newest first, after the cursor (:before, an id), of a
-- status when given (index ix_job_event_deliveries_status).
SELECT $delivery_columns
FROM job_event_deliveries d
WHERE d.subscription = :name AND d.id < :before AND (CAST(:status AS text) IS NULL OR d.status = :status)
ORDER BY d.id DESC
LIMIT :limit

-- name: delivery_resend
-- Send it again, now, with a new deadline; refused (no row) while a node holds it.
UPDATE job_event_deliveries d
SET status = CASE WHEN d.status = 'failed' THEN 'failed' ELSE 'pending' END, next_try_at = now(),
    deadline_at = now() + make_interval(secs => CAST(:retry_seconds AS float8)), completed_at = NULL
WHERE d.id = :id AND d.subscription = :name AND (d.leased_until IS NULL OR d.leased_until <= now())
RETURNING $delivery_columns

-- name: delivery_get
SELECT $delivery_columns, (d.leased_until > now()) AS leased
FROM job_event_deliveries d WHERE d.id = :id AND d.subscription = :name

-- name: deliveries_recover
-- POST /v1/subscriptions/{name}/recover: every stored event of [:since, :until) the subscription
-- wants, up to :limit after (:after_at, :after_id), sent again: a delivery written, or an existing
-- one opened again (unless a node holds it). :until NULL: now. Returns the window's end (for the
-- next batch), the position reached and how many it sent.
WITH s AS (
    SELECT s.name, s.types, s.queues, s.handlers FROM job_subscriptions s WHERE s.name = :name
), window_ AS MATERIALIZED (
    SELECT ev.id, ev.execution_id, ev.type, ev.occurred_at, $event_data AS data, ($matches) AS wanted
    FROM job_events ev CROSS JOIN s
    WHERE ev.type IS NOT NULL AND ev.occurred_at >= :since
      AND ev.occurred_at < COALESCE(CAST(:until AS timestamptz), now())
      AND (ev.occurred_at, ev.id) > (CAST(:after_at AS timestamptz), CAST(:after_id AS bigint))
    ORDER BY ev.occurred_at, ev.id
    LIMIT :limit
), sent AS (
    INSERT INTO job_event_deliveries AS d (subscription, event_id, execution_id, type, occurred_at, data, deadline_at)
    SELECT :name, w.id, w.execution_id, w.type, w.occurred_at, w.data,
           now() + make_interval(secs => CAST(:retry_seconds AS float8))
    FROM window_ w WHERE w.wanted
    ORDER BY w.id
    ON CONFLICT (subscription, event_id) DO UPDATE
    SET status = CASE WHEN d.status = 'failed' THEN 'failed' ELSE 'pending' END, next_try_at = now(),
        deadline_at = EXCLUDED.deadline_at, completed_at = NULL
    WHERE d.leased_until IS NULL OR d.leased_until <= now()
    RETURNING 1
)
SELECT COALESCE(CAST(:until AS timestamptz), now()) AS until,
       (SELECT count(*) FROM window_) AS scanned, (SELECT count(*) FROM sent) AS sent,
       (SELECT max(w.occurred_at) FROM window_ w) AS last_at,
       (SELECT w.id FROM window_ w ORDER BY w.occurred_at DESC, w.id DESC LIMIT 1) AS last_id
