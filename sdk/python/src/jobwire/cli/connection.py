"""The options every client command takes, and the client they make.

`--url` and `--api-key` default to JOBWIRE_URL and JOBWIRE_API_KEY (read when the command is
parsed), then http://127.0.0.1:8000, where `jobwire serve` listens by default; `--json` asks for
machine output."""

from __future__ import annotations

import argparse
import os

from jobwire.client import JobwireClient

DEFAULT_URL = "http://127.0.0.1:8000"


def client_options() -> argparse.ArgumentParser:
    """A parent parser (argparse `parents=`) with --url, --api-key and --json."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--url", default=os.environ.get("JOBWIRE_URL") or DEFAULT_URL,
                         help="Jobwire's base URL (JOBWIRE_URL; default %(default)s)")
    options.add_argument("--api-key", default=os.environ.get("JOBWIRE_API_KEY") or None,
                         help="sent as a bearer token (JOBWIRE_API_KEY)")
    options.add_argument("--json", action="store_true", help="machine output: one JSON document, or JSON lines")
    return options


def open_client(args: argparse.Namespace) -> JobwireClient:
    return JobwireClient(args.url, api_key=args.api_key)
