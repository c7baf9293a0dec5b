"""enqueue wakes the dispatchers only for work they may claim now.

`jobwire_enqueue` (revision 20261130_0002) sent its NOTIFY whenever it inserted a row. For a
job in a paused queue, or one scheduled for later, that woke every node's dispatcher into a
claim that could find nothing: under a stream of enqueues into a paused queue, the dispatchers
claimed back to back for nothing (11 % of a node's CPU, and PostgreSQL's, in
`python -m bench --only enqueue_single --profile DIR`). Now the NOTIFY goes out when at least
one job of the call is due and its queue is not paused (read from the call's input). Nothing
is lost: resuming a queue wakes the dispatchers itself (QueueService.set_paused), and a job
that comes due later is found by the poll every JOBWIRE_POLL_INTERVAL, as before (its NOTIFY,
sent at enqueue, was always too early to claim it).

The function is otherwise unchanged: its definition is read back, this one condition replaced,
and created again (downgrade restores the condition).

Revision ID: 20261130_0006
Revises: 20261130_0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "20261130_0006"
down_revision = "20261130_0005"
branch_labels = None
depends_on = None

ANY_INSERTED = "    IF inserted > 0 THEN\n        PERFORM pg_notify("
ANY_CLAIMABLE = (
    "    IF inserted > 0 AND EXISTS (\n"
    "        -- Wake the dispatchers only for a job they may claim now: due, in a queue not paused.\n"
    "        -- Read from the input, not the table: a lookup of the new rows by id is planned as a\n"
    "        -- scan of the whole table while its statistics still say it is empty.\n"
    "        SELECT 1 FROM jsonb_array_elements(jobs) AS t(j)\n"
    "        WHERE COALESCE(CAST(t.j->>'delay_seconds' AS float8), 0) = 0\n"
    "          AND (t.j->>'run_at' IS NULL OR jobwire_parse_time(t.j->>'run_at') <= now())\n"
    "          AND NOT EXISTS (SELECT 1 FROM job_queues q\n"
    "                          WHERE q.name = COALESCE(t.j->>'queue', 'default') AND q.paused)\n"
    "    ) THEN\n        PERFORM pg_notify("
)


def _replace_condition(old: str, new: str) -> None:
    bind = op.get_bind()
    schema = bind.exec_driver_sql("SELECT quote_ident(current_schema())").scalar_one()
    signature = f"{schema}.jobwire_enqueue(jsonb)".replace("'", "''")
    definition = bind.exec_driver_sql(f"SELECT pg_get_functiondef('{signature}'::regprocedure)").scalar_one()
    if definition.count(old) != 1:
        raise RuntimeError("jobwire_enqueue is not the function this revision expects; not changed")
    bind.exec_driver_sql(definition.replace(old, new))


def upgrade() -> None:
    _replace_condition(ANY_INSERTED, ANY_CLAIMABLE)


def downgrade() -> None:
    _replace_condition(ANY_CLAIMABLE, ANY_INSERTED)
