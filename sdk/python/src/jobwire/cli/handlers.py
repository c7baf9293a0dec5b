"""`jobwire handlers list | show NAME | put NAME URL | delete NAME | add-secret NAME | delete-secret NAME ID`,
and a handler's concurrency keys: `keys NAME | pause-key NAME KEY | resume-key NAME KEY`."""

from __future__ import annotations

import argparse
import sys
from itertools import islice
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import RateLimitOption, batch, given, identifier, positive
from jobwire.cli.connection import client_options, open_client, seconds

COMMANDS = ("handlers",)
COLUMNS = ("name", "url", "timeout_seconds", "max_concurrency", "stateful")
KEY_COLUMNS = ("key", "waiting", "in_flight", "paused", "rate.next_slot", "retry_after")
KEY_STATES = ("waiting", "throttled", "paused")
FIELDS = ("timeout_seconds", "max_concurrency", "stateful", "key_concurrency", "rate_limit", "key_rate_limit",
          "adaptive", "batch")


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
    put.add_argument("--key-concurrency", dest="key_concurrency", type=positive,
                     help="calls in flight per concurrency key (a job's --concurrency-key)")
    put.add_argument("--rate-limit", dest="rate_limit", action=RateLimitOption, metavar="LIMIT/PERIOD",
                     help="at most LIMIT calls of the handler start in any PERIOD, in seconds or with a unit "
                     "s, m or h (20/1s, 100/60, 5000/1h)")
    put.add_argument("--key-rate-limit", dest="key_rate_limit", action=RateLimitOption, metavar="LIMIT/PERIOD",
                     help="as --rate-limit, per concurrency key")
    put.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None,
                     help="adapt the calls in flight to what the handler takes (slow start from 4, halved on a 429 "
                     "or 503 without Retry-After, or a timeout), up to --max-concurrency, which it needs")
    put.add_argument("--batch", type=batch, metavar="SIZE[/WAIT_MS]",
                     help="send its due jobs together, up to SIZE (1–500) in one call, a smaller call waiting up to "
                     "WAIT_MS (0–1000, default 0) for more (50, 50/200)")
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

    keys = commands.add_parser("keys", parents=[options], help="its concurrency keys with jobs waiting or in "
                               "flight, paused, or in a rate window, in key order")
    keys.add_argument("name")
    keys.add_argument("--state", choices=KEY_STATES,
                      help="waiting: with jobs waiting; throttled: with jobs waiting and held back now (paused, "
                      "Retry-After, rate limit, key concurrency); paused")
    keys.add_argument("--limit", type=positive, help="at most this many (default: every key)")
    keys.set_defaults(run=_keys)

    for name, run, text in (("pause-key", _pause_key, "hold one concurrency key's jobs while the others run"),
                            ("resume-key", _resume_key, "let a paused concurrency key's jobs run again")):
        command = commands.add_parser(name, parents=[options], help=text)
        command.add_argument("name")
        command.add_argument("key", metavar="KEY")
        command.set_defaults(run=run)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.handlers.list(), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.handlers.get(args.name))


def _put(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        handler = client.handlers.put(args.name, args.handler_url, **given(args, *FIELDS))
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


def _keys(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        found = client.handlers.keys(args.name, state=args.state, limit=min(args.limit or 500, 500))
        output.show_list(args, islice(found, args.limit), KEY_COLUMNS)


def _pause_key(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.handlers.pause_key(args.name, args.key))


def _resume_key(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.handlers.resume_key(args.name, args.key))
