"""Commands other packages add to `jobwire`, through the entry-point group `jobwire.commands`.

The protocol: an entry point of the group names a *registrar*, a callable that takes the
argparse subparsers object of `jobwire` and adds its command to it::

    # pyproject.toml of the package that brings the command
    [project.entry-points."jobwire.commands"]
    serve = "app.cli:serve_command"

    # app/cli.py
    def serve_command(subparsers: argparse._SubParsersAction) -> None:
        parser = subparsers.add_parser("serve", help="run the API and the dispatcher")
        parser.add_argument("--port", type=int)
        parser.set_defaults(run=serve)      # serve(args: argparse.Namespace) -> int | None

`jobwire` calls `args.run(args)`; what it returns (None meaning 0) is the exit status, and a
`SystemExit` it raises passes through. The registrar should import little: it runs on every
`jobwire` invocation, so heavy imports belong in `run`. The Jobwire service registers `serve`,
`migrate` and `openapi` this way, so the SDK installed alone has no server commands and no
server dependencies.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

GROUP = "jobwire.commands"


def load_commands(subparsers: argparse._SubParsersAction[Any],
                  found: Iterable[EntryPoint] | None = None) -> list[str]:
    """Adds every registered command to `subparsers`; returns one line per entry point that could
    not be loaded or refused to register, so that one broken package costs its own command only."""
    failures = []
    for entry in sorted(entry_points(group=GROUP) if found is None else found, key=lambda e: e.name):
        try:
            entry.load()(subparsers)
        except Exception as exc:  # an installed package's fault, not this invocation's
            failures.append(f"jobwire: command {entry.name!r} ({entry.value}) not loaded: "
                            f"{type(exc).__name__}: {exc}")
    return failures
