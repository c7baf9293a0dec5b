"""The options every client command takes, and the client they make.

`--url`, `--api-key`, `--timeout` and `--json` go before the command or after it (`jobwire --json
queues list` or `jobwire queues list --json`): the top parser holds them with their defaults, and
each command's parser accepts them again without defaults (argparse.SUPPRESS), so a value given
after the command replaces one given before, and one not given leaves the top parser's.
`--url` and `--api-key` default to JOBWIRE_URL and JOBWIRE_API_KEY (read when the command is
parsed), then http://127.0.0.1:8000, where `jobwire serve` listens by default."""

from __future__ import annotations

import argparse
import os

from jobwire.cli.failures import CommandError
from jobwire.client import JobwireClient

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0
# The options that take a value (`jobwire --url X status`: X is not the command).
VALUED = ("--url", "--api-key", "--timeout")


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text}")
    return value


def add_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The global options on `parser`: with their defaults (the top parser), or without (a command's)."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--url", default=default(os.environ.get("JOBWIRE_URL") or DEFAULT_URL),
                        help=f"Jobwire's base URL (JOBWIRE_URL; default {DEFAULT_URL})")
    parser.add_argument("--api-key", default=default(os.environ.get("JOBWIRE_API_KEY") or None),
                        help="sent as a bearer token (JOBWIRE_API_KEY)")
    parser.add_argument("--timeout", type=seconds, default=default(DEFAULT_TIMEOUT),
                        help=f"seconds a request may take (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--json", action="store_true", default=default(False),
                        help="machine output: one JSON document, or JSON lines")


def client_options() -> argparse.ArgumentParser:
    """A parent parser (argparse `parents=`) with the global options, for a command's parser."""
    options = argparse.ArgumentParser(add_help=False)
    add_options(options, defaults=False)
    return options


def open_client(args: argparse.Namespace) -> JobwireClient:
    try:
        return JobwireClient(args.url, api_key=args.api_key, timeout=args.timeout)
    except ValueError as exc:
        raise CommandError(f"--url: {exc}", status=2) from None
