"""no job_events row for an insert, a claim or a workflow's release of a child (DESIGN §8).

- jobwire_enqueue: the insert writes no event row (the ENQUEUED it recorded said nothing the live
  row does not).
- jobwire_claim: the claim writes no event row; the attempt's start and node travel in its
  outcome's row (they always have: the attempt history reads only the outcome rows), and the
  live row shows the attempt in flight.
- jobwire_workflow_transitions: a child its parents release (WAITING → ENQUEUED) writes no event
  row, as an insert; the release returns the two columns it counts.

Per job of a sync drain this leaves one event row of three (its outcome), and with it two heap
tuples and four index entries of job_events. The typed rows (outcomes, user actions, workflow
ends) are unchanged, and with them the attempt history, the feed, the deliveries and
`GET /v1/executions/{id}/events` (which lists only them); the untyped rows of re-enqueues,
suspensions, resumptions and claims put back are unchanged too. (Two other writers still write an
insert's or a release's row: schedule_fire, a cron fire's ENQUEUED, and workflow_settle, the
release of a job added after its parents ended or of a retried workflow's; app/db/sql.) Same
functions, so CREATE OR REPLACE; their whole new texts: 20261203_0021/.

Downgrade restores the functions of the revisions before (events are not written back for what
ran in between).

Revision ID: 20261203_0021
Revises: 20261203_0020
Create Date: 2026-12-03
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

from app.db.functions import apply

revision = "20261203_0021"
down_revision = "20261203_0020"
branch_labels = None
depends_on = None

HERE = Path(__file__).parent
COPIES = HERE / "20261203_0021"
# Each function's text before this revision: the newest earlier copy.
BEFORE = {
    "jobwire_claim": HERE / "20261203_0020",
    "jobwire_enqueue": HERE / "20261203_0017",
    "jobwire_workflow_transitions": HERE / "20261203_0019",
}


def upgrade() -> None:
    apply(op.get_bind(), COPIES)


def downgrade() -> None:
    for name, directory in BEFORE.items():
        apply(op.get_bind(), directory, only=frozenset({name}))
