"""`jobwire subscriptions list | show NAME | put NAME URL | delete NAME | add-secret NAME |
delete-secret NAME ID`, and a subscription's deliveries: `deliveries NAME | resend NAME ID |
recover NAME --since TIME`."""

from __future__ import annotations

import argparse
import sys
from itertools import islice
from typing import Any

from jobwire.cli import output
from jobwire.cli.arguments import identifier, positive
from jobwire.cli.connection import client_options, open_client, seconds

COMMANDS = ("subscriptions",)
COLUMNS = ("name", "url", "state", "types", "backlog", "failing_since", "last_error")
DELIVERY_COLUMNS = ("id", "status", "tries", "event.type", "execution_id", "last_status", "next_try_at",
                    "last_error")
TYPES = ("execution.succeeded", "execution.failed", "execution.abandoned", "execution.dead_lettered",
         "execution.cancelled", "execution.retried", "workflow.succeeded", "workflow.failed", "workflow.cancelled")
STATUSES = ("pending", "failed", "delivered", "dead")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    options = client_options()
    group = subparsers.add_parser("subscriptions", parents=[options],
                                  help="the subscribers events are delivered to, and their deliveries")
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    commands.add_parser("list", parents=[options], help="every subscription (no secrets)").set_defaults(run=_list)

    show = commands.add_parser("show", parents=[options], help="one subscription: its state, failures and backlog")
    show.add_argument("name")
    show.set_defaults(run=_show)

    put = commands.add_parser("put", parents=[options], help="register or replace a subscription (a new one's "
                              "signing secret is shown once; a replaced one is enabled again)")
    put.add_argument("name")
    put.add_argument("subscription_url", metavar="URL", help="where its events are POSTed")
    put.add_argument("--type", dest="types", action="append", choices=TYPES, metavar="TYPE",
                     help=f"only events of this type (repeat for several; default every type): {', '.join(TYPES)}")
    put.add_argument("--queue", dest="queues", action="append", metavar="QUEUE",
                     help="only events of this queue (repeat for several; default every queue)")
    put.add_argument("--handler", dest="handlers", action="append", metavar="HANDLER",
                     help="only events of this handler (repeat for several; default every handler)")
    put.set_defaults(run=_put)

    delete = commands.add_parser("delete", parents=[options], help="remove a subscription with its deliveries")
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

    deliveries = commands.add_parser("deliveries", parents=[options], help="its deliveries, newest first: the "
                                     "event, tries, the last status and error, the next try")
    deliveries.add_argument("name")
    deliveries.add_argument("--status", choices=STATUSES,
                            help="pending: not tried yet; failed: tried, tried again later; delivered: a 2xx "
                            "answered; dead: not acknowledged in time, or its destination refused")
    deliveries.add_argument("--limit", type=positive, default=20, help="at most this many (default %(default)s)")
    deliveries.set_defaults(run=_deliveries)

    resend = commands.add_parser("resend", parents=[options], help="send one delivery again now, whatever its "
                                 "status (the same webhook-id)")
    resend.add_argument("name")
    resend.add_argument("delivery_id", metavar="DELIVERY_ID", type=positive)
    resend.set_defaults(run=_resend)

    recover = commands.add_parser("recover", parents=[options], help="send again every stored event of a window "
                                  "that the subscription wants, delivered or not")
    recover.add_argument("name")
    recover.add_argument("--since", required=True, metavar="TIME", help="the window's start: RFC 3339, with a time "
                         "zone (2026-12-01T00:00:00Z)")
    recover.add_argument("--until", metavar="TIME", help="the window's end, excluded (default: now)")
    recover.set_defaults(run=_recover)


def _list(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show_list(args, client.subscriptions.list(), COLUMNS)


def _show(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.subscriptions.get(args.name))


def _put(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        subscription = client.subscriptions.put(args.name, args.subscription_url, types=args.types,
                                                queues=args.queues, handlers=args.handlers)
    if subscription.secret and not args.json:
        print("jobwire: the signing secret is shown this once: give it to the subscriber", file=sys.stderr)
    output.show(args, subscription)


def _delete(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.subscriptions.delete(args.name)
    output.said(args, {"deleted": args.name}, f"deleted subscription {args.name}")


def _add_secret(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        secret = client.subscriptions.add_secret(args.name, args.expire_others_after_seconds)
    if not args.json:
        print("jobwire: the signing secret is shown this once: give it to the subscriber", file=sys.stderr)
    output.show(args, secret)


def _delete_secret(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        client.subscriptions.delete_secret(args.name, args.secret_id)
    output.said(args, {"deleted": args.secret_id}, f"deleted secret {args.secret_id} of subscription {args.name}")


def _deliveries(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        found = client.subscriptions.deliveries(args.name, status=args.status, limit=min(args.limit, 1000))
        output.show_list(args, islice(found, args.limit), DELIVERY_COLUMNS)


def _resend(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        output.show(args, client.subscriptions.resend(args.name, args.delivery_id))


def _recover(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        recovered = client.subscriptions.recover(args.name, args.since, args.until)
    output.said(args, {"recovered": recovered},
                f"recovered {recovered} {'event' if recovered == 1 else 'events'} of subscription {args.name}")
