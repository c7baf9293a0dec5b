"""The PostgreSQL server of one benchmark run: an embedded one in a fresh temporary data
directory (unix socket only), or an external server (--database-url / JOBWIRE_DATABASE_URL).

Jobwire gets its own database on the embedded server, or a fresh schema on an external one;
the claim-cost table and every peer get a database of their own. All of it is dropped at the end.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import asyncpg
from sqlalchemy.engine import make_url


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def plain_dsn(url: str) -> str:
    """A DSN asyncpg, psycopg and libpq all accept."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass
class Server:
    url: str  # postgresql://… of the maintenance database
    embedded: bool
    tag: str = field(default_factory=lambda: f"{os.getpid()}_{secrets.token_hex(3)}")
    created: list[str] = field(default_factory=list)
    _embedded: object | None = None
    _tmp: str | None = None

    @classmethod
    def start(cls, external_url: str | None) -> Server:
        if external_url:
            return cls(url=plain_dsn(external_url), embedded=False)
        from app.db.embedded import EmbeddedPostgres

        tmp = tempfile.mkdtemp(prefix="jobwire-bench-pg-")
        pg = EmbeddedPostgres(Path(tmp))
        url = pg.start()
        return cls(url=plain_dsn(url), embedded=True, _embedded=pg, _tmp=tmp)

    async def admin(self, sql: str) -> None:
        conn = await asyncpg.connect(self.url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def create_database(self, purpose: str, template: str | None = None) -> str:
        """A new database; with `template` (the URL of another one, which nothing may be connected
        to), a copy of it, file by file (STRATEGY FILE_COPY: a 2 GB template takes seconds, not
        the minutes of writing it all to WAL)."""
        name = f"jobwire_bench_{self.tag}_{purpose}"
        if template is None:
            await self.admin(f'CREATE DATABASE "{name}"')
        else:
            source = make_url(template).database
            for attempt in range(50):
                try:
                    await self.admin(f'CREATE DATABASE "{name}" TEMPLATE "{source}" STRATEGY FILE_COPY')
                    break
                except asyncpg.ObjectInUseError:  # an autovacuum worker is on the template: a moment
                    if attempt == 49:
                        raise
                    await asyncio.sleep(0.2)
        self.created.append(name)
        return with_database(self.url, name)

    async def drop_database(self, url: str) -> None:
        """Drop one database create_database made (its URL), now rather than at the end."""
        name = make_url(url).database
        await self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    async def drop_all(self) -> None:
        for name in self.created:
            await self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.clear()

    def stop(self) -> None:
        if self._embedded is not None:
            self._embedded.stop()  # type: ignore[attr-defined]
            self._embedded = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def libpq_env(self, url: str) -> dict[str, str]:
        """PGHOST/PGPORT/PGUSER/PGDATABASE for pgbench and psql (a socket directory on embedded)."""
        parsed = urlparse(url)
        query = parse_qs(parsed.query)
        host = (query.get("host") or [parsed.hostname or "127.0.0.1"])[0]
        port = (query.get("port") or [str(parsed.port or "")])[0]
        if not port and host.startswith("/"):
            sockets = sorted(Path(host).glob(".s.PGSQL.*"))
            port = sockets[0].suffix.lstrip(".") if sockets else "5432"
        env = {"PGHOST": host, "PGPORT": port or "5432", "PGUSER": parsed.username or "postgres",
               "PGDATABASE": parsed.path.lstrip("/")}
        if parsed.password:
            env["PGPASSWORD"] = parsed.password
        return env
