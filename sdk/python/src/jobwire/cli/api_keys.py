"""`jobwire api-keys list | create NAME --scope S … [--queue Q …] | delete ID`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import identifier
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("api-keys",)
COLUMNS = ("id", "name", "scopes", "queues", "created_at")
SCOPES = ("read", "enqueue", "operate", "admin")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("api-keys", parents=[options], help="the API keys stored in the database")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    commands.add_parser("list", parents=[options], help="every stored key (never the key itself)").set_defaults(
        run=_list)

    create = commands.add_parser("create", parents=[options], help="a new key, shown once")
    create.add_argument("name")
    create.add_argument("--scope", dest="scopes", action="append", choices=SCOPES, required=True,
                        help="what it may do (repeat for several)")
    create.add_argument("--queue", dest="queues", action="append", metavar="QUEUE",
                        help="limit it to this queue (repeat for several; default every queue)")
    create.set_defaults(run=_create)

    delete = commands.add_parser("delete", parents=[options], help="revoke a key (on every node within 2 s)")
    delete.add_argument("key_id", metavar="KEY_ID", type=identifier("an API key"))
    delete.set_defaults(run=_delete)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.api_keys.list(), COLUMNS)


def _create(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        key = client.api_keys.create(args.name, args.scopes, args.queues)
    if not args.json:
        print("jobwire: the key is shown this once: keep it", file=sys.stderr)
    output.show(args, key)


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.api_keys.delete(args.key_id)
    output.said(args, {"deleted": args.key_id}, f"deleted API key {args.key_id}")
