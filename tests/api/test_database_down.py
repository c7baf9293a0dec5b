"""While PostgreSQL is unreachable every route answers 503 problem+json with Retry-After."""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy.engine import make_url

from app.db.migrate import upgrade_sync
from tests.conftest import admin, settings_for, start_server


async def test_routes_answer_503_while_the_database_is_unreachable_and_recover(server_url, fresh_database):
    url = await fresh_database()
    await asyncio.to_thread(upgrade_sync, url, None)
    name = make_url(url).database
    server = await start_server(settings_for(url))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as api:
            assert (await api.put("/v1/handlers/h", json={"url": "http://127.0.0.1:9/x"})).status_code == 201

            await admin(server_url, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await admin(server_url, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
            try:
                for method, path, body in (
                    ("POST", "/v1/jobs", {"handler": "h"}),
                    ("GET", "/v1/executions", None),
                    ("GET", "/v1/handlers/h", None),
                    ("GET", "/metrics", None),
                    ("POST", "/v1/jobs", {"handler": "h"}),  # again: no stale pooled connection leaks a 500
                ):
                    response = await api.request(method, path, json=body)
                    assert response.status_code == 503, (path, response.text)
                    assert response.headers["content-type"] == "application/problem+json"
                    assert int(response.headers["retry-after"]) > 0
                ready = await api.get("/readyz")
                assert ready.status_code == 503 and ready.headers["content-type"] == "application/problem+json"
                assert (await api.get("/healthz")).status_code == 200
            finally:
                await admin(server_url, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')

            for _ in range(50):
                response = await api.post("/v1/jobs", json={"handler": "h", "delay_seconds": 3600})
                if response.status_code == 201:
                    break
                assert response.status_code == 503, response.text
                await asyncio.sleep(0.1)
            assert response.status_code == 201
            assert (await api.get("/readyz")).status_code == 200
    finally:
        await server.stop()
