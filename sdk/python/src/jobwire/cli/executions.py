"""`jobwire executions list | show | attempts | logs | cancel | retry`."""

from __future__ import annotations

import argparse
from itertools import islice

from jobwire.cli import output
from jobwire.cli.arguments import given, positive
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("executions",)
COLUMNS = ("id", "handler", "queue", "state", "attempt", "created_at", "last_error")
ATTEMPT_COLUMNS = ("attempt", "state", "started_at", "duration_ms", "node", "http_status", "error_type", "error")
LOG_COLUMNS = ("logged_at", "attempt", "level", "message")
STATES = ("ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "CANCELLED", "ABANDONED", "DEAD_LETTER")


def register(subparsers: argparse._SubParsersAction) -> None:
    options = client_options()
    group = subparsers.add_parser("executions", help="executions: list, inspect, cancel, retry")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = commands.add_parser("list", parents=[options], help="newest first")
    add_filters(listing)
    listing.add_argument("--limit", type=positive, default=20, help="at most this many (default %(default)s)")
    listing.set_defaults(run=_list)

    for name, run, text in (("show", _show, "one execution"),
                            ("attempts", _attempts, "its attempt history, oldest first"),
                            ("logs", _logs, "its handlers' log entries, oldest first"),
                            ("cancel", _cancel, "ENQUEUED or PROCESSING → CANCELLED"),
                            ("retry", _retry, "DEAD_LETTER or CANCELLED → ENQUEUED, as a new attempt")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("execution_id", metavar="EXECUTION_ID")
        command.set_defaults(run=run)


def add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", choices=STATES)
    parser.add_argument("--queue")
    parser.add_argument("--handler")
    parser.add_argument("--job-id", dest="job_id")


def newest(client, args: argparse.Namespace, limit: int, **filters: str):  # noqa: ANN001, ANN201
    """At most `limit` executions, newest first, asking for no more than that per page."""
    wanted = {**given(args, "state", "queue", "handler", "job_id"), **filters}
    return islice(client.list(limit=min(limit, 500), **wanted), limit)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, newest(client, args, args.limit), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.get(args.execution_id))


def _attempts(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.attempts(args.execution_id), ATTEMPT_COLUMNS)


def _logs(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.logs(args.execution_id), LOG_COLUMNS)


def _cancel(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.cancel(args.execution_id))


def _retry(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.retry(args.execution_id))
