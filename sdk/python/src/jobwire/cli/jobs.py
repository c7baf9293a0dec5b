"""`jobwire jobs enqueue HANDLER [fields]`, `jobwire jobs enqueue --from FILE.jsonl`, and the
older spelling `jobwire enqueue HANDLER [--payload JSON] [--queue Q]`, which prints the
execution as indented JSON as it always did. A single enqueue may debounce (`--debounce-key`
with `--debounce-delay`): the answer is then the execution that took it, with `debounced`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from jobwire.cli import output
from jobwire.cli.arguments import given, json_object, json_value, positive
from jobwire.cli.connection import client_options, open_client, seconds
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
from jobwire.types import DebounceSpec

COMMANDS = ("jobs", "enqueue")
FIELDS = ("queue", "priority", "job_id", "run_at", "delay_seconds", "max_attempts", "timeout_seconds",
          "max_duration_seconds", "parameters", "metadata", "stateful", "idempotency_key", "concurrency_key")
SHOWN_FAILURES = 20  # failed lines said on stderr; the summary counts them all
DEBOUNCE_MODES = ("trailing", "leading")


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
    legacy.set_defaults(run=_enqueue_one_as_before, parser=legacy)


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
    when.add_argument("--debounce-key", dest="debounce_key", metavar="KEY",
                      help="while an execution of the handler with this debounce key waits, the enqueue goes to it "
                      "instead of making another (with --debounce-delay; one job only)")
    parser.add_argument("--debounce-delay", dest="debounce_delay", type=seconds, metavar="SECONDS",
                        help="trailing: the waiting execution is due this long after the latest enqueue; leading: "
                        "enqueues are dropped until this long after the latest one (at most 86400)")
    parser.add_argument("--debounce-max-delay", dest="debounce_max_delay", type=seconds, metavar="SECONDS",
                        help="never later than this long after the run's first enqueue (default and most 86400)")
    parser.add_argument("--debounce-mode", dest="debounce_mode", choices=DEBOUNCE_MODES,
                        help="trailing (the server's default): the latest enqueue's payload runs once the enqueues "
                        "stop; leading: the first runs at once, the rest within the window are dropped")
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
        if debounce_of(args) is not None:
            args.parser.error("--debounce-key debounces one job: not with --from (a batch refuses it)")
        return _import(args)
    if args.handler is None:
        args.parser.error("a HANDLER, or --from FILE.jsonl")
    output.show(args, _enqueue_one(args))
    return 0


def debounce_of(args: argparse.Namespace) -> DebounceSpec | None:
    """The job's `debounce` from the --debounce-* options, None without them; a usage error when
    --debounce-key and --debounce-delay are not given together, or another comes without them."""
    key, delay = args.debounce_key, args.debounce_delay
    if key is None and delay is None:
        others = [option for option, value in (("--debounce-max-delay", args.debounce_max_delay),
                                               ("--debounce-mode", args.debounce_mode)) if value is not None]
        if others:
            need = "needs" if len(others) == 1 else "need"
            args.parser.error(f"{' and '.join(others)} {need} --debounce-key KEY and --debounce-delay SECONDS")
        return None
    if key is None or delay is None:
        given_one, missing = ("--debounce-key", "--debounce-delay SECONDS") if delay is None else (
            "--debounce-delay", "--debounce-key KEY")
        args.parser.error(f"{given_one} needs {missing}: a debounce has both")
    debounce: DebounceSpec = {"key": key, "delay_seconds": delay}
    if args.debounce_max_delay is not None:
        debounce["max_delay_seconds"] = args.debounce_max_delay
    if args.debounce_mode is not None:
        debounce["mode"] = args.debounce_mode
    return debounce


def _enqueue_one(args: argparse.Namespace) -> Any:
    debounce = debounce_of(args)
    with open_client(args) as client:
        return client.jobs.enqueue(args.handler, args.payload, **given(args, *FIELDS), debounce=debounce)


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
