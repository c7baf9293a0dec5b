"""`jobwire schedules list | show | put | delete | trigger | preview`."""

from __future__ import annotations

import argparse
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import given, json_object, json_value, positive
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("schedules",)
COLUMNS = ("job_id", "cron", "timezone", "handler", "queue", "enabled", "next_fire_at", "last_fired_at",
           "consecutive_failures")
SPEC = ("cron", "timezone", "handler", "queue", "payload", "parameters", "metadata", "priority", "enabled",
        "execution_mode", "overlap_policy", "misfire_policy", "max_attempts", "tracked")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("schedules", parents=[options], help="cron schedules")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    commands.add_parser("list", parents=[options], help="every schedule").set_defaults(run=_list)

    put = commands.add_parser("put", parents=[options], help="create or replace a schedule "
                              "(an identical one changes nothing)")
    put.add_argument("job_id", metavar="JOB_ID")
    put.add_argument("--cron", required=True, help="e.g. '*/5 * * * *' (a sixth, leading field: seconds)")
    put.add_argument("--handler", required=True)
    put.add_argument("--timezone", help="IANA name (default UTC)")
    put.add_argument("--queue")
    put.add_argument("--payload", type=json_value, help="JSON")
    put.add_argument("--parameters", type=json_object, help="a JSON object")
    put.add_argument("--metadata", type=json_object, help="a JSON object")
    put.add_argument("--priority", type=int)
    put.add_argument("--enabled", action=argparse.BooleanOptionalAction, default=None)
    put.add_argument("--execution-mode", dest="execution_mode", help="SINGLE_INSTANCE or EVERY_INSTANCE")
    put.add_argument("--overlap-policy", dest="overlap_policy", help="SKIP or QUEUE_ONE")
    put.add_argument("--misfire-policy", dest="misfire_policy", help="FIRE_ONCE or SKIP")
    put.add_argument("--max-attempts", dest="max_attempts", type=positive)
    put.add_argument("--tracked", action=argparse.BooleanOptionalAction, default=None)
    put.set_defaults(run=_put)

    for name, run, text in (("show", _show, "one schedule, with its next fire and health"),
                            ("delete", _delete, "remove a schedule (its executions stay)"),
                            ("trigger", _trigger, "fire now, once → the execution")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("job_id", metavar="JOB_ID")
        command.set_defaults(run=run)

    preview = commands.add_parser("preview", parents=[options], help="the next fire instants (UTC)")
    preview.add_argument("job_id", metavar="JOB_ID")
    preview.add_argument("--count", type=positive, default=10)
    preview.set_defaults(run=_preview)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.schedules.list(), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.schedules.get(args.job_id))


def _put(args: argparse.Namespace) -> None:
    spec = given(args, *SPEC)
    with open_client(args) as client:
        output.show(args, client.schedules.put(args.job_id, **spec))


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.schedules.delete(args.job_id)
    output.said(args, {"deleted": args.job_id}, f"deleted schedule {args.job_id}")


def _trigger(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.schedules.trigger(args.job_id))


def _preview(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        fires = client.schedules.preview(args.job_id, count=args.count)
    if args.json:
        output.print_json_lines(fires)
    else:
        output.print_table(("next fire (UTC)",), ({"next fire (UTC)": fire} for fire in fires))
