"""Who a management request acts as: the scopes of its API key, and the queues it is limited to.

Scopes (DESIGN §8, the security issue): `read` (every GET but the keys), `enqueue` (POST /v1/jobs,
/v1/jobs/batch), `operate` (read, plus cancel, retry and delete of executions, the bulk actions,
pause and resume), `admin` (everything: handlers and their secrets, schedules and trigger, keys).
`operate` implies `read`; `admin` implies every scope. A key's `queues` (None: every queue) limits
what it may see and touch of executions, queues and schedules: another queue's item is NotFound to
it, as one that does not exist; a listing shows its queues' only; a write into another queue is
Forbidden, naming it. Handlers, nodes and the keys themselves belong to no queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from app.domain.errors import Forbidden


class Scope(StrEnum):
    READ = "read"
    ENQUEUE = "enqueue"
    OPERATE = "operate"
    ADMIN = "admin"


# The scopes each scope grants (itself included).
IMPLIES: dict[Scope, frozenset[Scope]] = {
    Scope.READ: frozenset({Scope.READ}),
    Scope.ENQUEUE: frozenset({Scope.ENQUEUE}),
    Scope.OPERATE: frozenset({Scope.OPERATE, Scope.READ}),
    Scope.ADMIN: frozenset(Scope),
}


def granted(scopes: Iterable[Scope]) -> frozenset[Scope]:
    """Every scope that `scopes` grant, the implied ones included."""
    return frozenset().union(*(IMPLIES[s] for s in scopes))


def granting(needed: Scope) -> tuple[Scope, ...]:
    """The scopes that grant `needed`, in declaration order (read: read, operate, admin)."""
    return tuple(s for s in Scope if needed in IMPLIES[s])


@dataclass(frozen=True, slots=True)
class Principal:
    """A request's credential: its key's scopes and queues (None: every queue). `key_id` is the
    database key's id; None for a bootstrap key (JOBWIRE_API_KEYS) or an open API."""

    scopes: frozenset[Scope]
    queues: frozenset[str] | None = None
    key_id: UUID | None = None
    name: str | None = None
    _granted: frozenset[Scope] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_granted", granted(self.scopes))

    def require(self, needed: Scope) -> None:
        """Forbidden, naming the scope lacked, unless this key's scopes grant `needed`."""
        if needed not in self._granted:
            held = ", ".join(s.value for s in Scope if s in self.scopes)
            raise Forbidden(f"this key has scopes [{held}]; {needed.value} is needed (granted by "
                            f"{' or '.join(s.value for s in granting(needed))})", scope=needed.value)


# A bootstrap key, or any request while the API is open: every scope, every queue.
FULL_ACCESS = Principal(scopes=frozenset({Scope.ADMIN}))


def may_use(queues: frozenset[str] | None, queue: str) -> bool:
    """A key limited to `queues` (None: every one) may see and touch what is in `queue`."""
    return queues is None or queue in queues


def limited_to(queues: frozenset[str]) -> str:
    """The start of every refusal of a queue-limited key."""
    return f"this key is limited to queues [{', '.join(sorted(queues))}]"


def require_queue(queues: frozenset[str] | None, queue: str, what: str = "queue") -> None:
    """Forbidden, naming the queue, unless a key limited to `queues` (None: every one) may use it."""
    if queues is not None and queue not in queues:
        raise Forbidden(f"{limited_to(queues)}; {what} {queue!r} is not one of them", queue=queue)


def require_every_queue(queues: frozenset[str] | None, what: str) -> None:
    """Forbidden for a key limited to queues: `what` spans every queue (a handler's concurrency key
    holds jobs of any queue, so its counts and its pause reach past the key's queues)."""
    if queues is not None:
        raise Forbidden(f"{limited_to(queues)}; {what} spans every queue")


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key kept in the database (job_api_keys); the key itself is stored only as its hash."""

    id: UUID
    name: str
    scopes: tuple[Scope, ...]
    queues: tuple[str, ...] | None
    created_at: datetime

    def principal(self) -> Principal:
        return Principal(scopes=frozenset(self.scopes),
                         queues=None if self.queues is None else frozenset(self.queues),
                         key_id=self.id, name=self.name)
