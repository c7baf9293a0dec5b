"""What every resource object shares: read from the API's JSON, tolerant of what a newer server adds.

A resource is a small frozen dataclass rather than a validating model: the SDK stays light, and
a field a newer Jobwire adds is not an error. Its declared fields are the API's (times parsed into
aware datetimes, nested objects into theirs); the JSON as received stays in `raw`, so a client
older than its server still sees every field, and untyped code may read one as an attribute too
(`execution.blockers`). That fallback is hidden from type checkers, so `mypy --strict` still
catches a misspelt field; typed code reads a field the SDK does not know from `raw`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

T = TypeVar("T")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 string from the API (`…Z` included) as an aware datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def times(*names: str) -> dict[str, Callable[[Any], Any]]:
    """Readers for fields that hold RFC 3339 times."""
    return dict.fromkeys(names, parse_time)


def one(kind: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """A reader for a nested object that may be null."""
    return lambda value: None if value is None else kind(value)


def many(kind: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    """A reader for a list of nested objects."""
    return lambda values: [kind(value) for value in values or ()]


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """Base of the SDK's resource objects. `_READERS` turns a field's JSON into its value."""

    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _READERS: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        """The object for the API's JSON `body`; a field the class does not declare stays in `raw`,
        one the server did not send takes the declared default (or is an error when it has none)."""
        if not isinstance(body, Mapping):
            raise TypeError(f"a {cls.__name__} is a JSON object, not {type(body).__name__}")
        values = {f.name: body[f.name] for f in fields(cls) if f.name != "raw" and f.name in body}
        for name, read in cls._READERS.items():
            if name in values:
                values[name] = read(values[name])
        return cls(**values, raw=dict(body))

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            # Reached only for names that are not fields: a newer server's field, from `raw`.
            if name.startswith("__") or name == "raw":
                raise AttributeError(name)
            try:
                return self.raw[name]
            except KeyError:
                raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None
