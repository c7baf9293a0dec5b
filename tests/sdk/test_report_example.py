"""examples/report_handler.py run for real, the two ways its docstring gives (`python
examples/report_handler.py --port N` and `uvicorn examples.report_handler:app`), as its own
process with JOBWIRE_HANDLER_SECRET from the registration, against a real Jobwire."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningServer, free_port, register, wait_for_state

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "python": [sys.executable, "examples/report_handler.py", "--port", "{port}"],
    "python-202": [sys.executable, "examples/report_handler.py", "--port", "{port}", "--sync-window", "0"],
    "uvicorn": [sys.executable, "-m", "uvicorn", "examples.report_handler:app", "--port", "{port}",
                "--log-level", "warning"],
}


class Report:
    """Jobwire, and the example registered as handler `report` and started one of the ways."""

    def __init__(self, api: httpx.AsyncClient, tmp_path: Path) -> None:
        self.api = api
        self.tmp_path = tmp_path
        self.processes: list[asyncio.subprocess.Process] = []

    async def start(self, how: str) -> None:
        port = free_port()
        registered = await register(self.api, "report", f"http://127.0.0.1:{port}/report")
        command = [part.format(port=port) for part in COMMANDS[how]]
        errors = (self.tmp_path / f"{how}.stderr").open("wb")
        process = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=errors,
            env={**os.environ, "JOBWIRE_HANDLER_SECRET": registered["secret"]})
        errors.close()
        self.processes.append(process)
        for _ in range(500):
            if process.returncode is not None:
                raise AssertionError(f"{command} exited {process.returncode}:\n"
                                     f"{(self.tmp_path / f'{how}.stderr').read_text()}")
            if listening(port):
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{command} did not listen on {port}")

    async def run(self, payload: Any, state: str = "SUCCEEDED") -> dict[str, Any]:
        response = await self.api.post("/v1/jobs", json={"handler": "report", "payload": payload})
        assert response.status_code == 201, response.text
        return await wait_for_state(self.api, response.json()["id"], state, timeout=30)

    async def logs(self, execution_id: str) -> list[tuple[str, str]]:
        page = (await self.api.get(f"/v1/executions/{execution_id}/logs", params={"limit": 500})).json()
        return [(entry["level"], entry["message"]) for entry in page["items"]]

    async def stop(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
async def report(jobwire: Callable[..., Awaitable[RunningServer]], tmp_path: Path) -> AsyncIterator[Report]:
    server = await jobwire()
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
        started = Report(api, tmp_path)
        try:
            yield started
        finally:
            await started.stop()


def table(report_csv: str) -> dict[str, dict[str, str]]:
    return {row["region"]: row for row in csv.DictReader(io.StringIO(report_csv))}


@pytest.mark.parametrize("how", ["python", "python-202", "uvicorn"])
async def test_the_example_builds_a_report_of_generated_orders(report: Report, how: str) -> None:
    await report.start(how)

    done = await report.run({"count": 1200})

    [attempt] = (await report.api.get(f"/v1/executions/{done['id']}/attempts")).json()["items"]
    assert attempt["http_status"] == (None if how == "python-202" else 200)  # None: completed by callback

    assert done["result"]["rows"] == 1200 and done["result"]["skipped"] == 0
    regions = table(done["result"]["report"])
    assert list(regions) == ["east", "north", "south", "west", "total"]
    assert [int(regions[r]["orders"]) for r in ("east", "north", "south", "west")] == [300] * 4
    total = regions.pop("total")
    assert int(total["orders"]) == 1200
    assert int(total["units"]) == sum(int(row["units"]) for row in regions.values())
    cents = [int(row["revenue"].replace(".", "")) for row in regions.values()]
    assert int(total["revenue"].replace(".", "")) == sum(cents)
    assert done["progress"] == {"total": 1200, "succeeded": 1200, "failed": 0, "status": "done", "percentage": 100}
    assert await report.logs(done["id"]) == [("INFO", "attempt 0: summing 1200 orders in chunks of 500"),
                                             ("INFO", "report: 4 regions, 1200 orders, 0 skipped")]


async def test_the_example_skips_and_logs_a_row_it_cannot_read(report: Report) -> None:
    await report.start("python")
    rows = [{"region": "north", "quantity": 2, "unit_price": 2.5},
            {"region": "South", "quantity": 1, "unit_price": 12.99},
            {"region": "north", "quantity": 1, "unit_price": 0.1},
            {"quantity": 3, "unit_price": 1}]

    done = await report.run({"rows": rows})

    assert done["result"] == {"rows": 4, "skipped": 1, "report": "region,orders,units,revenue\n"
                                                               "north,2,3,5.10\n"
                                                               "south,1,1,12.99\n"
                                                               "total,3,4,18.09\n"}
    assert done["progress"]["failed"] == 1 and done["progress"]["succeeded"] == 3
    assert ("WARN", "row 3 skipped: no region") in await report.logs(done["id"])


async def test_the_example_dead_letters_a_payload_it_cannot_use_without_retrying(report: Report) -> None:
    await report.start("python")

    done = await report.run({"month": "2026-11"}, state="DEAD_LETTER")

    assert done["attempt"] == 0 and done["error_type"] == "bad_payload"
    assert 'needs "rows"' in done["last_error"]
