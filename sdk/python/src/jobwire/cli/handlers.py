"""`jobwire handlers list | show NAME | put NAME URL | delete NAME`."""

from __future__ import annotations

import argparse

from jobwire.cli import output
from jobwire.cli.arguments import given, positive
from jobwire.cli.connection import client_options, open_client

COMMANDS = ("handlers",)
COLUMNS = ("name", "url", "timeout_seconds", "max_concurrency", "stateful")


def register(subparsers: argparse._SubParsersAction) -> None:
    options = client_options()
    group = subparsers.add_parser("handlers", help="the handlers jobs are sent to")
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


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.list_handlers(), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.get_handler(args.name))


def _put(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        handler = client.put_handler(args.name, args.handler_url,
                                     **given(args, "timeout_seconds", "max_concurrency", "stateful"))
    output.show(args, handler)


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.delete_handler(args.name)
    if args.json:
        output.print_json({"deleted": args.name})
    else:
        output.console().print(output.Text(f"deleted handler {args.name}"))
