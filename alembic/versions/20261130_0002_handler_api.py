"""handler API: jobwire_enqueue(jobs jsonb), the one insert path of the API and of applications.

Creates, in the schema the tables live in:

- `jobwire_enqueue(jobs jsonb) RETURNS TABLE (ord, created, <execution columns>, idempotency_key)`:
  inserts a JSON array of jobs set-based, exactly as `POST /v1/jobs` and `/v1/jobs/batch` do
  (they call it too): the same validation, defaults, stateful forcing, idempotency keys (the
  request fingerprint is computed here), ENQUEUED event and NOTIFY. An application sharing the
  database calls it on its own connection, so the job commits or rolls back with its business
  data (the outbox pattern). One row per input item, `ord` its zero-based position; `created`
  is false when an idempotency key returned an execution stored before. Invalid input raises
  SQLSTATE 22023 with CONSTRAINT `jobwire_enqueue`, a readable MESSAGE and, in DETAIL, a JSON
  array of `{field, message}` (fields `jobs[i].name`).
- `jobwire_parse_time(text)`: an RFC 3339 time with a zone as timestamptz, or NULL.

Both pin `search_path` to that schema (callers with any search_path reach the right tables:
call them schema-qualified) and `jobwire_enqueue` pins `TimeZone = 'UTC'` (times inside the
event are rendered as the API renders them). The NOTIFY channel is baked in at creation from
JOBWIRE_DB_SCHEMA, as app.db.database.Database.notify_channel names it.

The function's result columns are named (no SETOF job_executions): a later revision that adds
an execution column the API returns replaces the function.

Revision ID: 20261130_0002
Revises: 20261129_0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import context, op

revision = "20261130_0002"
down_revision = "20261129_0001"
branch_labels = None
depends_on = None

NAME = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$"
# The same, faster: PostgreSQL expands a bounded repetition into hundreds of states (~5 µs a match).
NAME_FAST = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
TRACEPARENT = r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
SEVEN_DAYS = 7 * 86400
YEAR = 365 * 86400
KEYS = ("handler", "payload", "job_id", "queue", "priority", "run_at", "delay_seconds", "max_attempts",
        "stateful", "timeout_seconds", "max_duration_seconds", "parameters", "metadata", "idempotency_key",
        "traceparent")

PARSE_TIME = r"""
CREATE FUNCTION {schema}.jobwire_parse_time(value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE STRICT
SET search_path = {schema}
AS $fn$
DECLARE
    parsed timestamptz;
BEGIN
    -- RFC 3339 with a zone (Z or ±hh:mm); the result must fit years 1-9999 in UTC.
    IF value IS NULL OR value !~ '^\d{{4}}-\d{{2}}-\d{{2}}[Tt ]\d{{2}}:\d{{2}}:\d{{2}}(\.\d{{1,9}})?([Zz]|[+-]\d{{2}}:\d{{2}})$' THEN
        RETURN NULL;
    END IF;
    parsed := CAST(value AS timestamptz);
    IF parsed < TIMESTAMPTZ '0001-01-01 00:00:00+00' OR parsed > TIMESTAMPTZ '9999-12-31 23:59:59.999999+00' THEN
        RETURN NULL;
    END IF;
    RETURN parsed;
EXCEPTION WHEN data_exception THEN  -- e.g. 2030-02-30: the pattern cannot see the calendar
    RETURN NULL;
END
$fn$
"""


def _present(key: str) -> str:
    # jsonb_to_record turns an absent key and a JSON null alike into SQL NULL.
    return f"t.{key} IS NOT NULL"


def _text(key: str) -> str:
    return f"(t.{key} #>> '{{}}')"


def _name(key: str, required: bool = False) -> str:
    missing = "'field required'" if required else "NULL"
    return (f"CASE WHEN t.{key} IS NULL THEN {missing} "
            f"WHEN jsonb_typeof(t.{key}) <> 'string' OR length({_text(key)}) > 255 OR {_text(key)} !~ '{NAME_FAST}' "
            f"THEN 'must be a string matching {NAME}' END")


def _integer(key: str, low: int, high: int) -> str:
    message = f"'must be an integer from {low} to {high}'"
    # CASE, not OR: only CASE fixes the order, and the cast must come after the type checks.
    return (f"CASE WHEN t.{key} IS NULL THEN NULL "
            f"WHEN jsonb_typeof(t.{key}) <> 'number' THEN {message} "
            f"WHEN {_text(key)} !~ '^-?[0-9]+$' THEN {message} "
            f"WHEN CAST(t.{key} AS numeric) NOT BETWEEN {low} AND {high} THEN {message} END")


def _seconds(key: str, zero_allowed: bool, high: int) -> str:
    low, wording = (">= 0", "at least 0") if zero_allowed else ("> 0", "greater than 0")
    return (f"CASE WHEN t.{key} IS NULL THEN NULL "
            f"WHEN jsonb_typeof(t.{key}) <> 'number' THEN 'must be a number of seconds' "
            f"WHEN NOT (CAST(t.{key} AS numeric) {low} AND CAST(t.{key} AS numeric) <= {high}) "
            f"THEN 'must be {wording} and at most {high} seconds' END")


def _object(key: str) -> str:
    return f"CASE WHEN jsonb_typeof(t.{key}) <> 'object' THEN 'must be a JSON object or null' END"


CHECKS = [
    ("handler", _name("handler", required=True)),
    ("job_id", _name("job_id")),
    ("queue", _name("queue")),
    ("idempotency_key", _name("idempotency_key")),
    ("priority", _integer("priority", -(2**31), 2**31 - 1)),
    ("max_attempts", _integer("max_attempts", 1, 1000)),
    ("stateful", "CASE WHEN jsonb_typeof(t.stateful) <> 'boolean' THEN 'must be true or false' END"),
    ("timeout_seconds", _seconds("timeout_seconds", False, SEVEN_DAYS)),
    ("max_duration_seconds", _seconds("max_duration_seconds", False, SEVEN_DAYS)),
    ("delay_seconds", f"CASE WHEN {_present('delay_seconds')} AND {_present('run_at')} "
                      "THEN 'give run_at or delay_seconds, not both' END"),
    ("delay_seconds", _seconds("delay_seconds", True, YEAR)),
    ("run_at", "CASE WHEN t.run_at IS NULL THEN NULL "
               f"WHEN jsonb_typeof(t.run_at) <> 'string' OR jobwire_parse_time({_text('run_at')}) IS NULL "
               "THEN 'must be an RFC 3339 time with a time zone, within the years 1-9999 in UTC' END"),
    ("parameters", _object("parameters")),
    ("metadata", _object("metadata")),
    ("traceparent", "CASE WHEN t.traceparent IS NULL THEN NULL "
                    f"WHEN jsonb_typeof(t.traceparent) <> 'string' OR {_text('traceparent')} !~ '{TRACEPARENT}' "
                    f"OR substr({_text('traceparent')}, 4, 32) = repeat('0', 32) "
                    f"OR substr({_text('traceparent')}, 37, 16) = repeat('0', 16) "
                    "THEN 'must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero' END"),
]

# Every item with each known key as raw jsonb (NULL when absent or null), for the checks.
ITEMS = (
    "SELECT t.ord, t.j, r.* FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord) "
    "CROSS JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j ELSE '{}' END) "
    f"AS r({', '.join(f'{key} jsonb' for key in KEYS)})"
)

KNOWN = "ARRAY[" + ", ".join(f"'{key}'" for key in KEYS) + "]"

# Any fault at all, in one pass (the common case: none). Only then does VALIDATE name them all.
FAULTY = (
    f"CASE WHEN jsonb_typeof(t.j) <> 'object' THEN true WHEN t.j - {KNOWN} <> '{{}}' THEN true "
    "ELSE COALESCE(\n            " + ",\n            ".join(check for _, check in CHECKS) + "\n        ) IS NOT NULL END"
)

VALIDATE = "\n        UNION ALL\n        ".join(
    [
        # An item that is not an object gets that error alone.
        "SELECT t.ord, 0, '', 'must be a JSON object' FROM items t WHERE jsonb_typeof(t.j) <> 'object'",
        # Unknown keys (the API refuses them too).
        "SELECT t.ord, 1, k.key, 'unknown field' FROM items t, jsonb_object_keys("
        f"CASE WHEN jsonb_typeof(t.j) = 'object' THEN t.j - {KNOWN} ELSE '{{}}' END) AS k(key)",
        # One array of checks per item (not LATERAL VALUES: PostgreSQL compiles the expressions of
        # a lateral VALUES list again for every item, which costs several times as much).
        "SELECT t.ord, c.rank + 1, c.key, c.message FROM items t, LATERAL unnest(\n            ARRAY[\n            "
        + ",\n            ".join(check for _, check in CHECKS)
        + "\n            ],\n            ARRAY[" + ", ".join(f"'{key}'" for key, _ in CHECKS) + "]\n"
        "        ) WITH ORDINALITY AS c(message, key, rank) "
        "WHERE jsonb_typeof(t.j) = 'object' AND c.message IS NOT NULL",
    ]
)

# The (valid) input with defaults applied, ids minted beforehand (ids[ord]) so that a later
# statement can tell inserted items from those an idempotency key skipped. The fingerprint
# hashes the request as sent, defaults applied (run_at in UTC, delay_seconds as given, stateful
# before a stateful handler forces it), without idempotency_key and traceparent.
INPUT = """
    SELECT CAST(r.ord - 1 AS int) AS ord, ids[r.ord] AS id, r.handler, r.job_id,
           COALESCE(r.queue, 'default') AS queue, COALESCE(r.priority, 0) AS priority, r.payload, r.parameters,
           CASE
               WHEN r.traceparent IS NULL THEN r.metadata
               WHEN r.metadata IS NULL
                   THEN jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
               WHEN NULLIF(r.metadata->'context', 'null') IS NULL
                   THEN r.metadata || jsonb_build_object('context', jsonb_build_object('traceparent', r.traceparent))
               WHEN jsonb_typeof(r.metadata->'context') = 'object' AND NOT (r.metadata->'context') ? 'traceparent'
                   THEN jsonb_set(r.metadata, '{context,traceparent}', to_jsonb(r.traceparent))
               ELSE r.metadata  -- the body's own context (or traceparent) wins
           END AS metadata,
           jobwire_parse_time(r.run_at) AS run_at, r.delay_seconds, COALESCE(r.max_attempts, 5) AS max_attempts,
           COALESCE(r.stateful, false) AS stateful, r.timeout_seconds, r.max_duration_seconds, r.idempotency_key,
           CASE WHEN r.idempotency_key IS NOT NULL THEN encode(sha256(convert_to(CAST(jsonb_build_object(
               'handler', r.handler, 'job_id', r.job_id, 'queue', COALESCE(r.queue, 'default'),
               'priority', COALESCE(r.priority, 0), 'payload', r.payload, 'parameters', r.parameters,
               'metadata', r.metadata, 'run_at', jobwire_parse_time(r.run_at), 'delay_seconds', r.delay_seconds,
               'max_attempts', COALESCE(r.max_attempts, 5), 'stateful', COALESCE(r.stateful, false),
               'timeout_seconds', r.timeout_seconds, 'max_duration_seconds', r.max_duration_seconds
           ) AS text), 'UTF8')), 'hex') END AS request_hash
    FROM ROWS FROM (jsonb_to_recordset(jobs) AS (
        handler text, job_id text, queue text, priority int, payload jsonb, parameters jsonb, metadata jsonb,
        run_at text, delay_seconds float8, max_attempts int, stateful boolean, timeout_seconds float8,
        max_duration_seconds float8, idempotency_key text, traceparent text)
    ) WITH ORDINALITY AS r(handler, job_id, queue, priority, payload, parameters, metadata, run_at, delay_seconds,
                           max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
                           traceparent, ord)
"""

COLUMNS = ("id", "job_id", "job_type", "handler", "queue", "state", "attempt", "max_attempts", "priority",
           "stateful", "payload", "parameters", "metadata", "result", "progress", "scheduled_at", "created_at",
           "started_at", "completed_at", "deadline_at", "locked_by", "last_error", "error_type", "timeout_seconds",
           "max_duration_seconds", "idempotency_key")
RETURNS = """
    ord int, created boolean,
    id uuid, job_id text, job_type text, handler text, queue text, state text, attempt int, max_attempts int,
    priority int, stateful boolean, payload jsonb, parameters jsonb, metadata jsonb, result jsonb, progress jsonb,
    scheduled_at timestamptz, created_at timestamptz, started_at timestamptz, completed_at timestamptz,
    deadline_at timestamptz, locked_by text, last_error text, error_type text, timeout_seconds float8,
    max_duration_seconds float8, idempotency_key text"""

# The curated transition event of DESIGN §4 (as app/db/queries.py's $EVENT writes it).
EVENT = ("jsonb_build_object('execution_id', ins.id, 'job_id', ins.job_id, 'job_type', ins.job_type, "
         "'queue', ins.queue, 'handler', ins.handler, 'new_state', ins.state, 'attempt', ins.attempt, "
         "'max_attempts', ins.max_attempts, 'error_type', ins.error_type, 'scheduled_at', ins.scheduled_at, "
         "'created_at', ins.created_at, 'started_at', ins.started_at, 'completed_at', ins.completed_at, "
         "'metadata', ins.metadata)")


def _cols(alias: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in COLUMNS)


ENQUEUE = """
CREATE FUNCTION {schema}.jobwire_enqueue(jobs jsonb) RETURNS TABLE ({returns})
LANGUAGE plpgsql VOLATILE
SET search_path = {schema}
SET TimeZone = 'UTC'
AS $fn$
#variable_conflict use_column
DECLARE
    n_jobs int;
    ids uuid[];
    errors jsonb;
    n_errors int;
    inserted int;
    resolved int;
BEGIN
    IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN
        RAISE EXCEPTION 'jobwire_enqueue: jobs must be a JSON array of job objects'
            USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'jobwire_enqueue',
                  DETAIL = '[{{"field": "jobs", "message": "must be a JSON array of job objects"}}]';
    END IF;
    n_jobs := jsonb_array_length(jobs);
    IF n_jobs = 0 THEN
        RETURN;
    END IF;

    -- 1. Validate every item (set-based): one pass finds whether anything is wrong, a second
    --    one (only then) names every field at fault.
    WITH items AS ({items})
    SELECT count(*) INTO n_errors FROM items t WHERE {faulty};
    IF n_errors > 0 THEN
        WITH items AS ({items}),
        found(ord, rank, key, message) AS (
        {validate}
        )
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s]', f.ord - 1) || CASE WHEN f.key = '' THEN '' ELSE '.' || f.key END,
                   'message', f.message) ORDER BY f.ord, f.rank)
        INTO errors
        FROM (SELECT * FROM found ORDER BY ord, rank LIMIT 100) AS f;
        PERFORM jobwire_enqueue_refuse(errors);
    END IF;

    -- 2. The handlers must exist. FOR KEY SHARE until commit: a concurrent delete of a handler
    --    waits for this transaction, then sees its jobs.
    PERFORM 1 FROM job_handlers h
    WHERE h.name IN (SELECT DISTINCT t.j->>'handler' FROM jsonb_array_elements(jobs) AS t(j))
    ORDER BY h.name
    FOR KEY SHARE;
    SELECT jsonb_agg(jsonb_build_object(
               'field', format('jobs[%s].handler', t.ord - 1),
               'message', format('no handler named %L is registered', t.j->>'handler')) ORDER BY t.ord),
           count(*)
    INTO errors, n_errors
    FROM jsonb_array_elements(jobs) WITH ORDINALITY AS t(j, ord)
    WHERE NOT EXISTS (SELECT 1 FROM job_handlers h WHERE h.name = t.j->>'handler');
    IF n_errors > 0 THEN
        PERFORM jobwire_enqueue_refuse(errors);
    END IF;

    -- 3. Insert, in input order, with one ENQUEUED event each. A stored idempotency key inserts
    --    nothing (a concurrent insert of the same key is waited for: the unique index decides).
    ids := ARRAY(SELECT gen_random_uuid() FROM generate_series(1, n_jobs));
    RETURN QUERY
    WITH input AS ({input}), ins AS (
        INSERT INTO job_executions AS e (
            id, job_id, job_type, handler, queue, state, priority, payload, parameters, metadata,
            max_attempts, stateful, timeout_seconds, max_duration_seconds, idempotency_key,
            request_hash, scheduled_at)
        SELECT i.id, COALESCE(i.job_id, CAST(i.id AS text)), 'DELAYED', i.handler, i.queue, 'ENQUEUED',
               i.priority, i.payload, i.parameters, i.metadata, i.max_attempts,
               i.stateful OR h.stateful,  -- a stateful handler makes every job sent to it stateful
               i.timeout_seconds, i.max_duration_seconds, i.idempotency_key, i.request_hash,
               COALESCE(i.run_at, now() + make_interval(secs => COALESCE(i.delay_seconds, 0)))
        FROM input i JOIN job_handlers h ON h.name = i.handler
        ORDER BY i.ord
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING {e_columns}
    ), ev AS (
        INSERT INTO job_events (execution_id, event) SELECT ins.id, {event} FROM ins
    )
    SELECT i.ord, true, {ins_columns} FROM ins JOIN input i ON i.id = ins.id;
    GET DIAGNOSTICS inserted = ROW_COUNT;

    -- 4. Items whose key was stored before (or earlier in this array): that execution, provided
    --    the request is the same. A new statement: its snapshot sees a concurrent insert of the
    --    key that committed while step 3 waited for it.
    IF inserted < n_jobs THEN
        WITH input AS ({input})
        SELECT jsonb_agg(jsonb_build_object(
                   'field', format('jobs[%s].idempotency_key', i.ord),
                   'message', format('idempotency key %L was used with a different request body',
                                     i.idempotency_key)) ORDER BY i.ord),
               count(*)
        INTO errors, n_errors
        FROM input i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id)
          AND x.request_hash IS DISTINCT FROM i.request_hash;
        IF n_errors > 0 THEN
            PERFORM jobwire_enqueue_refuse(errors);
        END IF;
        RETURN QUERY
        WITH input AS ({input})
        SELECT i.ord, false, {x_columns}
        FROM input i JOIN job_executions x ON x.idempotency_key = i.idempotency_key
        WHERE i.idempotency_key IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM job_executions y WHERE y.id = i.id);
        GET DIAGNOSTICS resolved = ROW_COUNT;
        IF inserted + resolved < n_jobs THEN
            -- Only a row deleted between the two statements can do this: try again.
            RAISE EXCEPTION 'jobwire_enqueue: an idempotency key''s execution vanished; retry'
                USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;

    IF inserted > 0 THEN
        PERFORM pg_notify({channel}, '');  -- wakes the dispatchers on commit
    END IF;
END
$fn$
"""

REFUSE = """
CREATE FUNCTION {schema}.jobwire_enqueue_refuse(errors jsonb) RETURNS void
LANGUAGE plpgsql
SET search_path = {schema}
AS $fn$
DECLARE
    total int := jsonb_array_length(errors);
BEGIN
    RAISE EXCEPTION '%', format('jobwire_enqueue: %s: %s%s', errors->0->>'field', errors->0->>'message',
                                CASE WHEN total > 1 THEN format(' (and %s more)', total - 1) ELSE '' END)
        USING ERRCODE = 'invalid_parameter_value', CONSTRAINT = 'jobwire_enqueue', DETAIL = CAST(errors AS text),
              HINT = 'DETAIL lists every field at fault as a JSON array of {{field, message}}';
END
$fn$
"""


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def upgrade() -> None:
    bind = op.get_bind()
    schema = bind.exec_driver_sql("SELECT quote_ident(current_schema())").scalar_one()
    configured = context.config.attributes.get("schema")
    channel = _literal(f"jobwire_{configured or 'default'}_enqueued")
    bind.exec_driver_sql(PARSE_TIME.format(schema=schema))
    bind.exec_driver_sql(REFUSE.format(schema=schema))
    input_sql = INPUT.replace("\n", "\n    ")
    bind.exec_driver_sql(ENQUEUE.format(
        schema=schema, returns=RETURNS, items=ITEMS, faulty=FAULTY, validate=VALIDATE, input=input_sql, channel=channel, event=EVENT,
        e_columns=_cols("e"), ins_columns=_cols("ins"), x_columns=_cols("x"),
    ))
    bind.exec_driver_sql(f"COMMENT ON FUNCTION {schema}.jobwire_enqueue(jsonb) IS "
                         + _literal("Enqueue a JSON array of jobs in the caller's transaction, as POST /v1/jobs "
                                    "does; see Jobwire's README, 'Transactional enqueue'."))


def downgrade() -> None:
    bind = op.get_bind()
    schema = bind.exec_driver_sql("SELECT quote_ident(current_schema())").scalar_one()
    bind.exec_driver_sql(f"DROP FUNCTION {schema}.jobwire_enqueue(jsonb)")
    bind.exec_driver_sql(f"DROP FUNCTION {schema}.jobwire_enqueue_refuse(jsonb)")
    bind.exec_driver_sql(f"DROP FUNCTION {schema}.jobwire_parse_time(text)")
