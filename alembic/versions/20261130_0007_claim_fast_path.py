"""claim: a short statement when no claim rule applies.

`jobwire_claim` (revision 20261130_0005) plans its claim statement at every call: the planner
sees the arrays of step 1 (stateful queues, limited and blocked handlers, paused queues) only
then, so PL/pgSQL keeps a custom plan. That statement has seven CTEs, one per rule, and
planning it took ~0.5 ms of a 32-row claim of ~2.2 ms (EXPLAIN's planning time in a warm
session on PostgreSQL 15; an empty claim took 0.7 ms in all).

When step 1 finds no stateful queue with due work, no handler with max_concurrency and no
paused queue (the common case), every rule is moot and the claim is the plain one: the best
`n` due jobs that are not stateful, SKIP LOCKED, marked PROCESSING with their events. That
statement plans in ~0.17 ms. Same rows, same columns, same order; the full statement still
runs whenever any rule applies.

The function is otherwise unchanged: its definition is read back, the fast path inserted
before step 2, and created again (downgrade removes it).

Revision ID: 20261130_0007
Revises: 20261130_0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "20261130_0007"
down_revision = "20261130_0006"
branch_labels = None
depends_on = None

STEP_2 = "    -- Step 2: the claim (two forms, so each uses its own index).\n"

PLAIN = """
            WITH c AS (
                SELECT e.id FROM job_executions e
                WHERE e.state = 'ENQUEUED' AND e.scheduled_at <= now() AND NOT e.stateful{queue_filter}
                ORDER BY e.priority DESC, e.scheduled_at
                LIMIT n
                FOR UPDATE SKIP LOCKED
            ), u AS (
                UPDATE job_executions e
                SET state = 'PROCESSING', started_at = now(), updated_at = now(), locked_by = node,
                    deadline_at = now() + make_interval(secs => LEAST(
                        COALESCE(e.timeout_seconds,
                                 (SELECT h.timeout_seconds FROM job_handlers h WHERE h.name = e.handler),
                                 default_timeout),
                        COALESCE(e.max_duration_seconds, CAST('Infinity' AS float8))))
                FROM c
                WHERE e.id = c.id AND e.state = 'ENQUEUED'
                RETURNING e.id, e.job_id, e.job_type, e.handler, e.queue, e.state, e.attempt, e.max_attempts,
                          e.priority, e.payload, e.parameters, e.metadata, e.error_type, e.scheduled_at,
                          e.created_at, e.started_at, e.completed_at, e.deadline_at
            ), ev AS (
                INSERT INTO job_events (execution_id, event) SELECT u.id, {event} FROM u
            )
            SELECT u.id, u.job_id, u.job_type, u.handler, u.queue, u.attempt, u.max_attempts, u.payload,
                   u.parameters, u.metadata, u.scheduled_at, u.started_at, u.deadline_at,
                   CAST(EXTRACT(EPOCH FROM u.deadline_at - now()) AS float8), h.url, h.secret
            FROM u LEFT JOIN job_handlers h ON h.name = u.handler
            ORDER BY u.priority DESC, u.scheduled_at"""

EVENT = (
    "jsonb_build_object('execution_id', u.id, 'job_id', u.job_id, 'job_type', u.job_type, 'queue', u.queue, "
    "'handler', u.handler, 'new_state', u.state, 'attempt', u.attempt, 'max_attempts', u.max_attempts, "
    "'error_type', u.error_type, 'scheduled_at', u.scheduled_at, 'created_at', u.created_at, "
    "'started_at', u.started_at, 'completed_at', u.completed_at, 'metadata', u.metadata)"
)

FAST_PATH = (
    "    -- No rule applies (revision 20261130_0007): the plain claim, a statement that plans in a\n"
    "    -- third of the time of step 2's.\n"
    "    IF cardinality(v_stateful) = 0 AND cardinality(v_limited) = 0 AND cardinality(v_blocked) = 0\n"
    "       AND cardinality(v_paused) = 0 THEN\n"
    "        IF queues IS NULL THEN\n"
    "            RETURN QUERY {plain_all};\n"
    "        ELSE\n"
    "            RETURN QUERY {plain_queues};\n"
    "        END IF;\n"
    "        RETURN;\n"
    "    END IF;\n\n"
).format(plain_all=PLAIN.format(queue_filter="", event=EVENT),
         plain_queues=PLAIN.format(queue_filter=" AND e.queue = ANY(queues)", event=EVENT))


def _replace(old: str, new: str) -> None:
    bind = op.get_bind()
    schema = bind.exec_driver_sql("SELECT quote_ident(current_schema())").scalar_one()
    signature = f"{schema}.jobwire_claim(text, int, float8, text[])".replace("'", "''")
    definition = bind.exec_driver_sql(f"SELECT pg_get_functiondef('{signature}'::regprocedure)").scalar_one()
    if definition.count(old) != 1:
        raise RuntimeError("jobwire_claim is not the function this revision expects; not changed")
    bind.exec_driver_sql(definition.replace(old, new))


def upgrade() -> None:
    _replace(STEP_2, FAST_PATH + STEP_2)


def downgrade() -> None:
    _replace(FAST_PATH + STEP_2, STEP_2)
