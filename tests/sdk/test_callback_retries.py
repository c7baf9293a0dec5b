"""When the toolkit sends a callback again (jobwire.handler._callbacks and _retrying): after no
answer, 429, 502, 503 and 504, with backoff or the answer's Retry-After, until the attempt's
deadline; never after another answer. The answers come from a real HTTP server on loopback
scripted with the statuses Jobwire (503 with Retry-After while its database is away) and a load
balancer in front of it (429, 502, 504) give; tests/sdk/test_handler_toolkit.py restarts a real
Jobwire under a running attempt."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web

from jobwire.handler._callbacks import Callbacks
from jobwire.handler._errors import CallbackError
from jobwire.handler._retrying import AttemptDeadline, Backoff
from tests.conftest import free_port

FAST = Backoff(base_delay=0.01, max_delay=0.05)


@dataclass
class Scripted:
    """Answers each callback path with its scripted (status, headers) in turn, then 200."""

    url: str
    script: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    arrivals: list[tuple[str, float]] = field(default_factory=list)  # (path, monotonic time)

    def tries(self, path: str) -> list[float]:
        return [at for name, at in self.arrivals if name == path]


@pytest.fixture
async def jobwire_stand_in() -> AsyncIterator[Scripted]:
    port = free_port()
    scripted = Scripted(url=f"http://127.0.0.1:{port}/v1/executions/e1")

    async def answer(request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        scripted.arrivals.append((path, time.monotonic()))
        queue = scripted.script.get(path, [])
        if queue:
            status, headers = queue.pop(0)
            return web.json_response({"status": status}, status=status, headers=headers)
        body: dict[str, Any] = {"cancel_requested": False} if path in ("/heartbeat", "/progress") else {}
        return web.json_response(body)

    app = web.Application()
    app.router.add_route("*", "/v1/executions/e1/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield scripted
    await runner.cleanup()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client


def callbacks(http: httpx.AsyncClient, url: str, seconds_left: float = 30.0) -> Callbacks:
    return Callbacks(http, "e1", url, "0.token", AttemptDeadline(seconds_left, time.monotonic()), FAST)


async def test_a_completion_rides_out_503_429_502_and_504_with_a_warning_each(
        http: httpx.AsyncClient, jobwire_stand_in: Scripted, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jobwire.handler")
    jobwire_stand_in.script["/complete"] = [(503, {}), (429, {}), (502, {}), (504, {})]

    await callbacks(http, jobwire_stand_in.url).complete(b'{"outcome":"succeeded"}')

    assert len(jobwire_stand_in.tries("/complete")) == 5
    warnings = [r for r in caplog.records if r.name == "jobwire.handler"]
    assert [r.levelno for r in warnings] == [logging.WARNING] * 4 and all(r.exc_info is None for r in warnings)
    assert [r.getMessage().split("(")[1].split(")")[0] for r in warnings] == [
        "HTTP 503", "HTTP 429", "HTTP 502", "HTTP 504"]


async def test_retry_after_is_waited_for_instead_of_the_backoff(http: httpx.AsyncClient,
                                                               jobwire_stand_in: Scripted) -> None:
    jobwire_stand_in.script["/heartbeat"] = [(503, {"Retry-After": "1"})]

    assert await callbacks(http, jobwire_stand_in.url).report(None) is False

    first, second = jobwire_stand_in.tries("/heartbeat")
    assert second - first >= 1.0  # the backoff alone would have waited at most 0.01 s


@pytest.mark.parametrize("status", [400, 403, 404, 422, 500])
async def test_another_answer_is_final_and_not_sent_again(http: httpx.AsyncClient, jobwire_stand_in: Scripted,
                                                          status: int) -> None:
    jobwire_stand_in.script["/steps/charge"] = [(status, {})]

    with pytest.raises(CallbackError) as refused:
        await callbacks(http, jobwire_stand_in.url).put_step("charge", {"id": 1})

    assert refused.value.status == status and not refused.value.gave_up
    assert len(jobwire_stand_in.tries("/steps/charge")) == 1


async def test_a_stale_attempt_stops_quietly(http: httpx.AsyncClient, jobwire_stand_in: Scripted,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jobwire.handler")
    for path in ("/heartbeat", "/logs", "/complete"):
        jobwire_stand_in.script[path] = [(409, {})]
    attempt = callbacks(http, jobwire_stand_in.url)

    assert await attempt.report(None) is True  # stop: a newer attempt owns the execution
    await attempt.append_logs([{"level": "INFO", "message": "late"}])
    await attempt.complete(b'{"outcome":"succeeded"}')

    assert [path for path, _ in jobwire_stand_in.arrivals] == ["/heartbeat", "/logs", "/complete"]
    assert [r for r in caplog.records if r.name == "jobwire.handler"] == []


async def test_no_answer_is_retried_until_the_deadline_then_one_error(
        http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="jobwire.handler")
    nobody = f"http://127.0.0.1:{free_port()}/v1/executions/e1"

    with pytest.raises(CallbackError) as gave_up:
        await callbacks(http, nobody, seconds_left=0.3).report({"total": 1})
    assert gave_up.value.gave_up and gave_up.value.status is None
    await callbacks(http, nobody, seconds_left=0.0).complete(b'{"outcome":"succeeded"}')  # never raises

    records = [r for r in caplog.records if r.name == "jobwire.handler"]
    assert all(r.exc_info is None for r in records)
    errors = [r.getMessage() for r in records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and "POST /progress not delivered" in errors[0] and "POST /complete" in errors[1]
    assert records[-1].levelno == logging.ERROR and "after 1 tries" in errors[1]  # past it: one try, no retry
    assert len(records) > 2  # the progress report was retried (a WARNING each) before it gave up


async def test_an_acknowledged_heartbeat_moves_the_deadline_it_retries_until(
        http: httpx.AsyncClient, jobwire_stand_in: Scripted) -> None:
    attempt = callbacks(http, jobwire_stand_in.url, seconds_left=1.0)
    before = attempt.deadline.at

    await attempt.report(None)
    await attempt.append_logs([{"level": "INFO", "message": "a log batch moves nothing"}])

    assert before < attempt.deadline.at <= time.monotonic() + 1.0


# -- the policy, no I/O ----------------------------------------------------------------------


def test_the_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    for draw, factor in ((0.0, 0.5), (1.0, 1.0)):
        backoff = Backoff(base_delay=0.2, max_delay=5.0, random=lambda draw=draw: draw)
        assert [backoff.delay(n, None, 60.0) for n in range(7)] == pytest.approx(
            [factor * d for d in (0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0)])
    assert Backoff(random=lambda: 1.0).delay(10_000, None, 60.0) == 5.0  # no overflow, however many tries


def test_retry_after_wins_over_the_backoff_and_the_deadline_over_both() -> None:
    backoff = Backoff(random=lambda: 1.0)
    assert backoff.delay(0, 7.0, 60.0) == 7.0
    assert backoff.delay(0, 7.0, 2.5) == 2.5
    assert backoff.delay(5, None, 1.0) == 1.0
    assert backoff.delay(0, None, -3.0) == 0.0


def test_the_deadline_moves_only_later() -> None:
    deadline = AttemptDeadline(10.0, now=100.0)
    deadline.moved(sent_at=95.0)  # a heartbeat sent before the dispatch arrived: no earlier deadline
    assert deadline.at == 110.0
    deadline.moved(sent_at=104.0)
    assert (deadline.at, deadline.left(110.0)) == (114.0, 4.0)
