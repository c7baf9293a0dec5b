"""`jobwire workflows list | show ID | jobs ID | cancel ID | retry ID`: workflows, jobs with
dependencies, seen by state with their jobs, cancelled and retried as one."""

from __future__ import annotations

import argparse
from itertools import islice
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import STATES, given, identifier, positive
from jobwire.cli.connection import client_options, open_client
from jobwire.models import WORKFLOW_STATES

COMMANDS = ("workflows",)
COLUMNS = ("id", "name", "state", "jobs", "counts", "created_at", "completed_at")
JOB_COLUMNS = ("ref", "execution_id", "state", "queue", "depends_on")

workflow_id = identifier("a workflow")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("workflows", parents=[options],
                                  help="workflows (jobs with dependencies): list, inspect, cancel, retry")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = commands.add_parser("list", parents=[options], help="newest first, with their jobs counted by state")
    listing.add_argument("--state", choices=WORKFLOW_STATES)
    listing.add_argument("--name", help="only workflows of this name")
    listing.add_argument("--limit", type=positive, default=20, help="at most this many (default %(default)s)")
    listing.set_defaults(run=_list)

    jobs = commands.add_parser("jobs", parents=[options], help="its jobs by ref: execution, state, queue and the refs "
                               "each depends on")
    jobs.add_argument("workflow_id", metavar="WORKFLOW_ID", type=workflow_id)
    jobs.add_argument("--state", choices=STATES, help="only its jobs in this state")
    jobs.add_argument("--limit", type=positive, default=100, help="at most this many (default %(default)s)")
    jobs.set_defaults(run=_jobs)

    for name, run, text in (("show", _show, "one workflow, its jobs counted by state"),
                            ("cancel", _cancel, "cancel every unfinished job (WAITING, ENQUEUED, PROCESSING): the "
                                                "workflow ends CANCELLED"),
                            ("retry", _retry, "run it on from where it stopped: its dead-lettered jobs again, those a "
                                              "failed dependency cancelled WAITING again")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("workflow_id", metavar="WORKFLOW_ID", type=workflow_id)
        command.set_defaults(run=run)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        found = client.workflows.list(limit=min(args.limit, 1000), **given(args, "state", "name"))
        output.show_list(args, islice(found, args.limit), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.workflows.get(args.workflow_id))


def _jobs(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        found = client.workflows.jobs(args.workflow_id, state=args.state, limit=min(args.limit, 1000))
        output.show_list(args, islice(found, args.limit), JOB_COLUMNS)


def _cancel(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.workflows.cancel(args.workflow_id))


def _retry(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.workflows.retry(args.workflow_id))
