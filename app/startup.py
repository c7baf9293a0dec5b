"""Start-up failures an operator can fix, each said in one line naming the setting at fault.

`jobwire serve` prints `jobwire: cannot start: <SETTING>: <cause>` and exits 2, without a
traceback. What is not recognised here is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import socket
from urllib.parse import parse_qs, urlsplit

from app.domain.handler_secrets import UnreadableSecret

EXIT_STATUS = 2
# The server's refusals an operator fixes (SQLSTATE classes, or codes): connection exceptions,
# invalid authorization, no such database or schema, insufficient resources (too many
# connections), a server shutting down or starting, insufficient privilege. Any other error
# (a revision's SQL failing, say) is a bug, and keeps its traceback.
_REFUSALS = ("08", "28", "3D", "3F", "53", "57P", "42501")


class StartupFailure(Exception):
    def __init__(self, setting: str, cause: str) -> None:
        super().__init__(f"{setting}: {cause}")
        self.setting = setting
        self.cause = cause


def database_address(url: str) -> str:
    """Where a postgresql:// URL points, without its credentials: host:port, or the socket directory."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ",".join(parse_qs(parts.query).get("host", [])) or "localhost"
        port = parts.port or 5432
    except ValueError:  # several hosts, or a port that is not a number: as written, less the credentials
        netloc = urlsplit(url).netloc
        return netloc.rpartition("@")[2] or "localhost"
    if host.startswith("/"):
        return f"{host} (unix socket, port {port})"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _causes(exc: BaseException) -> list[BaseException]:
    """exc and what it wraps: `__cause__`/`__context__`, and SQLAlchemy's `.orig`."""
    seen: list[BaseException] = []
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop(0)
        if current is None or any(current is s for s in seen) or len(seen) > 20:
            continue
        seen.append(current)
        orig = getattr(current, "orig", None)
        pending.extend([orig if isinstance(orig, BaseException) else None, current.__cause__, current.__context__])
    return seen


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def database_failure(exc: BaseException, url: str, setting: str = "JOBWIRE_DATABASE_URL") -> StartupFailure | None:
    """What reaching the database at `url` ran into, if it is the database's or the network's
    answer (not a bug): the server's own words for a refusal (`database "x" does not exist`,
    `password authentication failed …`), or the connection's failure."""
    where = database_address(url)
    causes = _causes(exc)
    for cause in causes:
        sqlstate = getattr(cause, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_REFUSALS):
            return StartupFailure(setting, f"{_first_line(cause)} (PostgreSQL at {where}, SQLSTATE {sqlstate})")
    for cause in causes:
        if isinstance(cause, socket.gaierror):
            return StartupFailure(setting, f"could not connect to {where} (host not found: {cause.strerror})")
        if isinstance(cause, TimeoutError):
            return StartupFailure(setting, f"could not connect to {where} (timed out)")
        if isinstance(cause, ConnectionRefusedError):
            return StartupFailure(setting, f"could not connect to {where} (connection refused)")
        if isinstance(cause, OSError):
            why = cause.strerror or _first_line(cause)
            return StartupFailure(setting, f"could not connect to {where} ({why[:1].lower() + why[1:]})")
    for cause in causes:
        if type(cause).__name__ == "ClientConfigurationError":  # asyncpg's refusal of a URL parameter
            return StartupFailure(setting, f"{_first_line(cause)}")
        if isinstance(cause, ValueError) and "database URL" in str(cause):
            return StartupFailure(setting, _first_line(cause))
    return None


def secret_key_failure(exc: BaseException) -> StartupFailure | None:
    """A secret at rest this node cannot read (app/services/secrets_at_rest.py): JOBWIRE_SECRET_KEY
    is unset, or holds none of the keys the database's secrets were encrypted with."""
    if not isinstance(exc, UnreadableSecret):
        return None
    return StartupFailure("JOBWIRE_SECRET_KEY", f"{exc}: set it to the key the other nodes use (when rotating, "
                                                "the new key first, then the old one, comma-separated)")


def listen_failure(exc: OSError, host: str, port: int) -> StartupFailure:
    """Binding or listening on host:port failed."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, socket.gaierror):
        return StartupFailure("JOBWIRE_HOST", f"cannot listen on {where}: host not found ({exc.strerror})")
    if exc.errno == errno.EADDRINUSE:
        return StartupFailure("JOBWIRE_PORT", f"cannot listen on {where}: the address is already in use "
                                              "(another process listens on this port)")
    if exc.errno == errno.EACCES:
        return StartupFailure("JOBWIRE_PORT", f"cannot listen on {where}: permission denied "
                                              "(ports below 1024 need privileges)")
    if exc.errno == errno.EADDRNOTAVAIL:
        return StartupFailure("JOBWIRE_HOST", f"cannot listen on {where}: no interface of this machine has "
                                              "that address")
    why = exc.strerror or _first_line(exc)
    return StartupFailure("JOBWIRE_PORT", f"cannot listen on {where}: {why[:1].lower() + why[1:]}")


def open_files_limit(needed: int) -> tuple[int, int] | None:
    """Raises this process's soft limit of open files to its hard limit, or, where the kernel caps
    that lower, to `needed` within it; never lowers it. A node's calls in flight each hold a
    connection, as do handlers calling back and the database pool: at the default concurrency a
    node held some 660 in a callback drain (bench/README.md, 2026-12-07), against a soft limit of
    1,024 on most systems. (soft limit after, hard limit), or None where there is no such limit
    (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a hard limit the kernel caps lower (nr_open, macOS's OPEN_MAX)
            target = max(soft, needed)
            if hard != resource.RLIM_INFINITY:
                target = min(target, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
    return soft, hard


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (not yet listening: uvicorn listens once the node has
    started), as uvicorn binds one; StartupFailure when the address cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise listen_failure(exc, host, port) from exc
    sock.set_inheritable(True)
    return sock
