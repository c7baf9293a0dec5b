"""`jobwire executions list | show | attempts | blockers | logs | events | signal | signals | cancel | retry |
delete`, and the bulk actions `bulk-retry | bulk-cancel | bulk-delete` (jobwire.cli.bulk)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from itertools import islice
from typing import Any

from jobwire.cli import bulk, output
from jobwire.cli.arguments import LISTING_FILTERS, execution_id, given, json_value, listing_filters, positive
from jobwire.cli.connection import client_options, open_client
from jobwire.client import JobwireClient
from jobwire.models import Execution

COMMANDS = ("executions",)
COLUMNS = ("id", "handler", "queue", "state", "attempt", "created_at", "last_error")
ATTEMPT_COLUMNS = ("attempt", "state", "started_at", "duration_ms", "node", "http_status", "error_type", "error")
LOG_COLUMNS = ("logged_at", "attempt", "level", "message")
BLOCKER_COLUMNS = ("reason", "until", "next_slot", "queue", "key", "in_flight", "limit", "execution_id", "state",
                   "refs", "signals", "timeout_at")
EVENT_COLUMNS = ("id", "type", "occurred_at", "data.attempt", "data.new_state", "data.error_type", "data.retry_at")
SIGNAL_COLUMNS = ("id", "name", "sent_at", "consumed_at", "payload")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("executions", parents=[options],
                                  help="executions: list, inspect, cancel, retry, delete, act on many")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = commands.add_parser("list", parents=[options], help="newest first")
    listing_filters(listing)
    listing.add_argument("--limit", type=positive, default=20, help="at most this many (default %(default)s)")
    listing.set_defaults(run=_list)

    for name, run, text in (("show", _show, "one execution"),
                            ("attempts", _attempts, "its attempt history, oldest first"),
                            ("blockers", _blockers, "why it is not running now: what holds it back, if anything"),
                            ("logs", _logs, "its handlers' log entries, oldest first"),
                            ("events", _events, "its transition events, oldest first"),
                            ("signals", _signals, "the signals sent to it, oldest first, each with when a wait "
                                                  "consumed it")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("execution_id", metavar="EXECUTION_ID", type=execution_id)
        command.set_defaults(run=run)

    signal = commands.add_parser("signal", parents=[options],
                                 help="send it a named signal: it wakes the execution when it waits for that name, "
                                      "else it is kept for the first wait that names it")
    signal.add_argument("execution_id", metavar="EXECUTION_ID", type=execution_id)
    signal.add_argument("name", metavar="NAME", help="the signal's name (a wait names the signals it waits for)")
    signal.add_argument("--payload", type=json_value,
                        help="JSON (default null), at most 64 KiB: handed to the wait that consumes it")
    signal.set_defaults(run=_signal)

    for name, run, text in (("cancel", _cancel, "ENQUEUED, PROCESSING or WAITING → CANCELLED"),
                            ("retry", _retry, "DEAD_LETTER or CANCELLED → ENQUEUED, as a new attempt"),
                            ("delete", _delete, "delete a finished execution, its logs and events")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("execution_id", metavar="EXECUTION_ID", type=execution_id)
        command.set_defaults(run=run)

    bulk.register(commands, options)


def newest(client: JobwireClient, args: argparse.Namespace, limit: int, **filters: str) -> Iterator[Execution]:
    """At most `limit` executions, newest first, asking for no more than that per page."""
    wanted: dict[str, Any] = {**given(args, *LISTING_FILTERS), **filters}
    return islice(client.executions.list(limit=min(limit, 500), **wanted), limit)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, newest(client, args, args.limit), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.executions.get(args.execution_id))


def _attempts(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.executions.attempts(args.execution_id), ATTEMPT_COLUMNS)


def _blockers(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        found = client.executions.blockers(args.execution_id)
    if args.json:
        output.print_json(found.raw)
    elif not found.items:
        output.said(args, found.raw, f"{found.state}: nothing holds it back"
                    + (" (it waits only for a free slot of a node)" if found.state == "ENQUEUED" else ""))
    else:
        output.show_list(args, found.items, BLOCKER_COLUMNS, title=f"{found.state}, held back by")


def _logs(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.executions.logs(args.execution_id), LOG_COLUMNS)


def _events(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.executions.events(args.execution_id), EVENT_COLUMNS)


def _signals(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.executions.signals(args.execution_id), SIGNAL_COLUMNS)


def _signal(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        sent = client.executions.signal(args.execution_id, args.name, args.payload)
    what = ("it woke the execution" if sent.woke
            else "kept until a wait of the execution names it")
    output.said(args, sent.raw, f"sent signal {args.name} (id {sent.id}) to execution {args.execution_id}: {what}")


def _cancel(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.executions.cancel(args.execution_id))


def _retry(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.executions.retry(args.execution_id))


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.executions.delete(args.execution_id)
    output.said(args, {"deleted": args.execution_id}, f"deleted execution {args.execution_id}")
