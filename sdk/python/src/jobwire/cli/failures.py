"""The one line `jobwire` prints when a command cannot do what was asked.

`jobwire: <status> <title>: <detail>; <field>: <message>` for a refusal (RFC 9457 problem, the
fields at fault after it), `jobwire: cannot reach <url>: <cause>` for a server that did not
answer, `jobwire: <reason>: <file>` for a file that cannot be read or written; the caller exits 1
after each. A person reads one line; a script reads the status."""

from __future__ import annotations

from jobwire.errors import ProblemError


def describe(exc: BaseException, url: str | None = None) -> str | None:
    """The line (without `jobwire: `) for a failure of a client command, or None for an exception
    this module does not know."""
    if isinstance(exc, ProblemError):
        if exc.status is None:  # no answer at all: the transport's exception is the cause
            return f"cannot reach {url or 'the server'}: {_cause(exc)}"
        return refusal(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}"
    return None


def refusal(problem: ProblemError) -> str:
    """`<status> <title>: <detail>; <field>: <message>; …` on one line."""
    line = _head(problem)
    for error in problem.errors:
        said = " ".join(f"{error.get('field')}: {error.get('message')}".split())
        if said not in line:  # the detail often is the first error already
            line += f"; {said}"
    return line


def _head(problem: ProblemError) -> str:
    head = f"{problem.status} {problem.title}"
    if problem.detail and problem.detail != problem.title:
        head += f": {problem.detail}"
    return " ".join(head.split())  # a detail may hold newlines; the line must stay one


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    if cause is None:
        return str(exc.detail or exc.title) if isinstance(exc, ProblemError) else str(exc)
    text = str(cause) or type(cause).__name__
    return " ".join(text.split())
