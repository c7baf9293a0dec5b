"""`jobwire nodes list`: the live nodes."""

from __future__ import annotations

import argparse
from typing import Any

from jobwire.cli import output
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("nodes",)
COLUMNS = ("server_id", "started_at", "last_heartbeat", "in_flight")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("nodes", parents=[options], help="the live Jobwire nodes")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    commands.add_parser("list", parents=[options], help="each node's id, start, last heartbeat and calls "
                        "in flight").set_defaults(run=_list)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.nodes.list(), COLUMNS)
