"""`jobwire executions bulk-retry | bulk-cancel | bulk-delete [ID …] [--state S] [--queue Q]
[--handler H] [--job-id J] [--limit N] [--yes] [--dry-run]`.

By ids, the executions named are acted on (in requests of at most 10,000 ids). By filter, one
request acts on at most `--limit` of what matches, so the command sends it again with the
answer's cursor while the answer says `more` (one pass over what existed at the first request),
and reports the totals; it asks first on a terminal (`--yes` does not ask,
and is needed when stdin is not one: a script says what it means). A request that changed and
skipped nothing while `more` stops the command (exit 1) rather than repeat it forever.

`--dry-run` changes nothing and asks nothing: one request by filter (or one per 10,000 ids) says
how many executions the action would take now, at most `--limit` (default 10,000), and whether
more match beyond it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import execution_filters, execution_id, given, positive
from jobwire.cli.connection import open_client
from jobwire.cli.failures import CommandError
from jobwire.models import BulkResult

MAX_IDS = 10_000  # the API's limit of ids (and of `limit`) in one request
ACTIONS = {
    "bulk-retry": ("retry", "DEAD_LETTER and CANCELLED → ENQUEUED, each as a new attempt"),
    "bulk-cancel": ("cancel", "ENQUEUED and PROCESSING → CANCELLED"),
    "bulk-delete": ("delete", "delete the finished ones, with their logs and events"),
}
FILTERS = ("state", "queue", "handler", "job_id")


@dataclass
class Totals:
    matched: int = 0
    changed: int = 0
    skipped: int = 0
    requests: int = 0

    def add(self, result: BulkResult) -> None:
        self.matched += result.matched
        self.changed += result.changed
        self.skipped += result.skipped
        self.requests += 1


def register(commands: argparse._SubParsersAction[Any], options: argparse.ArgumentParser) -> None:
    for name, (action, text) in ACTIONS.items():
        command = commands.add_parser(name, parents=[options], help=f"{text}: the ids given, or every execution "
                                      "the filters match")
        command.add_argument("ids", nargs="*", metavar="ID", type=execution_id, help="execution ids")
        execution_filters(command)
        command.add_argument("--limit", type=positive, help=f"executions a request takes (at most {MAX_IDS})")
        command.add_argument("--yes", action="store_true", help="by filter: do not ask first")
        command.add_argument("--dry-run", dest="dry_run", action="store_true",
                             help="change nothing: say how many executions it would take now")
        command.set_defaults(run=_run, action_name=action, parser=command)


def _run(args: argparse.Namespace) -> int:
    filters = given(args, *FILTERS)
    if not args.ids and not filters:
        args.parser.error("give execution ids, or at least one of --state, --queue, --handler, --job-id")
    if args.limit is not None and args.limit > MAX_IDS:
        args.parser.error(f"--limit is at most {MAX_IDS}")
    if args.dry_run:
        return _dry_run(args, filters)
    if not args.ids:
        _confirm(args, filters)
    totals = Totals()
    stalled = False
    with open_client(args) as client:
        act = getattr(client.executions, f"bulk_{args.action_name}")
        if args.ids:
            for start in range(0, len(args.ids), MAX_IDS):
                totals.add(act(ids=args.ids[start:start + MAX_IDS], **filters))
        else:
            cursor = None
            while True:
                result = act(limit=args.limit, cursor=cursor, **filters)
                totals.add(result)
                cursor = result.next_cursor
                if not result.more:
                    break
                if result.changed + result.skipped == 0:  # the server made no progress: asking again would loop
                    stalled = True
                    break
    name = f"bulk-{args.action_name}"
    output.said(args, {"matched": totals.matched, "changed": totals.changed, "skipped": totals.skipped,
                       "requests": totals.requests, "complete": not stalled},
                f"{name}: {totals.changed} changed, {totals.skipped} skipped of {totals.matched} matched "
                f"({totals.requests} {'request' if totals.requests == 1 else 'requests'})")
    if stalled:
        raise CommandError(f"{name}: stopped: the last request changed nothing though more executions match")
    return 0


def _dry_run(args: argparse.Namespace, filters: dict[str, str]) -> int:
    matched, more = 0, False
    with open_client(args) as client:
        act = getattr(client.executions, f"bulk_{args.action_name}")
        if args.ids:
            for start in range(0, len(args.ids), MAX_IDS):
                matched += act(ids=args.ids[start:start + MAX_IDS], dry_run=True, **filters).matched
        else:
            found = act(limit=args.limit, dry_run=True, **filters)
            matched, more = found.matched, found.more
    output.said(args, {"matched": matched, "more": more},
                f"bulk-{args.action_name} (dry run): would take {matched} "
                f"{'execution' if matched == 1 else 'executions'}{', and more match beyond --limit' if more else ''}; "
                "nothing changed")
    return 0


def _confirm(args: argparse.Namespace, filters: dict[str, str]) -> None:
    if args.yes:
        return
    what = ", ".join(f"{k.replace('_', '-')}={v}" for k, v in filters.items())
    if not sys.stdin.isatty():
        raise CommandError(f"bulk-{args.action_name} by filter ({what}): add --yes to confirm "
                           "(stdin is not a terminal to ask on)", status=2)
    print(f"bulk-{args.action_name}: {ACTIONS[f'bulk-{args.action_name}'][1]}, for every execution with {what}. "
          "Go on? [y/N] ", end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CommandError("not confirmed: nothing was done")
