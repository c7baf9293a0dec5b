"""The one `jobwire` command: the client commands of this SDK, plus what installed packages add
through the entry-point group `jobwire.commands` (the service's `serve`, `migrate`, `openapi`;
the protocol is in `jobwire.cli.plugins`).

Everything the user should read is one line on stderr, never a traceback: a refusal of the
server or an unreachable server exits 1, a usage error 2 (`jobwire: executions show: argument
EXECUTION_ID: not an execution id (a UUID): 'x' (see jobwire executions show --help)`), Ctrl-C 130."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from jobwire.cli import (
    api_keys,
    events,
    executions,
    handlers,
    jobs,
    nodes,
    queues,
    schedules,
    status,
    subscriptions,
    workflows,
)
from jobwire.cli.connection import VALUED, add_options
from jobwire.cli.failures import describe, one_line
from jobwire.cli.plugins import load_commands
from jobwire.cli.versions import version_text

GROUPS = (handlers, jobs, workflows, executions, events, subscriptions, queues, schedules, nodes, api_keys, status)


class Parser(argparse.ArgumentParser):
    """argparse, saying a usage error in one line (argparse prints the usage, then the error);
    `--help` still shows the usage. Subparsers are made of this class too."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("jobwire").strip()
        self.exit(2, f"jobwire: {f'{command}: ' if command else ''}{one_line(message)} (see {self.prog} --help)\n")


def build_parser(plugins: bool = True) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of `jobwire`, and the lines of the entry points that could not be loaded."""
    parser = Parser(prog="jobwire", description="REST job orchestration on PostgreSQL")
    parser.add_argument("--version", action="version", version=version_text())
    add_options(parser, defaults=True)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in GROUPS:
        group.register(subparsers)
    failures = load_commands(subparsers) if plugins else []
    return parser, failures


def command_of(argv: Sequence[str]) -> str | None:
    """The command named in `argv`: its first word that is neither an option nor the value of one."""
    words = iter(argv)
    for word in words:
        if word in VALUED:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _builtin(argv: Sequence[str]) -> bool:
    """Whether the command named is the SDK's own: then the plugins (whose imports may take half a
    second, the service's do) are not loaded."""
    return command_of(argv) in {name for group in GROUPS for name in group.COMMANDS}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs `jobwire`; returns the exit status (the console script passes it to sys.exit)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = None
    try:
        parser, failures = build_parser(plugins=not _builtin(argv))
        for line in failures:
            print(line, file=sys.stderr)
        args = parser.parse_args(argv)
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `jobwire executions list | head`: the reader has all it wanted
        # Python flushes stdout once more at exit, into the closed pipe; send that to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        said = describe(exc, getattr(args, "url", None))
        if said is None:
            if args is None or not _builtin([args.command]):
                raise  # a plugin's command says its own failures (serve: `jobwire: cannot start: …`)
            said = f"unexpected {type(exc).__name__}: {one_line(str(exc))}", 1
        line, exit_status = said
        print(f"jobwire: {line}", file=sys.stderr)
        return exit_status
