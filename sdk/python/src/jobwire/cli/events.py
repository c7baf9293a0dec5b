"""`jobwire events list | tail`: the feed of every execution's transition events, one page at a
time (with the cursor to go on from), or followed as it grows (its server-sent event stream), one
JSON line an event."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from jobwire.cli import output
from jobwire.errors import ProblemError
from jobwire.models import Event
from jobwire.resources import EventFeed, EventStream
from jobwire.cli.arguments import given, positive
from jobwire.cli.connection import client_options, open_client, seconds
from jobwire.cli.failures import CommandError

COMMANDS = ("events",)
COLUMNS = ("id", "type", "occurred_at", "data.execution_id", "data.queue", "data.handler")
TYPES_HELP = ("only these event types, comma-separated: execution.succeeded, execution.failed, execution.abandoned, "
              "execution.dead_lettered, execution.cancelled, execution.retried, workflow.succeeded, workflow.failed, "
              "workflow.cancelled")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("events", parents=[options],
                                  help="the feed of every execution's transition events: a page, or followed")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = commands.add_parser("list", parents=[options], help="one page of the feed, oldest first, and the "
                                  "cursor the next page starts at (with --json: the page as one document)")
    _feed_options(listing)
    listing.add_argument("--limit", type=positive, help="at most this many (default 100, at most 1000)")
    listing.set_defaults(run=_list)

    tail = commands.add_parser("tail", parents=[options], help="follow the feed as the node streams it (server-sent "
                               "events), one JSON line an event, until interrupted (Ctrl-C then says the cursor to "
                               "resume from, on stderr)")
    _feed_options(tail)
    tail.add_argument("--poll", type=seconds, default=1.0, metavar="SECONDS",
                      help="against a node without the stream (an older Jobwire), how long to wait before asking the "
                           "feed again at its end (default %(default)s)")
    tail.set_defaults(run=_tail)


def _feed_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--after", metavar="CURSOR",
                        help="start after this cursor (a page's next cursor); default: from the oldest stored event")
    parser.add_argument("--types", metavar="TYPES", help=TYPES_HELP)
    parser.add_argument("--queue", help="only events of this queue")
    parser.add_argument("--handler", help="only events of this handler")


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    filters = given(args, "queue", "handler")
    if args.types is not None:
        types = [name.strip() for name in args.types.split(",") if name.strip()]
        if not types:
            raise CommandError(f"--types: names no event type: {args.types!r}", status=2)
        filters["types"] = types
    return filters


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        page = client.events.page(args.after, limit=args.limit, **_filters(args))
    if args.json:
        output.print_json(page)
        return
    output.print_table(COLUMNS, page.items, empty="no events")
    output.console().print(f"next cursor: {page.next_cursor}", markup=False)


def _tail(args: argparse.Namespace) -> None:
    filters = _filters(args)
    with open_client(args) as client:
        feed: EventStream | EventFeed = client.events.stream(args.after, **filters)
        try:
            try:
                _print_each(feed)
            except ProblemError as refused:
                if refused.status != 404:
                    raise
                # A node without the stream (before it, or behind a proxy that routes it nowhere):
                # poll the feed from where the stream was.
                feed = client.events.follow(feed.cursor or args.after, poll_seconds=args.poll, **filters)
                _print_each(feed)
        except KeyboardInterrupt:
            if feed.cursor is not None:
                print(f"jobwire: stopped; resume with --after {feed.cursor}", file=sys.stderr)
            raise


def _print_each(events: Iterable[Event]) -> None:
    for event in events:
        sys.stdout.write(output.dumps(event) + "\n")  # the item as the API sends it (a stream's cursor is not in it)
        sys.stdout.flush()
