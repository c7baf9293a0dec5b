"""examples/node-handler, the Node.js handler example, run for real: `npm ci` from its committed
package-lock.json into a temporary copy (the tree gets no node_modules), `node server.js` against
a real Jobwire server, registered as its header comment says. It verifies each dispatch with the
`standardwebhooks` npm package, answers 202, counts words in the background with progress
reports and completes through the callback; a request whose signature does not verify gets 401.

Without Node.js (or npm) the tests are skipped, saying so; under CI (the environment variable CI
set) that is a failure instead, as in tests/runtime/test_node_handler.py.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from app.domain.signing import new_handler_secret, sign_webhook
from tests.conftest import free_port, register, wait_for_state
from tests.runtime.test_node_handler import npm_ci_copy, stop

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-handler"
EXAMPLE_FILES = ("package.json", "package-lock.json", "server.js")

# 1,502 lines: two progress reports (one per 1,000 lines), words with apostrophes, hyphens,
# digits and accents, case folded.
TEXT = "\n".join(["It's a well-known fact:", *["the quick brown fox jumps over the lazy dog"] * 1500,
                  "Café, CAFÉ! 42 dogs?"])
COUNTED = {"words": 4 + 9 * 1500 + 4, "distinct": 15, "lines": 1502,
           "top": [{"word": "the", "count": 3000}, {"word": "brown", "count": 1500}, {"word": "dog", "count": 1500},
                   {"word": "fox", "count": 1500}, {"word": "jumps", "count": 1500}]}


@pytest.fixture(scope="module")
def example_app(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """`npm ci` into a temporary copy of the example: exactly the locked versions, or a failure."""
    return npm_ci_copy(EXAMPLE, EXAMPLE_FILES, tmp_path_factory.mktemp("node-example"))


async def drain(stream: asyncio.StreamReader, into: list[str]) -> None:
    while line := await stream.readline():
        into.append(line.decode(errors="replace").rstrip())


@asynccontextmanager
async def running_example(example_app: tuple[str, Path], secret: str, port: int,
                          secret_variable: str = "JOBWIRE_HANDLER_SECRET") -> AsyncIterator[list[str]]:
    """`JOBWIRE_HANDLER_SECRET=… PORT=… node server.js` (the secret in `secret_variable`), until it
    prints `listening on <port>`; yields its output lines (stdout and stderr, drained so that it
    never blocks on a pipe)."""
    node, app = example_app
    env = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", secret_variable: secret}
    process = await asyncio.create_subprocess_exec(node, "server.js", cwd=app, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    output: list[str] = []
    readers: list[asyncio.Task[None]] = []
    try:
        first = (await asyncio.wait_for(process.stdout.readline(), timeout=30)).decode().strip()
        if first != f"listening on {port}":
            await stop(process)
            pytest.fail(f"the example did not start: {first!r}\n{(await process.stderr.read()).decode()}")
        readers = [asyncio.create_task(drain(process.stdout, output)),
                   asyncio.create_task(drain(process.stderr, output))]
        yield output
    finally:
        await stop(process)
        await asyncio.gather(*readers)


@dataclass
class Example:
    url: str
    secret: str
    output: list[str]


@pytest.fixture
async def example(example_app: tuple[str, Path], api: httpx.AsyncClient) -> AsyncIterator[Example]:
    """The example registered as handler `wordcount` (its secret from the create's answer) and running."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/wordcount"
    created = await register(api, "wordcount", url)
    assert created["secret"].startswith("whsec_"), created
    async with running_example(example_app, created["secret"], port) as output:
        yield Example(url, created["secret"], output)


async def run(api: httpx.AsyncClient, example: Example, payload: Any) -> dict[str, Any]:
    response = await api.post("/v1/jobs", json={"handler": "wordcount", "payload": payload})
    assert response.status_code == 201, response.text
    done = await wait_for_state(api, response.json()["id"], {"SUCCEEDED", "DEAD_LETTER"}, timeout=30)
    done["attempts"] = (await api.get(f"/v1/executions/{done['id']}/attempts")).json()["items"]
    done["output"] = list(example.output)
    return done


async def test_the_node_example_counts_words_and_completes_through_the_callback(
        example: Example, api: httpx.AsyncClient) -> None:
    done = await run(api, example, {"text": TEXT})
    assert done["state"] == "SUCCEEDED", done
    assert done["result"] == COUNTED
    assert done["progress"] == {"total": 1502, "succeeded": 1502, "failed": 0,
                                "status": "counted 1502 of 1502 lines", "percentage": 100}
    assert [(a["attempt"], a["state"]) for a in done["attempts"]] == [(0, "SUCCEEDED")]
    label = f"execution {done['id']} attempt 0"
    assert f"{label}: accepted" in done["output"] and f"{label}: succeeded, {COUNTED['words']} words" in done["output"]

    empty = await run(api, example, {"text": ""})
    assert empty["state"] == "SUCCEEDED", empty
    assert empty["result"] == {"words": 0, "distinct": 0, "lines": 1, "top": []}


async def test_a_payload_without_text_is_reported_failed_and_dead_letters_at_once(
        example: Example, api: httpx.AsyncClient) -> None:
    done = await run(api, example, {"numbers": [1, 2, 3]})
    assert done["state"] == "DEAD_LETTER", done
    assert done["error_type"] == "invalid_payload"
    assert "payload.text must be a string" in done["last_error"]
    assert len(done["attempts"]) == 1, done["attempts"]  # retryable: false, though max_attempts is 5


async def test_the_node_example_refuses_a_request_whose_signature_does_not_verify(
        example: Example, api: httpx.AsyncClient) -> None:
    # No such execution: the one accepted below gets a 4xx from Jobwire when it reports, and stops.
    execution_id = str(uuid.uuid4())
    callback = {"url": f"{str(api.base_url).rstrip('/')}/v1/executions/{execution_id}", "token": "t"}
    body = orjson.dumps({"execution_id": execution_id, "job_id": execution_id, "attempt": 0, "payload": {"text": 7},
                         "callback": callback})
    now = int(time.time())

    def headers(secret: str, signed: bytes = body, timestamp: int = now) -> dict[str, str]:
        return {"content-type": "application/json", "webhook-id": execution_id, "jobwire-attempt": "0",
                "webhook-timestamp": str(timestamp),
                "webhook-signature": sign_webhook(secret, execution_id, timestamp, signed)}

    async with httpx.AsyncClient(timeout=10) as client:
        refused = {
            "another secret": await client.post(example.url, content=body, headers=headers(new_handler_secret())),
            "a changed body": await client.post(example.url, content=body.replace(b"7", b"8"),
                                                headers=headers(example.secret)),
            "an old timestamp": await client.post(example.url, content=body,
                                                  headers=headers(example.secret, timestamp=now - 3600)),
            "no signature headers": await client.post(example.url, content=body,
                                                      headers={"content-type": "application/json"}),
        }
        for case, response in refused.items():
            assert response.status_code == 401, (case, response.status_code, response.text)
            assert response.json()["error"].startswith("signature not verified"), (case, response.text)

        # The same request signed right is accepted: the refusals above are the signature's.
        accepted = await client.post(example.url, content=body, headers=headers(example.secret))
        assert accepted.status_code == 202, accepted.text
        for _ in range(500):
            if any("complete callback: HTTP 4" in line for line in example.output):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError(f"the accepted request was not reported: {example.output}")
