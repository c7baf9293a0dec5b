"""`jobwire jobs enqueue --from FILE.jsonl`: a file of jobs, one JSON object a line, sent in
batches through `POST /v1/jobs/batch`.

A batch is atomic on the server: one invalid job refuses all of them, naming each at fault
(`jobs[3].handler`). Those jobs are counted failed and the rest of the batch is sent again, so
one bad line costs one job, not a thousand. A line that is not a JSON object is failed here,
never sent.

Each job gets an idempotency key unless its line has one: `<prefix>-<SHA-256>` of the job as sent
(the line over the command's options, its keys sorted) and of its ordinal among identical jobs
before it in the file. Two identical lines are two jobs; the same file sent again, or after a bad
line was mended, creates only what is new: each item of the batch's answer says whether it was
`created` or found by its key. An option changed (another `--queue`, another handler) makes other
jobs, as does another `--key-prefix`."""

from __future__ import annotations

import argparse
import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobwire._json import dumps, loads
from jobwire.client import JobwireClient
from jobwire.errors import ProblemError

BATCH_SIZE = 500
MAX_BATCH = 1000  # the API's limit
_ITEM = re.compile(r"^jobs\[(\d+)\]")
KEY_PREFIX = "jsonl"
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,100}$")  # the key's room: a name of at most 255


def key_prefix(text: str) -> str:
    if not _PREFIX.match(text):
        raise argparse.ArgumentTypeError(f"letters, digits and . _ : - (at most 101), not {text!r}")
    return text


class Keys:
    """The idempotency keys of a file's jobs, stable from one run to the next."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._seen: Counter[str] = Counter()

    def given(self, job: dict[str, Any]) -> dict[str, Any]:
        """`job` with its key: its own, or one made from its content and ordinal."""
        if job.get("idempotency_key") is not None:
            return job
        content = dumps(_sorted(job))
        ordinal = self._seen[content]
        self._seen[content] += 1
        digest = hashlib.sha256(f"{content}\n{ordinal}".encode()).hexdigest()
        return {**job, "idempotency_key": f"{self.prefix}-{digest}"}


def _sorted(value: Any) -> Any:
    """`value` with every object's keys in order: the same job however its line was written."""
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


@dataclass
class Tally:
    created: int = 0
    existing: int = 0
    failed: int = 0
    failures: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)

    @property
    def done(self) -> int:
        return self.created + self.existing + self.failed

    def fail(self, line: int, reason: str) -> None:
        self.failed += 1
        self.failures.append((line, " ".join(reason.split())))

    def failure_lines(self) -> list[str]:
        """`line N: reason`, in file order (a line refused by the server is known after the lines
        after it that were not JSON)."""
        return [f"line {line}: {reason}" for line, reason in sorted(self.failures)]

    def summary(self) -> dict[str, int]:
        return {"created": self.created, "existing": self.existing, "failed": self.failed}


def read_jobs(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, job) per non-blank line; instead of the job, why the line is no job."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                job = loads(line)
            except ValueError as exc:
                yield number, f"not JSON: {exc}"
                continue
            yield number, job if isinstance(job, dict) else "not a JSON object"


def count_lines(path: Path) -> int:
    with path.open("rb") as data:
        return sum(1 for line in data if line.strip())


def send(client: JobwireClient, batch: Sequence[tuple[int, dict[str, Any]]], tally: Tally) -> None:
    """Enqueue `batch` ((line, job) pairs); the jobs the server names as invalid are failed and
    the others sent again. Any other refusal is the command's failure: it is raised."""
    while batch:
        try:
            executions = client.jobs.enqueue_batch([job for _, job in batch])
        except ProblemError as problem:
            faulty = _named_items(problem, len(batch))
            if not faulty:
                raise
            for index in sorted(faulty):
                tally.fail(batch[index][0], faulty[index])
            batch = [item for index, item in enumerate(batch) if index not in faulty]
            continue
        created = sum(1 for e in executions if e.created is not False)  # None: a server before `created`
        tally.created += created
        tally.existing += len(executions) - created
        return


def _named_items(problem: ProblemError, size: int) -> dict[int, str]:
    """The batch positions a 413 or 422 names (`jobs[3].payload: …`), with the reason."""
    if problem.status not in (413, 422):
        return {}
    named: dict[int, str] = {}
    for error in problem.errors:
        match = _ITEM.match(str(error.get("field") or ""))
        if match and int(match[1]) < size:
            index = int(match[1])
            field_name = str(error.get("field"))[match.end():].lstrip(".") or "job"
            named.setdefault(index, f"{field_name}: {error.get('message')}")
    return named
