"""The one translation of database errors into domain errors, by SQLSTATE and constraint name.

- the server is not there for us (connection exceptions 08…, shutdown, too many connections, a
  database refusing connections) or the driver lost the connection → DatabaseUnavailable;
- another transaction won (serialization failure, deadlock) → DatabaseContention: nothing was
  written, the unit of work may run again;
- jobwire_enqueue's refusal (SQLSTATE 22023, CONSTRAINT jobwire_enqueue, the fields at fault as
  JSON in DETAIL) → ValidationFailed naming `jobs[i].field`;
- a row that references an execution which is gone (a foreign-key violation, 23503, of one of the
  constraints naming job_executions: a handler's log or step inserted while a purge removed its
  execution) → NotFound("execution", id).
Anything else is a bug and stays what it is.
"""

from __future__ import annotations

import re

import asyncpg
import orjson

from app.db.tables import metadata
from app.domain.errors import DatabaseContention, DatabaseUnavailable, FieldError, NotFound, ValidationFailed

_UNAVAILABLE_PREFIXES = ("08", "57P01", "57P02", "57P03", "53300", "55000")
_CONTENTION = ("40001", "40P01")
ENQUEUE_REFUSAL = "jobwire_enqueue"
_FOREIGN_KEY_VIOLATION = "23503"
# Every foreign key that references an execution, by the name the MetaData naming convention gave
# it (tables.py; the migrations create them so named): a new table referencing job_executions is
# covered as soon as tables.py declares it.
EXECUTION_REFERENCES = frozenset(
    str(fk.constraint.name) for table in metadata.tables.values() for fk in table.foreign_keys
    if fk.column.table.name == "job_executions")
# An insert's violation (a delete's reads "is still referenced from table"); the key is left out
# when the role may not read the columns.
_MISSING_ROW = re.compile(r'^Key (?:\([^)]*\)=\((?P<key>[^)]*)\) )?is not present in table "job_executions"')

# The driver's own connection-level failures. InternalClientError is its protocol refusing a
# statement while it is still taking in something the server sent unasked: the FATAL
# "terminating connection" of a backend killed while the connection sat in the pool, read just
# before the socket closes. No statement was sent; the connection is finished either way.
_DRIVER_CONNECTION_ERRORS = (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError,
                             asyncpg.exceptions.ConnectionDoesNotExistError)


def is_connection_problem(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, ConnectionError, *_DRIVER_CONNECTION_ERRORS)):  # TimeoutError too
        return True
    if isinstance(exc, asyncpg.PostgresError):
        return str(exc.sqlstate or "").startswith(_UNAVAILABLE_PREFIXES)
    return False


def translate(exc: BaseException) -> Exception | None:
    """The domain error `exc` stands for, or None when it is not one of the database's answers
    above (then it propagates as it is)."""
    if is_connection_problem(exc):
        return DatabaseUnavailable(first_line(exc))
    if isinstance(exc, asyncpg.PostgresError):
        if exc.sqlstate in _CONTENTION:
            return DatabaseContention(first_line(exc))
        constraint = getattr(exc, "constraint_name", None)
        if constraint == ENQUEUE_REFUSAL:
            return _enqueue_refusal(exc)
        if exc.sqlstate == _FOREIGN_KEY_VIOLATION and constraint in EXECUTION_REFERENCES:
            missing = _MISSING_ROW.match(exc.detail or "")
            if missing:
                return NotFound("execution", missing["key"] or "(deleted meanwhile)")
    return None


def _enqueue_refusal(exc: asyncpg.PostgresError) -> ValidationFailed:
    try:
        errors = orjson.loads(exc.detail or "")
        return ValidationFailed([FieldError(e["field"], e["message"]) for e in errors])
    except (TypeError, KeyError, orjson.JSONDecodeError):
        return ValidationFailed([FieldError("jobs", str(exc))])


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
