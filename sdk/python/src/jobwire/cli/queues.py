"""`jobwire queues list | pause NAME | resume NAME`."""

from __future__ import annotations

import argparse
from typing import Any

from jobwire.cli import output
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("queues",)
COLUMNS = ("name", "paused", "counts.ENQUEUED", "counts.PROCESSING", "counts.DEAD_LETTER",
           "oldest_claimable_age_seconds")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("queues", parents=[options], help="queues: depths, pause, resume")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    commands.add_parser("list", parents=[options], help="every queue with live or dead-lettered work, "
                        "or paused").set_defaults(run=_list)
    for name, run, text in (("pause", _pause, "stop claiming from a queue (enqueue still works)"),
                            ("resume", _resume, "claim from a paused queue again")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("name")
        command.set_defaults(run=run)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.queues.list(), COLUMNS)


def _pause(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.queues.pause(args.name))


def _resume(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.queues.resume(args.name))
