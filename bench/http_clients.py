"""The two handler-call clients side by side: client CPU per call and calls per second.

    python -m bench.http_clients [--calls 20000] [--in-flight 64]

Starts the benchmark's no-op handler (bench.noop_handler) in its own process and POSTs a
dispatch-sized body to its /sync route through each transport of app.delivery.transport, in
this process on uvloop, alternating (aiohttp, http11, aiohttp, http11) so that both see the
same machine. The figure to read is the client's CPU per call (this process's CPU time over
the calls it made): the handler runs on the same cores, so calls per second is shared with it.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import uvloop

from app.delivery.transport import AiohttpTransport, Http11Transport, Transport
from bench.processes import start_handler

BODY = b'{"execution_id":"0b7e","job_id":"j","payload":{"i":1},"callback":{"url":"http://x","token":"t"}}'
HEADERS = {"content-type": "application/json", "webhook-id": "0b7e.0", "webhook-timestamp": "1",
           "webhook-signature": "v1,c2lnbmF0dXJl"}


async def measure(transport: Transport, url: str, calls: int, in_flight: int) -> dict[str, float]:
    gate = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with gate:
            reply = await transport.post(url, BODY, HEADERS, 10.0)
            if reply.status != 200:
                raise RuntimeError(f"the handler answered {reply.status}")

    await asyncio.gather(*(one() for _ in range(min(500, calls))))  # warm the connections
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"calls_per_s": round(calls / wall), "client_cpu_us_per_call": round(cpu / calls * 1e6)}


async def main(calls: int, in_flight: int) -> None:
    handler = await start_handler()
    try:
        for name in ("aiohttp", "http11", "aiohttp", "http11"):
            transport: Transport = (Http11Transport if name == "http11" else AiohttpTransport)(in_flight, 1 << 20)
            try:
                print(name, await measure(transport, f"{handler.url}/sync", calls, in_flight), flush=True)
            finally:
                await transport.close()
    finally:
        handler.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.http_clients", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--in-flight", type=int, default=64)
    args = parser.parse_args()
    uvloop.run(main(args.calls, args.in_flight))
