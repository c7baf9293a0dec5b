"""Today's schema in one step, for a database that has none, built from the files that own it.

The alembic cookbook's "building an up to date database from scratch" (Procrastinate keeps its
schema.sql the same way): a fresh database gets the functions of app/db/sql/functions, the tables
of app/db/tables.py and what neither describes that the revisions wrote, and is stamped at head;
a database with a revision upgrades through the chain. A test builds one database each way and
compares their catalogues, so what the revisions create and what this creates cannot drift apart.
"""

from __future__ import annotations

import logging

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.db import functions
from app.db.database import notify_channel
from app.db.tables import metadata

log = logging.getLogger(__name__)

# The comments on functions that the revisions leave at head.
FUNCTION_COMMENTS = {
    "jobwire_enqueue(jsonb, uuid, text[], text[], integer[], uuid)":
        "Enqueue a JSON array of jobs in the caller's transaction, as POST /v1/jobs does; "
        "see Jobwire's README, 'Transactional enqueue'.",
    "jobwire_uuid7()": "A UUID version 7 (time-ordered) for new executions; see revision 20261130_0008.",
}


def is_fresh(bind: Connection) -> bool:
    """No revision recorded and none of the tables in the current schema (a database created
    empty, or downgraded to base)."""
    if bind.exec_driver_sql("SELECT to_regclass('alembic_version') IS NOT NULL").scalar_one():
        if bind.exec_driver_sql("SELECT EXISTS (SELECT 1 FROM alembic_version)").scalar_one():
            return False
    tables = bind.execute(text("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() "
                               "AND tablename = ANY(:names)"), {"names": list(metadata.tables)}).scalar_one()
    return tables == 0


def install(bind: Connection, schema: str | None) -> None:
    """Creates today's schema in the current schema, in the caller's transaction."""
    # Functions first: the tables' defaults call jobwire_uuid7().
    functions.apply(bind, functions.current_directory())
    metadata.create_all(bind, checkfirst=False)
    for signature, comment in FUNCTION_COMMENTS.items():
        bind.exec_driver_sql(f"COMMENT ON FUNCTION {signature} IS {_literal(comment)}")
    # The channel jobwire_enqueue notifies, the one this schema's nodes LISTEN on.
    bind.execute(text("INSERT INTO job_meta (key, value) VALUES ('notify_channel', :channel)"),
                 {"channel": notify_channel(schema)})
    log.info("baseline: a fresh database, today's schema installed from the files in one step")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
