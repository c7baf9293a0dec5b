"""How commands print: tables for people (rich), JSON for programs (`--json`).

A list is JSON lines (one object a line, so `| jq` and `| head` work as it streams); anything
else one JSON document. Cells are `Text`, never markup: a payload holding `[bold]` is shown as
sent. Off a terminal rich would fall back to 80 columns and fold every row; a pipe gets
COLUMNS or 200."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any
from uuid import UUID

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jobwire._json import dumps as encode

PIPE_WIDTH = 200


def console() -> Console:
    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS") or PIPE_WIDTH)
    return Console(width=width, highlight=False, soft_wrap=False)


def plain(value: Any) -> Any:
    """The JSON-ready form of what the client returns: a resource as the server sent it (`raw`)."""
    raw = getattr(value, "raw", None)
    if isinstance(raw, dict) and raw:
        return raw
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "raw"}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, datetime, date, UUID)):
        return value
    return str(value)


def dumps(value: Any, indent: int | None = None) -> str:
    """The SDK's one encoder (jobwire._json): times as RFC 3339, integers with every digit."""
    return encode(plain(value), indent=indent)


def print_json(value: Any, indent: int | None = None) -> None:
    sys.stdout.write(dumps(value, indent) + "\n")


def print_json_lines(items: Iterable[Any]) -> int:
    count = 0
    for item in items:
        sys.stdout.write(dumps(item) + "\n")
        count += 1
    sys.stdout.flush()
    return count


def cell(value: Any) -> Text:
    if value is None:
        return Text("")
    if isinstance(value, (dict, list)):
        return Text(dumps(value))
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, datetime):
        return Text(value.isoformat())
    return Text(str(value))


def print_table(columns: Sequence[str], rows: Iterable[Any], title: str | None = None,
                empty: str = "none") -> int:
    """`rows` are dicts (or the client's objects); each column is a key, `counts.ENQUEUED` a nested
    one (headed by its last part). Returns the rows shown."""
    headers = (column.rsplit(".", 1)[-1] for column in columns)
    table = Table(*headers, title=title, title_justify="left", box=None, header_style="bold", pad_edge=False)
    count = 0
    for row in rows:
        values = plain(row)
        table.add_row(*(cell(_pick(values, column)) for column in columns))
        count += 1
    out = console()
    if count:
        out.print(table)
    else:
        out.print(Text(f"{title}: {empty}" if title else empty))
    return count


def print_record(value: Any, title: str | None = None) -> None:
    """One object as a two-column table, field then value."""
    table = Table(show_header=False, title=title, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, item in plain(value).items():
        table.add_row(Text(str(key)), cell(item))
    console().print(table)


def _pick(values: Any, column: str) -> Any:
    """`counts.ENQUEUED` reads a nested key."""
    for part in column.split("."):
        values = values.get(part) if isinstance(values, dict) else None
    return values


def show(args: Any, value: Any, title: str | None = None) -> None:
    """One object: JSON with --json, else a record."""
    if args.json:
        print_json(value)
    else:
        print_record(value, title)


def show_list(args: Any, items: Iterable[Any], columns: Sequence[str], title: str | None = None) -> None:
    """A list: JSON lines with --json, else a table of `columns`."""
    if args.json:
        print_json_lines(items)
    else:
        print_table(columns, items, title)


def said(args: Any, document: Any, text: str) -> None:
    """What a command did: `document` with --json, else `text` as a line."""
    if args.json:
        print_json(document)
    else:
        console().print(Text(text))
