"""listing filters: indexes for GET /v1/executions by metadata and by concurrency key.

- ix_job_executions_metadata: GIN (metadata jsonb_path_ops), partial on `metadata <> '{}'`. The
  listing's `metadata=key:value` is `metadata @> {"key": "value"}` plus that predicate, written the
  same, so the planner can use it. Jobs without metadata (NULL, the default, or `{}`) are not in
  the index, and their insert writes no entry.
- ix_job_executions_concurrency_key: (concurrency_key, created_at DESC, id), partial on a key being
  set: the listing's order within a key (ix_job_executions_keys holds only ENQUEUED jobs). Keyless
  jobs write no entry.

The other new filters use indexes that exist: `idempotency_key` the unique
uq_job_executions_idempotency_key, the time window (created_after, created_before)
ix_job_executions_created and, with a state, ix_job_executions_state_created.

Like every revision before it, it builds them in its transaction (CREATE INDEX CONCURRENTLY cannot
run in one), holding off writes to job_executions meanwhile. On a large table, build them first
with CREATE INDEX CONCURRENTLY under these names and definitions: IF NOT EXISTS then skips them.
A node of the previous version is unaffected. Downgrade drops both.

Revision ID: 20261203_0018
Revises: 20261203_0017
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "20261203_0018"
down_revision = "20261203_0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_job_executions_metadata ON job_executions "
               "USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}'::jsonb")
    op.execute("CREATE INDEX IF NOT EXISTS ix_job_executions_concurrency_key ON job_executions "
               "(concurrency_key, created_at DESC, id) WHERE concurrency_key IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX ix_job_executions_concurrency_key")
    op.execute("DROP INDEX ix_job_executions_metadata")
