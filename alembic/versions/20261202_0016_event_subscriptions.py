"""event subscriptions: subscribers of the event feed, their signing secrets, their deliveries.

- job_subscriptions: a subscriber (URL, filters) with its position in the feed, the snapshot of
  its creation (events committed before it are not its), and its delivery state (failing since,
  failures in a row, next probe, last error, disabled).
- job_subscription_secrets: its signing secrets, rotated as a handler's are.
- job_event_deliveries: one event to one subscriber, holding the item it sends (so it outlives the
  execution and the event row), its status, tries, next try, lease and last answer.
- ix_job_events_occurred_at: the typed events by time (recover's window).

Nothing of the previous version reads or writes them: its nodes keep working, and deliver nothing.
Downgrade drops them.

Revision ID: 20261202_0016
Revises: 20261202_0015
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "20261202_0016"
down_revision = "20261202_0015"
branch_labels = None
depends_on = None

TS = postgresql.TIMESTAMP(timezone=True)
NOW = sa.text("now()")
OPEN = sa.text("status IN ('pending', 'failed')")


def upgrade() -> None:
    op.create_table(
        "job_subscriptions",
        sa.Column("name", sa.Text(), primary_key=True),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("types", postgresql.ARRAY(sa.Text())),
        sa.Column("queues", postgresql.ARRAY(sa.Text())),
        sa.Column("handlers", postgresql.ARRAY(sa.Text())),
        sa.Column("state", sa.Text(), nullable=False, server_default=sa.text("'enabled'")),
        sa.Column("since", sa.Text(), nullable=False),
        sa.Column("pos_xact", sa.BigInteger(), nullable=False),
        sa.Column("pos_id", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("failing_since", TS),
        sa.Column("failures", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("retry_at", TS),
        sa.Column("last_error", sa.Text()),
        sa.Column("disabled_at", TS),
        sa.Column("created_at", TS, nullable=False, server_default=NOW),
        sa.Column("updated_at", TS, nullable=False, server_default=NOW),
        sa.CheckConstraint("state IN ('enabled', 'disabled')", name="state"),
        sa.PrimaryKeyConstraint("name", name="pk_job_subscriptions"),
    )
    op.create_table(
        "job_subscription_secrets",
        sa.Column("id", postgresql.UUID(as_uuid=True), nullable=False, server_default=sa.text("jobwire_uuid7()")),
        sa.Column("subscription", sa.Text(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=NOW),
        sa.Column("expires_at", TS),
        sa.PrimaryKeyConstraint("id", name="pk_job_subscription_secrets"),
        sa.ForeignKeyConstraint(["subscription"], ["job_subscriptions.name"], ondelete="CASCADE",
                                name="fk_job_subscription_secrets_subscription_job_subscriptions"),
    )
    op.create_index("ix_job_subscription_secrets_subscription", "job_subscription_secrets",
                    ["subscription", "created_at"])
    op.create_table(
        "job_event_deliveries",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("subscription", sa.Text(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("execution_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("occurred_at", TS, nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'pending'")),
        sa.Column("tries", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", TS, nullable=False, server_default=NOW),
        sa.Column("next_try_at", TS, nullable=False, server_default=NOW),
        sa.Column("deadline_at", TS),
        sa.Column("leased_until", TS),
        sa.Column("last_try_at", TS),
        sa.Column("last_status", sa.Integer()),
        sa.Column("last_error", sa.Text()),
        sa.Column("completed_at", TS),
        sa.CheckConstraint("status IN ('pending', 'failed', 'delivered', 'dead')",
                           name="status"),
        sa.PrimaryKeyConstraint("id", name="pk_job_event_deliveries"),
        sa.ForeignKeyConstraint(["subscription"], ["job_subscriptions.name"], ondelete="CASCADE",
                                name="fk_job_event_deliveries_subscription_job_subscriptions"),
    )
    # Storage parameters by DDL: SQLAlchemy's Table takes postgresql_with from 2.1 on (the floor is 2.0).
    op.execute("ALTER TABLE job_event_deliveries SET (fillfactor = 80)")
    op.create_index("uq_job_event_deliveries_subscription_event_id", "job_event_deliveries",
                    ["subscription", "event_id"], unique=True)
    op.create_index("ix_job_event_deliveries_due", "job_event_deliveries", ["subscription", "next_try_at"],
                    postgresql_where=OPEN)
    op.create_index("ix_job_event_deliveries_order", "job_event_deliveries",
                    ["subscription", "execution_id", "event_id"], postgresql_where=OPEN)
    op.create_index("ix_job_event_deliveries_status", "job_event_deliveries", ["subscription", "status", "id"],
                    postgresql_where=sa.text("status <> 'delivered'"))
    op.create_index("ix_job_event_deliveries_completed", "job_event_deliveries", ["completed_at"],
                    postgresql_where=sa.text("status IN ('delivered', 'dead')"))
    op.create_index("ix_job_events_occurred_at", "job_events", ["occurred_at"],
                    postgresql_where=sa.text("type IS NOT NULL"))


def downgrade() -> None:
    op.drop_index("ix_job_events_occurred_at", table_name="job_events")
    op.drop_table("job_event_deliveries")
    op.drop_table("job_subscription_secrets")
    op.drop_table("job_subscriptions")
