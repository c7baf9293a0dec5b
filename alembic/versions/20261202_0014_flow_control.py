"""flow control: concurrency keys, fair turns between keys, rate limits, paused keys, backpressure.

- job_executions gains `concurrency_key` and `fair_tag` (the job's turn among its handler's keys);
  job_handlers gains `key_concurrency`, `rate_limit` and `key_rate_limit`.
- job_debounce: per handler and debounce key, the execution a debounced enqueue goes to.
- job_handlers gains `adaptive`. job_handler_flow (per handler: the highest turn claimed, its rate
  limit's next slot, a Retry-After, its circuit breaker, its adaptive limit) and job_keys (per
  handler and key: paused, its rate limit's next slot, a Retry-After, its adaptive limit), written
  by the claim and by the recording of outcomes for the handlers that use them only, and by
  POST /v1/handlers/{name}/keys/{key}/pause|resume.
- ix_job_executions_handler_claim orders by turn after priority (a handler without keys has no
  turns: the order is the one before); ix_job_executions_keys (the waiting jobs per key) and
  ix_job_executions_keyless_turns (the last turn of the keyless jobs of a handler with keys) hold
  only ENQUEUED jobs of handlers that use keys.
- jobwire_claim locks every flow-controlled handler and takes its jobs through jobwire_claim_pick;
  its result gains concurrency_key, so it is dropped and created again, as is jobwire_enqueue,
  which takes `concurrency_key` (in the idempotency fingerprint only when set), returns it, and
  sets the turn (its comment is set again);
  jobwire_enqueue_faults and jobwire_enqueue_input change their signature or result, so they
  are dropped and created again too. jobwire_rate_allowance and jobwire_rate_next are the rate
  limiter (GCRA). Whole new texts: 20261202_0014/*.sql.

A node of the previous version keeps working: it calls jobwire_claim and jobwire_enqueue with
the same arguments and names the columns it reads; it sends no keys, so its jobs take no turns
unless their handler already has flow state.
Downgrade restores the functions of revision 20261201_0012 (enqueue's of 0009) and drops the rest.

Revision ID: 20261202_0014
Revises: 20261202_0013
Create Date: 2026-12-02
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.functions import apply

revision = "20261202_0014"
down_revision = "20261202_0013"
branch_labels = None
depends_on = None

COPIES = Path(__file__).with_name("20261202_0014")
TS = postgresql.TIMESTAMP(timezone=True)
CHANGED = ("jobwire_claim(text, integer, double precision, text[])", "jobwire_enqueue(jsonb)",
           "jobwire_enqueue_input(jsonb, uuid[])")
ENQUEUE_COMMENT = ("COMMENT ON FUNCTION jobwire_enqueue(jsonb) IS 'Enqueue a JSON array of jobs in the caller''s "
                   "transaction, as POST /v1/jobs does; see Jobwire''s README, ''Transactional enqueue''.'")
FAULTS_BEFORE = ("jobwire_enqueue_faults(jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, "
                 "jsonb, jsonb, jsonb, jsonb)")
FAULTS_AFTER = ("jobwire_enqueue_faults(jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, "
                "jsonb, jsonb, jsonb, jsonb, jsonb)")
NEW = ("jobwire_claim_pick(text, integer, integer, text[], text[])", "jobwire_rate_allowance(jsonb, timestamp with time zone)",
       "jobwire_rate_next(jsonb, timestamp with time zone, integer)")


def _adaptive_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [sa.Column("adaptive_limit", sa.Integer()),
            sa.Column("adaptive_since", TS),
            sa.Column("adaptive_successes", sa.Integer(), nullable=False, server_default=sa.text("0")),
            sa.Column("adaptive_slow_start", sa.Boolean(), nullable=False, server_default=sa.text("true")),
            sa.Column("refusals", sa.Integer(), nullable=False, server_default=sa.text("0"))]


def upgrade() -> None:
    op.add_column("job_executions", sa.Column("concurrency_key", sa.Text()))
    op.add_column("job_executions", sa.Column("fair_tag", sa.BigInteger()))
    op.add_column("job_handlers", sa.Column("key_concurrency", sa.Integer()))
    op.add_column("job_handlers", sa.Column("rate_limit", postgresql.JSONB()))
    op.add_column("job_handlers", sa.Column("key_rate_limit", postgresql.JSONB()))
    op.add_column("job_handlers", sa.Column("adaptive", sa.Boolean(), nullable=False, server_default=sa.text("false")))
    op.create_table(
        "job_handler_flow",
        sa.Column("handler", sa.Text(), sa.ForeignKey("job_handlers.name", ondelete="CASCADE"), nullable=False),
        sa.Column("fair_round", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("rate_next", TS),
        sa.Column("rate_count", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("rate_window_start", TS),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.text("now()")),
        sa.Column("retry_after", TS),
        sa.Column("keyed", sa.Boolean(), nullable=False, server_default=sa.text("false")),
        sa.Column("circuit_state", sa.Text(), nullable=False, server_default=sa.text("'closed'")),
        sa.Column("circuit_until", TS),
        sa.Column("circuit_failures", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("circuit_open_seconds", sa.Float(), nullable=False, server_default=sa.text("0")),
        *_adaptive_columns(),
        sa.CheckConstraint("circuit_state IN ('closed', 'open', 'half_open')", name="circuit_state"),
        sa.PrimaryKeyConstraint("handler", name="pk_job_handler_flow"),
    )
    op.create_table(
        "job_keys",
        sa.Column("handler", sa.Text(), sa.ForeignKey("job_handlers.name", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False, server_default=sa.text("false")),
        sa.Column("rate_next", TS),
        sa.Column("rate_count", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("rate_window_start", TS),
        sa.Column("created_at", TS, nullable=False, server_default=sa.text("now()")),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.text("now()")),
        sa.Column("retry_after", TS),
        *_adaptive_columns(),
        sa.PrimaryKeyConstraint("handler", "key", name="pk_job_keys"),
    )
    op.create_table(
        "job_debounce",
        sa.Column("handler", sa.Text(), sa.ForeignKey("job_handlers.name", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("execution_id", postgresql.UUID(as_uuid=True)),
        sa.Column("first_at", TS),
        sa.Column("until", TS),
        sa.PrimaryKeyConstraint("handler", "key", name="pk_job_debounce"),
    )
    op.execute("CREATE INDEX ix_job_keys_paused ON job_keys (handler, key) WHERE paused")
    op.execute("CREATE INDEX ix_job_keys_rate_next ON job_keys (rate_next)")
    op.execute("DROP INDEX ix_job_executions_handler_claim")
    op.execute("CREATE INDEX ix_job_executions_handler_claim ON job_executions "
               "(handler, priority DESC, fair_tag NULLS FIRST, scheduled_at) WHERE state = 'ENQUEUED'")
    op.execute("CREATE INDEX ix_job_executions_keys ON job_executions (handler, concurrency_key, fair_tag) "
               "WHERE state = 'ENQUEUED' AND concurrency_key IS NOT NULL")
    op.execute("CREATE INDEX ix_job_executions_keyless_turns ON job_executions (handler, fair_tag) "
               "WHERE state = 'ENQUEUED' AND concurrency_key IS NULL AND fair_tag IS NOT NULL")
    for signature in (*CHANGED, FAULTS_BEFORE):
        op.execute(f"DROP FUNCTION {signature}")
    apply(op.get_bind(), COPIES)
    op.execute(ENQUEUE_COMMENT)


def downgrade() -> None:
    for signature in (*CHANGED, FAULTS_AFTER, *NEW):
        op.execute(f"DROP FUNCTION {signature}")
    apply(op.get_bind(), COPIES / "before")
    op.execute(ENQUEUE_COMMENT)
    op.execute("DROP INDEX ix_job_executions_keyless_turns")
    op.execute("DROP INDEX ix_job_executions_keys")
    op.execute("DROP INDEX ix_job_executions_handler_claim")
    op.execute("CREATE INDEX ix_job_executions_handler_claim ON job_executions (handler, priority DESC, scheduled_at) "
               "WHERE state = 'ENQUEUED'")
    op.drop_table("job_debounce")
    op.drop_table("job_keys")
    op.drop_table("job_handler_flow")
    op.drop_column("job_handlers", "adaptive")
    op.drop_column("job_handlers", "key_rate_limit")
    op.drop_column("job_handlers", "rate_limit")
    op.drop_column("job_handlers", "key_concurrency")
    op.drop_column("job_executions", "fair_tag")
    op.drop_column("job_executions", "concurrency_key")
