"""`jobwire jobs enqueue HANDLER [fields]`, `jobwire jobs enqueue --from FILE.jsonl`, and the
older spelling `jobwire enqueue HANDLER [--payload JSON] [--queue Q]`, which prints the
execution as indented JSON as it always did."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobwire.cli import output
from jobwire.cli.arguments import given, json_object, json_value, positive
from jobwire.cli.connection import client_options, open_client
from jobwire.cli.importing import (
    BATCH_SIZE,
    KEY_PREFIX,
    MAX_BATCH,
    Keys,
    Tally,
    count_lines,
    key_prefix,
    read_jobs,
    send,
)
from jobwire.errors import ProblemError

COMMANDS = ("jobs", "enqueue")
FIELDS = ("queue", "priority", "job_id", "run_at", "delay_seconds", "max_attempts", "timeout_seconds",
          "max_duration_seconds", "parameters", "metadata", "stateful", "idempotency_key", "concurrency_key")
SHOWN_FAILURES = 20  # failed lines said on stderr; the summary counts them all


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("jobs", parents=[options], help="enqueue jobs, one or a file of them")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    enqueue = commands.add_parser("enqueue", parents=[options], help="enqueue a job, or every job of a JSONL file")
    job_arguments(enqueue, handler_required=False)
    enqueue.add_argument("--from", dest="source", metavar="FILE.jsonl", type=Path,
                         help="one job object a line; the options above are defaults for every line")
    enqueue.add_argument("--batch-size", type=batch_size, default=BATCH_SIZE,
                         help="jobs a request (1–1000, default %(default)s)")
    enqueue.add_argument("--key-prefix", default=KEY_PREFIX, type=key_prefix,
                         help="of the idempotency keys made for lines without one (default %(default)s): "
                         "another prefix makes the same lines new jobs")
    enqueue.set_defaults(run=_enqueue, parser=enqueue)

    legacy = subparsers.add_parser("enqueue", parents=[options], help="enqueue a job on a running server")
    job_arguments(legacy, handler_required=True)
    legacy.set_defaults(run=_enqueue_one_as_before)


def batch_size(text: str) -> int:
    size = positive(text)
    if size > MAX_BATCH:
        raise argparse.ArgumentTypeError(f"at most {MAX_BATCH}: {size}")
    return size


def job_arguments(parser: argparse.ArgumentParser, handler_required: bool) -> None:
    parser.add_argument("handler", metavar="HANDLER", nargs=None if handler_required else "?",
                        help="a registered handler's name")
    parser.add_argument("--payload", type=json_value, help="JSON (default null)")
    parser.add_argument("--queue")
    parser.add_argument("--priority", type=int)
    parser.add_argument("--job-id", dest="job_id")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--run-at", dest="run_at", help="RFC 3339, with a time zone")
    when.add_argument("--delay-seconds", dest="delay_seconds", type=float)
    parser.add_argument("--max-attempts", dest="max_attempts", type=positive)
    parser.add_argument("--timeout-seconds", dest="timeout_seconds", type=float)
    parser.add_argument("--max-duration-seconds", dest="max_duration_seconds", type=float)
    parser.add_argument("--parameters", type=json_object, help="a JSON object")
    parser.add_argument("--metadata", type=json_object, help="a JSON object")
    parser.add_argument("--stateful", action="store_true", default=None)
    parser.add_argument("--idempotency-key", dest="idempotency_key")
    parser.add_argument("--concurrency-key", dest="concurrency_key",
                        help="the key it shares its handler's key_concurrency and key_rate_limit with")


def _enqueue(args: argparse.Namespace) -> int:
    if args.source is not None:
        return _import(args)
    if args.handler is None:
        args.parser.error("a HANDLER, or --from FILE.jsonl")
    output.show(args, _enqueue_one(args))
    return 0


def _enqueue_one(args: argparse.Namespace) -> Any:
    with open_client(args) as client:
        return client.jobs.enqueue(args.handler, args.payload, **given(args, *FIELDS))


def _enqueue_one_as_before(args: argparse.Namespace) -> None:
    execution = _enqueue_one(args)
    output.print_json(execution, indent=None if args.json else 2)


def _defaults(args: argparse.Namespace) -> dict[str, Any]:
    defaults = given(args, "handler", "payload", *FIELDS)
    defaults.pop("idempotency_key", None)  # one key for every line would make them one job
    return defaults


def _import(args: argparse.Namespace) -> int:
    total = count_lines(args.source)
    defaults = _defaults(args)
    tally = Tally()
    stderr = Console(stderr=True)
    progress = Progress(TextColumn("enqueue"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=stderr, disable=args.json or not stderr.is_terminal)
    try:
        with open_client(args) as client, progress:
            task = progress.add_task("enqueue", total=total)
            batch: list[tuple[int, dict[str, Any]]] = []
            keys = Keys(args.key_prefix)
            for line, job in read_jobs(args.source):
                if isinstance(job, str):
                    tally.fail(line, job)
                else:
                    batch.append((line, keys.given({**defaults, **job})))
                if len(batch) >= args.batch_size:
                    send(client, batch, tally)
                    batch = []
                progress.update(task, completed=tally.done + len(batch))
            send(client, batch, tally)
            progress.update(task, completed=tally.done)
    except ProblemError:
        _report(args, tally, stopped=True)  # what was enqueued before the failure stays enqueued
        raise
    _report(args, tally)
    return 1 if tally.failed else 0


def _report(args: argparse.Namespace, tally: Tally, stopped: bool = False) -> None:
    for failure in tally.failure_lines()[:SHOWN_FAILURES]:
        print(f"jobwire: {args.source}: {failure}", file=sys.stderr)
    if len(tally.failures) > SHOWN_FAILURES:
        print(f"jobwire: {args.source}: {len(tally.failures) - SHOWN_FAILURES} more lines failed",
              file=sys.stderr)
    state = "stopped" if stopped else "done"
    output.said(args, {**tally.summary(), "complete": not stopped},
                f"{args.source}: {tally.created} created, {tally.existing} existing, {tally.failed} failed ({state})")
