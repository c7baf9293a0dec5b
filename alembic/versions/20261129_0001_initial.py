"""initial: every table, column and index of DESIGN §3.

Frozen once landed on main: later changes are new revisions.

Revision ID: 20261129_0001
Revises: 
Create Date: 2026-11-29 23:50:00.085310
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '20261129_0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_events',
    sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
    sa.Column('execution_id', sa.UUID(), nullable=False),
    sa.Column('event', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('occurred_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_events'))
    )
    op.create_index('ix_job_events_execution', 'job_events', ['execution_id', 'id'], unique=False)
    op.create_table('job_executions',
    sa.Column('id', sa.UUID(), server_default=sa.text('gen_random_uuid()'), nullable=False),
    sa.Column('job_id', sa.Text(), nullable=False),
    sa.Column('job_type', sa.Text(), nullable=False),
    sa.Column('handler', sa.Text(), nullable=False),
    sa.Column('queue', sa.Text(), server_default=sa.text("'default'"), nullable=False),
    sa.Column('state', sa.Text(), nullable=False),
    sa.Column('payload', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('parameters', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('metadata', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('result', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('progress', postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text('\'{"total": 0, "succeeded": 0, "failed": 0, "status": null}\'::jsonb'), nullable=False),
    sa.Column('attempt', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('max_attempts', sa.Integer(), server_default=sa.text('5'), nullable=False),
    sa.Column('priority', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('stateful', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('timeout_seconds', sa.Float(), nullable=True),
    sa.Column('max_duration_seconds', sa.Float(), nullable=True),
    sa.Column('deadline_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('idempotency_key', sa.Text(), nullable=True),
    sa.Column('request_hash', sa.Text(), nullable=True),
    sa.Column('fire_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('fire_node', sa.Text(), server_default=sa.text("''"), nullable=False),
    sa.Column('scheduled_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('started_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('completed_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('locked_by', sa.Text(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('error_type', sa.Text(), nullable=True),
    sa.Column('created_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("job_type IN ('DELAYED', 'CRON', 'BATCH')", name=op.f('ck_job_executions_job_type')),
    sa.CheckConstraint("state IN ('ENQUEUED', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ABANDONED', 'DEAD_LETTER')", name=op.f('ck_job_executions_state')),
    sa.CheckConstraint('attempt >= 0 AND max_attempts >= 1', name=op.f('ck_job_executions_attempts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_executions'))
    )
    op.create_index('ix_job_executions_claim', 'job_executions', ['queue', sa.literal_column('priority DESC'), 'scheduled_at'], unique=False, postgresql_where=sa.text("state = 'ENQUEUED'"))
    op.create_index('ix_job_executions_claim_all', 'job_executions', [sa.literal_column('priority DESC'), 'scheduled_at'], unique=False, postgresql_where=sa.text("state = 'ENQUEUED'"))
    op.create_index('ix_job_executions_created', 'job_executions', [sa.literal_column('created_at DESC'), 'id'], unique=False)
    op.create_index('ix_job_executions_deadline', 'job_executions', ['deadline_at'], unique=False, postgresql_where=sa.text("state = 'PROCESSING'"))
    op.create_index('ix_job_executions_in_flight', 'job_executions', ['locked_by'], unique=False, postgresql_where=sa.text("state = 'PROCESSING'"))
    op.create_index('ix_job_executions_job_id', 'job_executions', ['job_id', sa.literal_column('created_at DESC')], unique=False)
    op.create_index('ix_job_executions_state_created', 'job_executions', ['state', sa.literal_column('created_at DESC'), 'id'], unique=False)
    op.create_index('uq_job_executions_cron_fire', 'job_executions', ['job_id', 'fire_at', 'fire_node'], unique=True, postgresql_where=sa.text("job_type = 'CRON'"))
    op.create_index('uq_job_executions_idempotency_key', 'job_executions', ['idempotency_key'], unique=True, postgresql_where=sa.text('idempotency_key IS NOT NULL'))
    op.create_table('job_handlers',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('timeout_seconds', sa.Float(), nullable=True),
    sa.Column('max_concurrency', sa.Integer(), nullable=True),
    sa.Column('stateful', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('secret', sa.Text(), nullable=False),
    sa.Column('created_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_job_handlers'))
    )
    op.create_table('job_meta',
    sa.Column('key', sa.Text(), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_job_meta'))
    )
    op.create_table('job_queues',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('paused', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('updated_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_job_queues'))
    )
    op.create_table('job_schedules',
    sa.Column('job_id', sa.Text(), nullable=False),
    sa.Column('cron_expression', sa.Text(), nullable=False),
    sa.Column('timezone', sa.Text(), server_default=sa.text("'UTC'"), nullable=False),
    sa.Column('handler', sa.Text(), nullable=False),
    sa.Column('queue', sa.Text(), server_default=sa.text("'default'"), nullable=False),
    sa.Column('payload', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('parameters', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('priority', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('enabled', sa.Boolean(), server_default=sa.text('true'), nullable=False),
    sa.Column('execution_mode', sa.Text(), server_default=sa.text("'SINGLE_INSTANCE'"), nullable=False),
    sa.Column('overlap_policy', sa.Text(), server_default=sa.text("'SKIP'"), nullable=False),
    sa.Column('misfire_policy', sa.Text(), server_default=sa.text("'FIRE_ONCE'"), nullable=False),
    sa.Column('max_attempts', sa.Integer(), server_default=sa.text('5'), nullable=False),
    sa.Column('tracked', sa.Boolean(), server_default=sa.text('true'), nullable=False),
    sa.Column('last_fired_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('next_fire_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('last_success_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('last_failure_at', postgresql.TIMESTAMP(timezone=True), nullable=True),
    sa.Column('consecutive_failures', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('created_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('updated_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('job_id', name=op.f('pk_job_schedules'))
    )
    op.create_index('ix_job_schedules_next_fire', 'job_schedules', ['next_fire_at'], unique=False, postgresql_where=sa.text('enabled'))
    op.create_table('job_server_heartbeats',
    sa.Column('server_id', sa.Text(), nullable=False),
    sa.Column('last_heartbeat', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('started_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('server_id', name=op.f('pk_job_server_heartbeats'))
    )
    op.create_table('job_logs',
    sa.Column('id', sa.BigInteger(), sa.Identity(always=False), nullable=False),
    sa.Column('execution_id', sa.UUID(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('level', sa.Text(), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('logged_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['execution_id'], ['job_executions.id'], name=op.f('fk_job_logs_execution_id_job_executions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_logs'))
    )
    op.create_index('ix_job_logs_execution', 'job_logs', ['execution_id', 'id'], unique=False)
    op.create_table('job_steps',
    sa.Column('execution_id', sa.UUID(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('result', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('completed_at', postgresql.TIMESTAMP(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.ForeignKeyConstraint(['execution_id'], ['job_executions.id'], name=op.f('fk_job_steps_execution_id_job_executions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('execution_id', 'name', name=op.f('pk_job_steps'))
    )


def downgrade() -> None:
    # Indexes and constraints go with their tables.
    for table in (
        "job_steps", "job_logs", "job_server_heartbeats", "job_schedules", "job_queues",
        "job_meta", "job_handlers", "job_executions", "job_events",
    ):
        op.drop_table(table)
