"""The one line `jobwire` prints when a command cannot do what was asked.

`jobwire: <status> <title>: <detail>; <field>: <message>` for a refusal (RFC 9457 problem, the
fields at fault after it), `jobwire: cannot reach <url>: <cause>` for a server that did not
answer, `jobwire: <url> is not Jobwire: …` for something that answered but not as Jobwire does
(a web page, a port that speaks another protocol), `jobwire: outcome unknown: …` when a request
that must not be sent twice lost its reply, `jobwire: <reason>: <file>` for a file that cannot be
read; exit status 1 after each (2 for a usage error). A person reads one line; a script reads
the status."""

from __future__ import annotations

import httpx

from jobwire.errors import InvalidResponse, ProblemError, Unavailable


class CommandError(Exception):
    """A command's own refusal: its message is the line, `status` the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def describe(exc: BaseException, url: str | None = None) -> tuple[str, int] | None:
    """The line (without `jobwire: `) and exit status for a failure of a client command, or None
    for an exception this module does not know."""
    where = url or "the server"
    if isinstance(exc, CommandError):
        return one_line(str(exc)), exc.status
    if isinstance(exc, Unavailable) and exc.maybe_applied:
        return one_line(f"outcome unknown: {exc.detail}"), 1
    if isinstance(exc, ProblemError):
        if exc.status is None:  # no answer at all: the transport's exception is the cause
            cause = exc.__cause__
            if isinstance(cause, httpx.RemoteProtocolError):  # bytes came back, or a hang-up: not an HTTP answer
                if "disconnected" in str(cause).lower():
                    return one_line(f"{where} hung up without an HTTP answer: is it Jobwire's URL? "
                                    f"({_cause(exc)})"), 1
                return one_line(f"{where} is not Jobwire: it does not answer in HTTP ({_cause(exc)})"), 1
            return one_line(f"cannot reach {where}: {_cause(exc)}"), 1
        if not exc.is_problem_document:
            return one_line(f"{where} is not Jobwire, or not all of it: it answered {exc.status} {exc.title}"
                            f"{f' ({exc.detail})' if exc.detail else ''} without a problem document"), 1
        return refusal(exc), 1
    if isinstance(exc, InvalidResponse):
        return one_line(f"{where} is not Jobwire: {exc}"), 1
    if isinstance(exc, OSError):
        return one_line(f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"), 1
    if isinstance(exc, ValueError):  # what the JSON encoder refuses (NaN, a naive time), naming where
        return one_line(str(exc)), 1
    return None


def refusal(problem: ProblemError) -> str:
    """`<status> <title>: <detail>; <field>: <message>; …` on one line."""
    line = _head(problem)
    for error in problem.errors:
        said = one_line(f"{error.get('field')}: {error.get('message')}")
        if said not in line:  # the detail often is the first error already
            line += f"; {said}"
    return line


def one_line(text: str) -> str:
    return " ".join(text.split())  # a detail may hold newlines; the line must stay one


def _head(problem: ProblemError) -> str:
    head = f"{problem.status} {problem.title}"
    if problem.detail and problem.detail != problem.title:
        head += f": {problem.detail}"
    return one_line(head)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is None:
        return str(exc.detail or exc.title) if isinstance(exc, ProblemError) else str(exc)
    return one_line(str(cause) or type(cause).__name__)
