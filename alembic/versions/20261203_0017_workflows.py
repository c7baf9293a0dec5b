"""workflows: jobs with dependencies, durable waits and signals, and the state WAITING.

- job_workflows: a workflow (name, metadata, idempotency key), its state and its counts of jobs
  by state, unfinished and cancelled by a user, kept by the transitions themselves.
- job_executions gains `workflow_id`, `workflow_ref` (unique in its workflow), `on_dependency_failure`
  and `pending_parents`; its state may be WAITING (never claimed).
- job_dependencies: the edges (parent, child), without foreign keys (their checks were a third of
  the edges' insert): jobwire_workflow_deletions deletes the edges of deleted jobs.
- job_workflow_deltas: count moves of a workflow's jobs that change no terminal-ness and touch no
  WAITING job (claims), appended without the workflow's row lock; read beside its counts, folded
  into them by the next transition that takes the lock.
- job_executions gains `suspensions` and `wake_at` (a handler's suspend: WAITING until a time, a
  signal or a timeout); job_waits holds each suspended execution's wait, job_signals the signals
  sent to executions (a durable mailbox). ix_job_executions_wake finds the waits whose time came,
  ix_job_executions_stateful_suspended the suspended stateful jobs that keep their queue.
- job_executions gains `spawned_by` (a job a running handler spawned: POST {callback.url}/children),
  found by ix_job_executions_spawned_by; a wait may be for every spawned child (job_waits.children).
- jobwire_resume_context: a resumed dispatch's `resume` and `steps`; jobwire_claim returns it, and
  keeps a stateful queue's slot for its suspended job.
- jobwire_workflow_transitions, and its statement trigger on job_executions: counts, the
  workflow's end and its event, the children a parent's end settles (a statement that moves no
  job of a workflow looks at its rows once and returns); jobwire_workflow_deletions, and its
  statement trigger, take deleted jobs out of their workflows' counts and delete their edges.
- jobwire_enqueue gains the workflow arguments (wf, wf_refs, wf_policies, wf_pending,
  wf_spawned_by, all NULL by default: a call with the jobs alone is the call it was): a workflow's
  jobs are inserted with their workflow columns and state at once (a new signature: dropped and
  created again).
- jobwire_claim returns a dispatch's `workflow` (a new result column: dropped and created again).
  Whole new texts: 20261203_0017/*.sql.

A node of the previous version keeps working: it names the columns of jobwire_claim it reads, and
its jobs are outside workflows. Downgrade restores jobwire_claim of revision 20261202_0014 and
drops the rest (a WAITING job must not be left: the state constraint is restored).

Revision ID: 20261203_0017
Revises: 20261202_0016
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.functions import apply

revision = "20261203_0017"
down_revision = "20261202_0016"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261203_0017")
CLAIM_BEFORE = Path(__file__).with_name("20261202_0014")  # its jobwire_claim
TS = postgresql.TIMESTAMP(timezone=True)
NOW = sa.text("now()")
CLAIM = "jobwire_claim(text, integer, double precision, text[])"
STATES_BEFORE = "'ENQUEUED', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ABANDONED', 'DEAD_LETTER'"
TRIGGER = (
    "CREATE TRIGGER jobwire_workflow_transitions AFTER UPDATE ON job_executions "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION jobwire_workflow_transitions()")
ENQUEUE_BEFORE = "jobwire_enqueue(jsonb)"
ENQUEUE_AFTER = "jobwire_enqueue(jsonb, uuid, text[], text[], integer[], uuid)"
ENQUEUE_COMMENT = ("COMMENT ON FUNCTION {} IS 'Enqueue a JSON array of jobs in the caller''s transaction, as POST "
                   "/v1/jobs does; see Jobwire''s README, ''Transactional enqueue''.'")
DELETIONS_TRIGGER = (
    "CREATE TRIGGER jobwire_workflow_deletions AFTER DELETE ON job_executions "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION jobwire_workflow_deletions()")


def upgrade() -> None:
    op.create_table(
        "job_workflows",
        sa.Column("id", postgresql.UUID(as_uuid=True), server_default=sa.text("jobwire_uuid7()"), nullable=False),
        sa.Column("name", sa.Text()),
        sa.Column("metadata", postgresql.JSONB()),
        sa.Column("idempotency_key", sa.Text()),
        sa.Column("request_hash", sa.Text()),
        sa.Column("state", sa.Text(), server_default=sa.text("'RUNNING'"), nullable=False),
        sa.Column("counts", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("jobs", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("unfinished", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("cancelled_by_user", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", TS, server_default=NOW, nullable=False),
        sa.Column("updated_at", TS, server_default=NOW, nullable=False),
        sa.Column("completed_at", TS),
        sa.CheckConstraint("state IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')", name="state"),
        sa.PrimaryKeyConstraint("id", name="pk_job_workflows"),
    )
    op.execute("CREATE INDEX ix_job_workflows_state_created ON job_workflows (state, created_at DESC, id)")
    op.execute("CREATE INDEX ix_job_workflows_created ON job_workflows (created_at DESC, id)")
    op.execute("CREATE INDEX ix_job_workflows_name ON job_workflows (name, created_at DESC, id) "
               "WHERE name IS NOT NULL")
    op.execute("CREATE UNIQUE INDEX uq_job_workflows_idempotency_key ON job_workflows (idempotency_key) "
               "WHERE idempotency_key IS NOT NULL")
    op.add_column("job_executions", sa.Column("workflow_id", postgresql.UUID(as_uuid=True)))
    op.add_column("job_executions", sa.Column("workflow_ref", sa.Text()))
    op.add_column("job_executions", sa.Column("on_dependency_failure", sa.Text()))
    op.add_column("job_executions", sa.Column("pending_parents", sa.Integer()))
    op.add_column("job_executions", sa.Column("suspensions", sa.Integer()))
    op.add_column("job_executions", sa.Column("wake_at", TS))
    op.add_column("job_executions", sa.Column("spawned_by", postgresql.UUID(as_uuid=True)))
    op.create_foreign_key("fk_job_executions_workflow_id_job_workflows", "job_executions", "job_workflows",
                          ["workflow_id"], ["id"])
    op.execute("CREATE UNIQUE INDEX uq_job_executions_workflow_ref ON job_executions (workflow_id, workflow_ref) "
               "WHERE workflow_id IS NOT NULL")
    op.execute("CREATE INDEX ix_job_executions_wake ON job_executions (wake_at) "
               "WHERE state = 'WAITING' AND wake_at IS NOT NULL")
    op.execute("CREATE INDEX ix_job_executions_stateful_suspended ON job_executions (queue, state) "
               "WHERE stateful AND suspensions IS NOT NULL AND state IN ('WAITING', 'ENQUEUED')")
    op.execute("CREATE INDEX ix_job_executions_spawned_by ON job_executions (spawned_by) WHERE spawned_by IS NOT NULL")
    op.drop_constraint("ck_job_executions_state", "job_executions")
    op.execute(f"ALTER TABLE job_executions ADD CONSTRAINT ck_job_executions_state "
               f"CHECK (state IN ({STATES_BEFORE}, 'WAITING'))")
    op.create_table(
        "job_dependencies",
        sa.Column("parent_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("child_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.PrimaryKeyConstraint("parent_id", "child_id", name="pk_job_dependencies"),
    )
    op.create_index("ix_job_dependencies_child", "job_dependencies", ["child_id", "parent_id"])
    op.create_table(
        "job_workflow_deltas",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("workflow_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_job_workflow_deltas"),
    )
    op.create_index("ix_job_workflow_deltas_workflow", "job_workflow_deltas", ["workflow_id"])
    op.create_table(
        "job_waits",
        sa.Column("execution_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("until", TS),
        sa.Column("timeout_at", TS),
        sa.Column("signals", postgresql.ARRAY(sa.Text())),
        sa.Column("suspended_at", TS, server_default=NOW, nullable=False),
        sa.Column("resumed_at", TS),
        sa.Column("reason", sa.Text()),
        sa.Column("delivered", postgresql.JSONB()),
        sa.Column("children", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.ForeignKeyConstraint(["execution_id"], ["job_executions.id"], ondelete="CASCADE",
                                name="fk_job_waits_execution_id_job_executions"),
        sa.PrimaryKeyConstraint("execution_id", name="pk_job_waits"),
    )
    op.create_table(
        "job_signals",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("execution_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("payload", postgresql.JSONB()),
        sa.Column("sent_at", TS, server_default=NOW, nullable=False),
        sa.Column("consumed_at", TS),
        sa.Column("resume", sa.Integer()),
        sa.ForeignKeyConstraint(["execution_id"], ["job_executions.id"], ondelete="CASCADE",
                                name="fk_job_signals_execution_id_job_executions"),
        sa.PrimaryKeyConstraint("id", name="pk_job_signals"),
    )
    op.create_index("ix_job_signals_execution", "job_signals", ["execution_id", "id"])
    op.execute("CREATE INDEX ix_job_signals_pending ON job_signals (execution_id, name) WHERE consumed_at IS NULL")
    op.execute(f"DROP FUNCTION {CLAIM}")
    op.execute(f"DROP FUNCTION {ENQUEUE_BEFORE}")
    apply(op.get_bind(), COPIES)
    op.execute(ENQUEUE_COMMENT.format(ENQUEUE_AFTER))
    op.execute(TRIGGER)
    op.execute(DELETIONS_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER jobwire_workflow_transitions ON job_executions")
    op.execute("DROP TRIGGER jobwire_workflow_deletions ON job_executions")
    op.execute("DROP FUNCTION jobwire_workflow_deletions()")
    op.execute(f"DROP FUNCTION {CLAIM}")
    op.execute("DROP FUNCTION jobwire_resume_context(uuid, integer)")
    op.execute("DROP FUNCTION jobwire_workflow_transitions()")
    apply(op.get_bind(), CLAIM_BEFORE, only=frozenset({"jobwire_claim"}))
    op.execute(f"DROP FUNCTION {ENQUEUE_AFTER}")
    apply(op.get_bind(), CLAIM_BEFORE, only=frozenset({"jobwire_enqueue"}))
    op.execute(ENQUEUE_COMMENT.format(ENQUEUE_BEFORE))
    op.drop_table("job_signals")
    op.drop_table("job_waits")
    op.drop_table("job_dependencies")
    op.drop_table("job_workflow_deltas")
    op.drop_constraint("ck_job_executions_state", "job_executions")
    op.execute(f"ALTER TABLE job_executions ADD CONSTRAINT ck_job_executions_state CHECK (state IN ({STATES_BEFORE}))")
    op.execute("DROP INDEX uq_job_executions_workflow_ref")
    op.execute("DROP INDEX ix_job_executions_wake")
    op.execute("DROP INDEX ix_job_executions_stateful_suspended")
    op.execute("DROP INDEX ix_job_executions_spawned_by")
    op.drop_constraint("fk_job_executions_workflow_id_job_workflows", "job_executions")
    for column in ("spawned_by", "wake_at", "suspensions", "pending_parents", "on_dependency_failure", "workflow_ref", "workflow_id"):
        op.drop_column("job_executions", column)
    op.drop_table("job_workflows")
