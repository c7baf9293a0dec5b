"""`jobwire handlers list | show NAME | put NAME URL | delete NAME | add-secret NAME | delete-secret NAME ID`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import given, identifier, positive
from jobwire.cli.connection import client_options, open_client, seconds

COMMANDS = ("handlers",)
COLUMNS = ("name", "url", "timeout_seconds", "max_concurrency", "stateful")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("handlers", parents=[options], help="the handlers jobs are sent to")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    commands.add_parser("list", parents=[options], help="every handler (no secrets)").set_defaults(run=_list)

    show = commands.add_parser("show", parents=[options], help="one handler")
    show.add_argument("name")
    show.set_defaults(run=_show)

    put = commands.add_parser("put", parents=[options], help="register or replace a handler "
                              "(a new one's signing secret is shown once)")
    put.add_argument("name")
    put.add_argument("handler_url", metavar="URL", help="where its jobs are POSTed")
    put.add_argument("--timeout-seconds", dest="timeout_seconds", type=float)
    put.add_argument("--max-concurrency", dest="max_concurrency", type=positive)
    put.add_argument("--stateful", action=argparse.BooleanOptionalAction, default=None)
    put.set_defaults(run=_put)

    delete = commands.add_parser("delete", parents=[options], help="remove a handler (409 while jobs use it)")
    delete.add_argument("name")
    delete.set_defaults(run=_delete)

    add = commands.add_parser("add-secret", parents=[options], help="a new signing secret, for a rotation "
                              "(shown once; Jobwire signs with every active secret)")
    add.add_argument("name")
    add.add_argument("--expire-others-after", dest="expire_others_after_seconds", type=seconds, metavar="SECONDS",
                     help="the other secrets stop being used after this long")
    add.set_defaults(run=_add_secret)

    retire = commands.add_parser("delete-secret", parents=[options], help="retire a signing secret")
    retire.add_argument("name")
    retire.add_argument("secret_id", metavar="SECRET_ID", type=identifier("a secret"))
    retire.set_defaults(run=_delete_secret)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.handlers.list(), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.handlers.get(args.name))


def _put(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        handler = client.handlers.put(args.name, args.handler_url,
                                      **given(args, "timeout_seconds", "max_concurrency", "stateful"))
    if handler.secret and not args.json:
        print("jobwire: the signing secret is shown this once: give it to the handler", file=sys.stderr)
    output.show(args, handler)


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.handlers.delete(args.name)
    output.said(args, {"deleted": args.name}, f"deleted handler {args.name}")


def _add_secret(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        secret = client.handlers.add_secret(args.name, args.expire_others_after_seconds)
    if not args.json:
        print("jobwire: the signing secret is shown this once: give it to the handler", file=sys.stderr)
    output.show(args, secret)


def _delete_secret(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.handlers.delete_secret(args.name, args.secret_id)
    output.said(args, {"deleted": args.secret_id}, f"deleted secret {args.secret_id} of handler {args.name}")
