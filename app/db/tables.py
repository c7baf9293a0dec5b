"""Tables as alembic's target metadata. Unqualified: the schema comes from search_path.

A fresh database is created from these (app/db/baseline.py), an existing one reaches them
through the revisions; a test checks that both end in the same catalogue, so a column a revision
adds goes last in its table here, where ALTER TABLE … ADD COLUMN puts it.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    event,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TIMESTAMP, UUID

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

TS = TIMESTAMP(timezone=True)
NOW = text("now()")
ENQUEUED = text("state = 'ENQUEUED'")
PROCESSING = text("state = 'PROCESSING'")
XACT = "CAST(CAST(pg_current_xact_id() AS text) AS bigint)"  # this transaction's id (xid8, epoch included)
STATES = "'ENQUEUED', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ABANDONED', 'DEAD_LETTER', 'WAITING'"

job_executions = Table(
    "job_executions",
    metadata,
    # Time-ordered (UUID version 7): new rows sort after older ones in the primary key's index.
    Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("jobwire_uuid7()")),
    Column("job_id", Text, nullable=False),
    Column("job_type", Text, nullable=False),
    Column("handler", Text, nullable=False),
    Column("queue", Text, nullable=False, server_default=text("'default'")),
    Column("state", Text, nullable=False),
    Column("payload", JSONB),
    Column("parameters", JSONB),
    Column("metadata", JSONB),
    Column("result", JSONB),
    Column("progress", JSONB),  # NULL until the handler reports progress
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    Column("max_attempts", Integer, nullable=False, server_default=text("5")),
    Column("priority", Integer, nullable=False, server_default=text("0")),
    Column("stateful", Boolean, nullable=False, server_default=text("false")),
    Column("timeout_seconds", Float),
    Column("max_duration_seconds", Float),
    Column("deadline_at", TS),
    Column("idempotency_key", Text),
    Column("request_hash", Text),
    Column("fire_at", TS),
    Column("fire_node", Text, nullable=False, server_default=text("''")),
    Column("scheduled_at", TS, nullable=False, server_default=NOW),
    Column("started_at", TS),
    Column("completed_at", TS),
    # The node whose HTTP call holds the attempt (NULL once a 202 hands it to its handler). In no
    # index (revision 20261204_0025), so the 202 release that clears it can be a HOT update; the
    # lookups by node (dead-node recovery, a node's count in flight) read the PROCESSING rows.
    Column("locked_by", Text),
    Column("last_error", Text),
    Column("error_type", Text),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    # Revision 20261201_0010: the node that made the current attempt's call (kept after a 202).
    Column("claimed_by", Text),
    # Revision 20261202_0014 (flow control): the job's concurrency key, and its fairness tag: its
    # turn among the keys of its handler (jobwire_enqueue sets it; the claim takes the lowest
    # first within a priority). Both NULL for a job of a handler that has never seen a key.
    Column("concurrency_key", Text),
    Column("fair_tag", BigInteger),
    # Revision 20261203_0017 (workflows): the workflow the job belongs to and its ref there, what a
    # parent's failure does to it (`cancel` or `run`), and how many of its parents are not terminal
    # yet (kept by jobwire_workflow_transitions; the job is WAITING while it is above 0). All NULL
    # for a job outside workflows.
    Column("workflow_id", UUID(as_uuid=True), ForeignKey("job_workflows.id")),
    Column("workflow_ref", Text),
    Column("on_dependency_failure", Text),
    Column("pending_parents", Integer),
    # A suspended job (a handler's `suspend`): how many times it suspended (NULL: never; the wait is
    # its job_waits row), and while it is WAITING for a time or a timeout, when that comes (NULL
    # otherwise). A suspended WAITING job has pending_parents NULL (one of a workflow waiting for its
    # parents has a count).
    Column("suspensions", Integer),
    Column("wake_at", TS),
    # A job a running handler spawned (POST {callback.url}/children): its parent's execution. No
    # foreign key: a child outlives its parent's deletion (retention), and then has nobody to wake.
    Column("spawned_by", UUID(as_uuid=True)),
    CheckConstraint(f"state IN ({STATES})", name="state"),
    CheckConstraint("job_type IN ('DELAYED', 'CRON', 'BATCH')", name="job_type"),
    CheckConstraint("attempt >= 0 AND max_attempts >= 1", name="attempts"),
)
Index("ix_job_executions_claim", job_executions.c.queue, job_executions.c.priority.desc(),
      job_executions.c.scheduled_at, postgresql_where=ENQUEUED)
Index("ix_job_executions_claim_all", job_executions.c.priority.desc(), job_executions.c.scheduled_at,
      postgresql_where=ENQUEUED)
Index("ix_job_executions_deadline", job_executions.c.deadline_at, postgresql_where=PROCESSING)
# The listings' order (app/db/executions.py, app/db/sql/bulk.sql, app/db/sql/retention.sql): one
# walk per state, merged when a listing names none (revision 20261204_0026).
Index("ix_job_executions_state_created", job_executions.c.state, job_executions.c.created_at.desc(),
      job_executions.c.id)
# Revision 20261204_0023: a job's executions by job_id, for the job_ids given (by the caller, or a
# schedule's for its fires) only. A one-off job's job_id is its own id (the enqueue's default) and
# is found by the primary key: most jobs write no entry here, at their insert or at any transition
# (each of which writes a new row version, so an entry in every index it belongs to).
Index("ix_job_executions_job_id_given", job_executions.c.job_id, job_executions.c.created_at.desc(),
      postgresql_where=text("job_id <> CAST(id AS text)"))
Index("uq_job_executions_idempotency_key", job_executions.c.idempotency_key, unique=True,
      postgresql_where=text("idempotency_key IS NOT NULL"))
# At most one stateful job PROCESSING per queue, enforced by the database (DESIGN §6.4).
Index("uq_job_executions_stateful_processing", job_executions.c.queue, unique=True,
      postgresql_where=text("stateful AND state = 'PROCESSING'"))
Index("ix_job_executions_stateful_claim", job_executions.c.queue, job_executions.c.priority.desc(),
      job_executions.c.scheduled_at, postgresql_where=text("state = 'ENQUEUED' AND stateful"))
Index("ix_job_executions_processing_handler", job_executions.c.handler, postgresql_where=PROCESSING)
# A flow-controlled handler's due jobs in the order its claim takes them: priority, then turn.
Index("ix_job_executions_handler_claim", job_executions.c.handler, job_executions.c.priority.desc(),
      job_executions.c.fair_tag.nulls_first(), job_executions.c.scheduled_at, postgresql_where=ENQUEUED)
# Per concurrency key its waiting jobs by turn (an enqueue reads the last one; the keys listing
# finds the keys with work). Only ENQUEUED jobs with a key: a claim takes a row out of it, adding
# no entry (calls in flight per key are counted through ix_job_executions_processing_handler).
Index("ix_job_executions_keys", job_executions.c.handler, job_executions.c.concurrency_key, job_executions.c.fair_tag,
      postgresql_where=text("state = 'ENQUEUED' AND concurrency_key IS NOT NULL"))
# The keyless jobs of a handler with keys take turns as one key: their last turn.
Index("ix_job_executions_keyless_turns", job_executions.c.handler, job_executions.c.fair_tag,
      postgresql_where=text("state = 'ENQUEUED' AND concurrency_key IS NULL AND fair_tag IS NOT NULL"))
# Revision 20261203_0017: the transitions of a statement keep their workflows and settle their
# children (app/db/sql/functions/jobwire_workflow_transitions.sql), once per statement; one that
# moves no job of a workflow looks at its rows once and returns.
WORKFLOW_TRIGGER = (
    "CREATE TRIGGER jobwire_workflow_transitions AFTER UPDATE ON job_executions "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION jobwire_workflow_transitions()")
DELETIONS_TRIGGER = (
    "CREATE TRIGGER jobwire_workflow_deletions AFTER DELETE ON job_executions "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION jobwire_workflow_deletions()")
event.listen(job_executions, "after_create", DDL(WORKFLOW_TRIGGER))
# Revision 20261204_0025: each page keeps 15 % free for its rows' next versions (a job's claim,
# 202 release and outcome each write one). A version that fits beside the old one is written in
# the same page: the 202 release, which changes no indexed column, is then a HOT update (no index
# entry), and concurrent writers do not all aim at the few pages with free space.
event.listen(job_executions, "after_create", DDL("ALTER TABLE job_executions SET (fillfactor = 85)"))
event.listen(job_executions, "after_create", DDL(DELETIONS_TRIGGER))
# The suspended jobs whose time comes first (the coordinator's wake scan), and the stateful jobs
# of each queue that suspended: one keeps its queue's slot while it waits (as one PROCESSING does),
# and goes first once resumed.
Index("ix_job_executions_wake", job_executions.c.wake_at,
      postgresql_where=text("state = 'WAITING' AND wake_at IS NOT NULL"))
Index("ix_job_executions_stateful_suspended", job_executions.c.queue, job_executions.c.state,
      postgresql_where=text("stateful AND suspensions IS NOT NULL AND state IN ('WAITING', 'ENQUEUED')"))
# The children a handler spawned, by their parent (a wait for `children: "all"`, and its resume).
Index("ix_job_executions_spawned_by", job_executions.c.spawned_by, postgresql_where=text("spawned_by IS NOT NULL"))
# A workflow's jobs by ref (unique in the workflow: POST /v1/workflows refuses a duplicate).
Index("uq_job_executions_workflow_ref", job_executions.c.workflow_id, job_executions.c.workflow_ref, unique=True,
      postgresql_where=text("workflow_id IS NOT NULL"))
Index("uq_job_executions_cron_fire", job_executions.c.job_id, job_executions.c.fire_at,
      job_executions.c.fire_node, unique=True, postgresql_where=text("job_type = 'CRON'"))
# Revision 20261203_0018: the listing's filters. By metadata (`metadata @> {"key": "value"}`, with
# this predicate written beside it so the planner can use the index): only jobs with metadata pay
# for an entry. By concurrency key, in the listing's order (ix_job_executions_keys holds only
# ENQUEUED jobs).
Index("ix_job_executions_metadata", job_executions.c["metadata"], postgresql_using="gin",
      postgresql_ops={"metadata": "jsonb_path_ops"}, postgresql_where=text("metadata <> '{}'::jsonb"))
Index("ix_job_executions_concurrency_key", job_executions.c.concurrency_key, job_executions.c.created_at.desc(),
      job_executions.c.id, postgresql_where=text("concurrency_key IS NOT NULL"))

# Revision 20261203_0017: workflows (POST /v1/workflows). A workflow's counts of jobs by state,
# its unfinished jobs and those a user cancelled are kept by the transitions themselves (the trigger
# jobwire_workflow_transitions on job_executions), so reading them counts nothing.
job_workflows = Table(
    "job_workflows",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("jobwire_uuid7()")),
    Column("name", Text),
    Column("metadata", JSONB),
    Column("idempotency_key", Text),
    Column("request_hash", Text),
    Column("state", Text, nullable=False, server_default=text("'RUNNING'")),
    Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("jobs", Integer, nullable=False, server_default=text("0")),
    Column("unfinished", Integer, nullable=False, server_default=text("0")),
    Column("cancelled_by_user", Integer, nullable=False, server_default=text("0")),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    Column("completed_at", TS),
    CheckConstraint("state IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')", name="state"),
)
Index("ix_job_workflows_state_created", job_workflows.c.state, job_workflows.c.created_at.desc(), job_workflows.c.id)
Index("ix_job_workflows_created", job_workflows.c.created_at.desc(), job_workflows.c.id)
Index("ix_job_workflows_name", job_workflows.c.name, job_workflows.c.created_at.desc(), job_workflows.c.id,
      postgresql_where=text("name IS NOT NULL"))
Index("uq_job_workflows_idempotency_key", job_workflows.c.idempotency_key, unique=True,
      postgresql_where=text("idempotency_key IS NOT NULL"))

# Revision 20261203_0017: moves of a workflow's jobs that change no job's terminal-ness and touch no
# WAITING job (claims: ENQUEUED → PROCESSING, retries' FAILED → ENQUEUED, …), appended by the
# transitions without the workflow's row lock (one row per workflow and state a statement moved,
# n the net change). A workflow's counts are its row's plus these; the next transition that takes
# the row's lock folds them into the row (deletes them).
job_workflow_deltas = Table(
    "job_workflow_deltas",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),  # a key for replication, nothing reads it
    Column("workflow_id", UUID(as_uuid=True), nullable=False),
    Column("state", Text, nullable=False),
    Column("n", Integer, nullable=False),
)
Index("ix_job_workflow_deltas_workflow", job_workflow_deltas.c.workflow_id)

# A workflow's edges: the child waits for the parent. By parent through the primary key (the
# children a parent's end settles), by child through ix_job_dependencies_child (its parents: GET
# …/jobs' depends_on, the blockers, the dispatch's `workflow.parents`). No foreign keys: checked
# per edge, they were a third of the edges' insert; a deleted job's edges go with it by the
# trigger jobwire_workflow_deletions (only jobs of workflows have edges).
job_dependencies = Table(
    "job_dependencies",
    metadata,
    Column("parent_id", UUID(as_uuid=True), primary_key=True),
    Column("child_id", UUID(as_uuid=True), primary_key=True),
)
Index("ix_job_dependencies_child", job_dependencies.c.child_id, job_dependencies.c.parent_id)

# Revision 20261203_0017: a suspended execution's wait (one row, its latest suspension): what it
# waits for, and once resumed why, with the signals it consumed (the resumed dispatch's `resume`).
job_waits = Table(
    "job_waits",
    metadata,
    Column("execution_id", UUID(as_uuid=True), ForeignKey("job_executions.id", ondelete="CASCADE"),
           primary_key=True),
    Column("n", Integer, nullable=False),  # the suspension's number, 1 for the first
    Column("attempt", Integer, nullable=False),  # the attempt that suspended
    Column("until", TS),
    Column("timeout_at", TS),
    Column("signals", ARRAY(Text)),
    Column("suspended_at", TS, nullable=False, server_default=NOW),
    Column("resumed_at", TS),
    Column("reason", Text),  # timer, signal, children, timeout
    Column("delivered", JSONB),  # the signals the resumption consumed: [{name, payload, sent_at}]
    # `children: "all"`: also over once every child the execution spawned is terminal.
    Column("children", Boolean, nullable=False, server_default=text("false")),
)

# Signals sent to an execution (POST /v1/executions/{id}/signals/{name}): kept until a wait that
# names them consumes them, once.
job_signals = Table(
    "job_signals",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("execution_id", UUID(as_uuid=True), ForeignKey("job_executions.id", ondelete="CASCADE"),
           nullable=False),
    Column("name", Text, nullable=False),
    Column("payload", JSONB),
    Column("sent_at", TS, nullable=False, server_default=NOW),
    Column("consumed_at", TS),
    Column("resume", Integer),  # the resumption that consumed it (job_waits.n)
)
Index("ix_job_signals_execution", job_signals.c.execution_id, job_signals.c.id)
Index("ix_job_signals_pending", job_signals.c.execution_id, job_signals.c.name,
      postgresql_where=text("consumed_at IS NULL"))

job_logs = Table(
    "job_logs",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("execution_id", UUID(as_uuid=True),
           ForeignKey("job_executions.id", ondelete="CASCADE"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("level", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("logged_at", TS, nullable=False, server_default=NOW),
)
Index("ix_job_logs_execution", job_logs.c.execution_id, job_logs.c.id)

job_steps = Table(
    "job_steps",
    metadata,
    Column("execution_id", UUID(as_uuid=True),
           ForeignKey("job_executions.id", ondelete="CASCADE"), primary_key=True),
    Column("name", Text, primary_key=True),
    Column("result", JSONB),
    Column("completed_at", TS, nullable=False, server_default=NOW),
)

job_events = Table(
    "job_events",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("execution_id", UUID(as_uuid=True), nullable=False),
    Column("event", JSONB, nullable=False),
    Column("occurred_at", TS, nullable=False, server_default=NOW),
    # Revision 20261201_0010, set by the statement that writes an attempt's outcome or a user's
    # action (NULL on the untyped rows: re-enqueues, suspensions, resumptions, claims put back; the
    # insert and the claim write no row from revision 20261203_0021): the event type (execution.succeeded,
    # .failed, .abandoned, .dead_lettered, .cancelled, .retried) and, beside the curated event,
    # the attempt it ends, its start, its node, the handler's HTTP status, its own error text.
    Column("type", Text),
    Column("attempt", Integer),
    Column("started_at", TS),
    Column("node", Text),
    Column("http_status", Integer),
    Column("error", Text),
    # Revision 20261202_0015: the id of the transaction that wrote the row (0 for the rows written
    # before): the feed (GET /v1/events) is ordered by (xact, id) and serves only rows of
    # transactions below the oldest one still running, so no row can commit behind a cursor.
    Column("xact", BigInteger, nullable=False, server_default=text(XACT)),
)
Index("ix_job_events_execution", job_events.c.execution_id, job_events.c.id)
Index("ix_job_events_feed", job_events.c.xact, job_events.c.id, postgresql_where=text("type IS NOT NULL"))
# Revision 20261202_0016: the typed rows by time (POST /v1/subscriptions/{name}/recover, charts of outcomes).
Index("ix_job_events_occurred_at", job_events.c.occurred_at, postgresql_where=text("type IS NOT NULL"))

job_schedules = Table(
    "job_schedules",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("cron_expression", Text, nullable=False),
    Column("timezone", Text, nullable=False, server_default=text("'UTC'")),
    Column("handler", Text, nullable=False),
    Column("queue", Text, nullable=False, server_default=text("'default'")),
    Column("payload", JSONB),
    Column("parameters", JSONB),
    Column("priority", Integer, nullable=False, server_default=text("0")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("execution_mode", Text, nullable=False, server_default=text("'SINGLE_INSTANCE'")),
    Column("overlap_policy", Text, nullable=False, server_default=text("'SKIP'")),
    Column("misfire_policy", Text, nullable=False, server_default=text("'FIRE_ONCE'")),
    Column("max_attempts", Integer, nullable=False, server_default=text("5")),
    Column("tracked", Boolean, nullable=False, server_default=text("true")),
    Column("last_fired_at", TS),
    Column("next_fire_at", TS),
    Column("last_success_at", TS),
    Column("last_failure_at", TS),
    Column("consecutive_failures", Integer, nullable=False, server_default=text("0")),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    Column("metadata", JSONB),
)
Index("ix_job_schedules_next_fire", job_schedules.c.next_fire_at, postgresql_where=text("enabled"))

# Revision 20261130_0004: per schedule and firing slot ('' or the node id for EVERY_INSTANCE), the
# instant up to which every fire was made or given up, and the fire QUEUE_ONE holds back.
# Revision 20261201_0009: the slot's own next instant (an EVERY_INSTANCE node is due by it).
job_schedule_fires = Table(
    "job_schedule_fires",
    metadata,
    Column("job_id", Text, ForeignKey("job_schedules.job_id", ondelete="CASCADE"), primary_key=True),
    Column("fire_node", Text, primary_key=True),
    Column("handled_until", TS, nullable=False),
    Column("pending_fire_at", TS),
    Column("next_fire_at", TS),
)

job_handlers = Table(
    "job_handlers",
    metadata,
    Column("name", Text, primary_key=True),
    Column("url", Text, nullable=False),
    Column("timeout_seconds", Float),
    Column("max_concurrency", Integer),
    Column("stateful", Boolean, nullable=False, server_default=text("false")),
    # Deprecated, always NULL: the signing secrets live in job_handler_secrets. A copy here would
    # keep a handler's first secret after its rotation. Kept, nullable, for one release: a node of
    # the previous version still names it when it inserts a handler.
    Column("secret", Text, comment="Deprecated: always NULL; the signing secrets are in job_handler_secrets."),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    # Revision 20261202_0014 (flow control): calls in flight per concurrency key; call starts per
    # window, {"limit": n, "period_seconds": s}, for the handler and per key.
    Column("key_concurrency", Integer),
    Column("rate_limit", JSONB),
    Column("key_rate_limit", JSONB),
    Column("adaptive", Boolean, nullable=False, server_default=text("false")),  # AIMD below max_concurrency
    # Revision 20261203_0020: {"max_size": n, "max_wait_ms": ms}, due jobs sent together in one call
    # (app/dispatcher/batching.py); NULL, one call per job.
    Column("batch", JSONB),
)

def adaptive_columns() -> list[Column]:  # type: ignore[type-arg]
    """An adaptive limiter's state (app/domain/flow.py Adaptive), in job_handler_flow and job_keys:
    the effective limit, since when, successes toward the next raise, slow start still on, 429s in
    a row."""
    return [Column("adaptive_limit", Integer),
            Column("adaptive_since", TS),
            Column("adaptive_successes", Integer, nullable=False, server_default=text("0")),
            Column("adaptive_slow_start", Boolean, nullable=False, server_default=text("true")),
            Column("refusals", Integer, nullable=False, server_default=text("0"))]


# Revision 20261202_0014: the flow-control state of a handler whose jobs carry keys or whose calls
# are rate limited, written by the claim (under the handler's advisory lock, so by one claimer at a
# time) and never for a handler that uses none of it. fair_round: the highest turn claimed (a new
# key's first job takes the next turn, not the back of a backlog). rate_next: when the next call
# may start (GCRA's theoretical arrival time); rate_count since rate_window_start: for display.
job_handler_flow = Table(
    "job_handler_flow",
    metadata,
    Column("handler", Text, ForeignKey("job_handlers.name", ondelete="CASCADE"), primary_key=True),
    Column("fair_round", BigInteger, nullable=False, server_default=text("0")),
    Column("rate_next", TS),
    Column("rate_count", Integer, nullable=False, server_default=text("0")),
    Column("rate_window_start", TS),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    Column("retry_after", TS),  # no call before this (a 429 or 503 with Retry-After)
    Column("keyed", Boolean, nullable=False, server_default=text("false")),  # its jobs have carried keys
    # The circuit breaker (app/domain/flow.py): closed; open until circuit_until (after
    # circuit_failures consecutive connection failures or 5xx replies, for circuit_open_seconds,
    # doubling on each reopening); half_open while one probe call is out (until its deadline).
    Column("circuit_state", Text, nullable=False, server_default=text("'closed'")),
    Column("circuit_until", TS),
    Column("circuit_failures", Integer, nullable=False, server_default=text("0")),
    Column("circuit_open_seconds", Float, nullable=False, server_default=text("0")),
    # Adaptive concurrency of an adaptive handler's jobs without a key.
    *adaptive_columns(),
    CheckConstraint("circuit_state IN ('closed', 'open', 'half_open')", name="circuit_state"),
)

# Revision 20261202_0014: per (handler, concurrency key) the state the claim keeps or an operator
# set: paused, and the key's rate (as job_handler_flow's). A key needs no row to be used.
job_keys = Table(
    "job_keys",
    metadata,
    Column("handler", Text, ForeignKey("job_handlers.name", ondelete="CASCADE"), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("rate_next", TS),
    Column("rate_count", Integer, nullable=False, server_default=text("0")),
    Column("rate_window_start", TS),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    Column("retry_after", TS),  # no call of this key before this (a 429 or 503 with Retry-After)
    # Adaptive concurrency of the key (an adaptive handler's jobs with this key).
    *adaptive_columns(),
)
# Revision 20261202_0014: debounce at enqueue (POST /v1/jobs with `debounce`): per handler and
# debounce key, the execution that takes the enqueues, when its run of enqueues began, and (leading
# mode) until when enqueues are dropped. The row is the lock two nodes debouncing at once wait on.
job_debounce = Table(
    "job_debounce",
    metadata,
    Column("handler", Text, ForeignKey("job_handlers.name", ondelete="CASCADE"), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("execution_id", UUID(as_uuid=True)),
    Column("first_at", TS),
    Column("until", TS),
)

Index("ix_job_keys_paused", job_keys.c.handler, job_keys.c.key, postgresql_where=text("paused"))
Index("ix_job_keys_rate_next", job_keys.c.rate_next)

# Revision 20261201_0011: a handler's signing secrets. Every active one (expires_at unset or in
# the future) signs each dispatch, so a handler verifies with either while a secret is rotated.
# `secret` is `whsec_…`, or that encrypted with JOBWIRE_SECRET_KEY (`jwenc1:…`).
job_handler_secrets = Table(
    "job_handler_secrets",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("jobwire_uuid7()")),
    Column("handler", Text, ForeignKey("job_handlers.name", ondelete="CASCADE"), nullable=False),
    Column("secret", Text, nullable=False),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("expires_at", TS),
)
Index("ix_job_handler_secrets_handler", job_handler_secrets.c.handler, job_handler_secrets.c.created_at)

# Revision 20261201_0011: API keys kept in the database (besides JOBWIRE_API_KEYS), stored only as
# the SHA-256 of the key; scopes read | enqueue | operate | admin; queues, when set, limit the key.
job_api_keys = Table(
    "job_api_keys",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("jobwire_uuid7()")),
    Column("name", Text, nullable=False),
    Column("key_hash", Text, nullable=False, unique=True),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("queues", ARRAY(Text)),
    Column("created_at", TS, nullable=False, server_default=NOW),
    CheckConstraint("cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'enqueue', 'operate', 'admin']",
                    name="scopes"),
)

job_queues = Table(
    "job_queues",
    metadata,
    Column("name", Text, primary_key=True),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("updated_at", TS, nullable=False, server_default=NOW),
)

job_server_heartbeats = Table(
    "job_server_heartbeats",
    metadata,
    Column("server_id", Text, primary_key=True),
    Column("last_heartbeat", TS, nullable=False, server_default=NOW),
    Column("started_at", TS, nullable=False, server_default=NOW),
    Column("queues", ARRAY(Text)),  # the node's JOBWIRE_QUEUES; NULL: every queue
)

job_meta = Table(
    "job_meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

# Revision 20261202_0016: event subscriptions (PUT /v1/subscriptions/{name}). Each follows the
# event feed from its own position (pos_xact, pos_id), as GET /v1/events does: a node's pump
# reads the typed job_events rows after it, writes a delivery per matching event and moves it on,
# in one transaction. `since` is the snapshot of the creating transaction (pg_snapshot as text):
# an event whose transaction it shows as committed came before the subscription and is skipped.
# The delivery state of the subscriber as a whole: failing_since (set by a failed try, cleared
# by a success), failures in a row, retry_at (the next probe while failing), the last error.
job_subscriptions = Table(
    "job_subscriptions",
    metadata,
    Column("name", Text, primary_key=True),
    Column("url", Text, nullable=False),
    Column("types", ARRAY(Text)),  # NULL: every type
    Column("queues", ARRAY(Text)),  # NULL: every queue
    Column("handlers", ARRAY(Text)),  # NULL: every handler
    Column("state", Text, nullable=False, server_default=text("'enabled'")),
    Column("since", Text, nullable=False),
    Column("pos_xact", BigInteger, nullable=False),
    Column("pos_id", BigInteger, nullable=False, server_default=text("0")),
    Column("failing_since", TS),
    Column("failures", Integer, nullable=False, server_default=text("0")),
    Column("retry_at", TS),
    Column("last_error", Text),
    Column("disabled_at", TS),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("updated_at", TS, nullable=False, server_default=NOW),
    CheckConstraint("state IN ('enabled', 'disabled')", name="state"),
)

# Revision 20261202_0016: a subscription's signing secrets, as job_handler_secrets are a handler's.
job_subscription_secrets = Table(
    "job_subscription_secrets",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("jobwire_uuid7()")),
    Column("subscription", Text, ForeignKey("job_subscriptions.name", ondelete="CASCADE"), nullable=False),
    Column("secret", Text, nullable=False),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("expires_at", TS),
)
Index("ix_job_subscription_secrets_subscription", job_subscription_secrets.c.subscription,
      job_subscription_secrets.c.created_at)

# Revision 20261202_0016: one event to one subscriber. The row holds the item it sends (the event's
# id, type, time and curated data), so it outlives the execution and the event row. Open while
# `pending` (never tried) or `failed` (tried, to be tried again at next_try_at, until deadline_at);
# then `delivered` or `dead`. leased_until: a node is sending it (a crashed node's lease runs out
# and another sends it again: at least once). Written by the pump, or by a statement that deletes
# typed events a subscription has not read yet (deliver_deleted in app/db/sql/subscriptions.sql).
job_event_deliveries = Table(
    "job_event_deliveries",
    metadata,
    Column("id", BigInteger, Identity(always=False), primary_key=True),
    Column("subscription", Text, ForeignKey("job_subscriptions.name", ondelete="CASCADE"), nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("execution_id", UUID(as_uuid=True), nullable=False),
    Column("type", Text, nullable=False),
    Column("occurred_at", TS, nullable=False),
    Column("data", JSONB, nullable=False),
    Column("status", Text, nullable=False, server_default=text("'pending'")),
    Column("tries", Integer, nullable=False, server_default=text("0")),
    Column("created_at", TS, nullable=False, server_default=NOW),
    Column("next_try_at", TS, nullable=False, server_default=NOW),
    Column("deadline_at", TS),  # NULL: created_at + JOBWIRE_EVENT_RETRY_SECONDS
    Column("leased_until", TS),
    Column("last_try_at", TS),
    Column("last_status", Integer),
    Column("last_error", Text),
    Column("completed_at", TS),
    CheckConstraint("status IN ('pending', 'failed', 'delivered', 'dead')", name="status"),
)
# Room on each page for the claim's update of a delivery (heap-only: no index written). A DDL of its
# own: SQLAlchemy takes storage parameters on a Table only from 2.1 on (the floor is 2.0).
event.listen(job_event_deliveries, "after_create", DDL("ALTER TABLE job_event_deliveries SET (fillfactor = 80)"))
OPEN_DELIVERY = text("status IN ('pending', 'failed')")
Index("uq_job_event_deliveries_subscription_event_id", job_event_deliveries.c.subscription,
      job_event_deliveries.c.event_id, unique=True)
Index("ix_job_event_deliveries_due", job_event_deliveries.c.subscription, job_event_deliveries.c.next_try_at,
      postgresql_where=OPEN_DELIVERY)
Index("ix_job_event_deliveries_order", job_event_deliveries.c.subscription, job_event_deliveries.c.execution_id,
      job_event_deliveries.c.event_id, postgresql_where=OPEN_DELIVERY)
# The listing by status; delivered ones (most) are listed by the primary key, filtered.
Index("ix_job_event_deliveries_status", job_event_deliveries.c.subscription, job_event_deliveries.c.status,
      job_event_deliveries.c.id, postgresql_where=text("status <> 'delivered'"))
Index("ix_job_event_deliveries_completed", job_event_deliveries.c.completed_at,
      postgresql_where=text("status IN ('delivered', 'dead')"))
