"""The SQL functions: their current text, one file each in app/db/sql/functions, and how a
revision applies its frozen copies.

A file is one complete `CREATE OR REPLACE FUNCTION`, as pasteable into psql, with
`SET search_path FROM CURRENT` (the function keeps the search path of the session that created
it). A function that must differ by server version has `<name>.pg<major>.sql` beside it, used on
that major version and later. A revision that changes a function carries a frozen copy of its
whole new text (alembic/versions/<revision>/<name>.sql) and applies it with `apply`; never a
patch of `pg_get_functiondef` output. A test compares the newest copies with these files and a
database at head with both.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection

_VARIANT = re.compile(r"^(?P<name>\w+)(?:\.pg(?P<major>\d+))?\.sql$")


def current_directory() -> Path:
    return Path(str(resources.files("app.db") / "sql" / "functions"))


def files_for(directory: Path, server_major: int) -> dict[str, Path]:
    """Per function name, its file for this server: the variant of the highest major version
    not above `server_major`, else the plain file."""
    chosen: dict[str, tuple[int, Path]] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _VARIANT.match(path.name)
        if match is None:
            continue
        major = int(match["major"] or 0)
        if major <= server_major and major >= chosen.get(match["name"], (-1, path))[0]:
            chosen[match["name"]] = (major, path)
    return {name: path for name, (_, path) in chosen.items()}


def apply(bind: Connection, directory: Path, only: frozenset[str] | None = None) -> None:
    """Create or replace the functions of `directory` (`only` those named, if given), pinned to the
    schema the migration runs in: search_path is that one schema while they are created. Bodies
    are not checked at creation (check_function_bodies off, as pg_dump does), so the order does
    not matter."""
    major = int(bind.exec_driver_sql("SHOW server_version_num").scalar_one()) // 10000
    previous = bind.exec_driver_sql(
        "SELECT current_setting('search_path'), current_setting('check_function_bodies')").one()
    bind.exec_driver_sql("SELECT set_config('search_path', quote_ident(current_schema()), true), "
                         "set_config('check_function_bodies', 'off', true)")
    try:
        for name, path in sorted(files_for(directory, major).items()):
            if only is not None and name not in only:
                continue
            bind.exec_driver_sql(path.read_text(encoding="utf-8"))
    finally:
        bind.execute(text("SELECT set_config('search_path', :path, true), "
                          "set_config('check_function_bodies', :check, true)"),
                     {"path": previous[0], "check": previous[1]})
