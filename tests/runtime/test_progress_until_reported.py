"""Rows tell the truth about progress: an execution's `progress` is null until its handler reports
some (POST {callback.url}/progress); a heartbeat or an empty snapshot reports none; the first
report shows the fields it did not send as 0 (counts) or null (status)."""

from __future__ import annotations

from typing import Any

import httpx
from aiohttp import web

from tests.conftest import HandlerServer, register, wait_for_state

async def accept(_: web.Request, __: dict[str, Any]) -> web.StreamResponse:
    return web.Response(status=202)


async def callback(api: httpx.AsyncClient, sent: dict[str, Any], what: str, body: Any = None) -> httpx.Response:
    response = await api.post(f"{sent['callback']['url']}/{what}", json=body,
                              headers={"authorization": f"Bearer {sent['callback']['token']}"})
    assert response.status_code == 200, response.text
    return response


async def progress_of(api: httpx.AsyncClient, execution_id: str) -> Any:
    return (await api.get(f"/v1/executions/{execution_id}")).json()["progress"]


async def test_progress_is_null_until_the_handler_reports_some(api: httpx.AsyncClient, handler: HandlerServer) -> None:
    await register(api, "later", handler.route("/later", accept))
    created = await api.post("/v1/jobs", json={"handler": "later"})
    assert created.status_code == 201 and created.json()["progress"] is None
    [batch] = (await api.post("/v1/jobs/batch", json={"jobs": [{"handler": "later"}]})).json()["items"]
    assert batch["progress"] is None
    await handler.wait_for(2)
    sent = next(s for s in handler.received if s["execution_id"] == created.json()["id"])
    await wait_for_state(api, sent["execution_id"], "PROCESSING")
    assert await progress_of(api, sent["execution_id"]) is None

    await callback(api, sent, "heartbeat")
    await callback(api, sent, "progress", {})
    assert await progress_of(api, sent["execution_id"]) is None

    await callback(api, sent, "progress", {"succeeded": 2})
    expected = {"total": 0, "succeeded": 2, "failed": 0, "status": None, "percentage": 0}
    assert await progress_of(api, sent["execution_id"]) == expected
    await callback(api, sent, "heartbeat")
    await callback(api, sent, "progress", {"total": 4, "status": "half"})
    expected = {"total": 4, "succeeded": 2, "failed": 0, "status": "half", "percentage": 50}
    assert await progress_of(api, sent["execution_id"]) == expected
    done = await callback(api, sent, "complete", {"outcome": "succeeded"})
    assert done.json()["progress"] == expected  # the last report stays
