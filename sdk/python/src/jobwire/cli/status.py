"""`jobwire status`: the queues, the live nodes and the recent dead letters, as tables; and
`jobwire status EXECUTION_ID`, one execution as indented JSON, as it always printed."""

from __future__ import annotations

import argparse
from itertools import islice
from typing import Any

from jobwire.cli import output, queues
from jobwire.cli.arguments import execution_id, positive
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("status",)
NODE_COLUMNS = ("server_id", "started_at", "last_heartbeat", "in_flight")
FAILURE_COLUMNS = ("id", "handler", "queue", "attempt", "completed_at", "error_type", "last_error")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    status = subparsers.add_parser("status", parents=[client_options()],
                                   help="queues, nodes and recent failures; or one execution")
    status.add_argument("execution_id", nargs="?", metavar="EXECUTION_ID", type=execution_id)
    status.add_argument("--limit", type=positive, default=20, help="recent failures shown (default %(default)s)")
    status.set_defaults(run=_status)


def _status(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        if args.execution_id:
            output.print_json(client.executions.get(args.execution_id), indent=None if args.json else 2)
            return
        depths = client.queues.list()
        nodes = client.nodes.list()
        failures = list(islice(client.executions.list(state="DEAD_LETTER", limit=min(args.limit, 500)), args.limit))
    if args.json:
        output.print_json({"queues": depths, "nodes": nodes, "recent_failures": failures})
        return
    output.print_table(queues.COLUMNS, depths, title="queues")
    output.print_table(NODE_COLUMNS, nodes, title="nodes")
    output.print_table(FAILURE_COLUMNS, failures, title="recent failures (dead letters)")
