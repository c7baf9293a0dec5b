"""The one `jobwire` command: the client commands of this SDK, plus what installed packages add
through the entry-point group `jobwire.commands` (the service's `serve`, `migrate`, `openapi`;
the protocol is in `jobwire.cli.plugins`).

Everything the user should read is one line on stderr, never a traceback: a refusal of the
server or an unreachable server exits 1, a usage error 2 (argparse), Ctrl-C 130."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from jobwire.cli import executions, handlers, jobs, queues, schedules, status
from jobwire.cli.failures import describe
from jobwire.cli.plugins import load_commands
from jobwire.cli.versions import version_text

GROUPS = (handlers, jobs, executions, queues, schedules, status)


def build_parser(plugins: bool = True) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of `jobwire`, and the lines of the entry points that could not be loaded."""
    parser = argparse.ArgumentParser(prog="jobwire", description="REST job orchestration on PostgreSQL")
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(subparsers)
    failures = load_commands(subparsers) if plugins else []
    return parser, failures


def _builtin(argv: Sequence[str]) -> bool:
    """Whether the command named is the SDK's own: then the plugins (whose imports may take half a
    second, the service's do) are not loaded. `jobwire` has no option that takes a value, so the
    first word that is not an option is the command."""
    names = {name for group in GROUPS for name in group.COMMANDS}
    command = next((word for word in argv if not word.startswith("-")), None)
    return command in names


def main(argv: Sequence[str] | None = None) -> int:
    """Runs `jobwire`; returns the exit status (the console script passes it to sys.exit)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        parser, failures = build_parser(plugins=not _builtin(argv))
        for line in failures:
            print(line, file=sys.stderr)
        args = parser.parse_args(argv)
        return args.run(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `jobwire executions list | head`: the reader has all it wanted
        # Python flushes stdout once more at exit, into the closed pipe; send that to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        line = describe(exc, getattr(args, "url", None))
        if line is None:
            if args is None or not _builtin([args.command]):
                raise  # a plugin's command says its own failures (serve: `jobwire: cannot start: …`)
            line = f"unexpected {type(exc).__name__}: {' '.join(str(exc).split())}"
        print(f"jobwire: {line}", file=sys.stderr)
        return 1
