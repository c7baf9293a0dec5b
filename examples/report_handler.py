"""A report handler on the Jobwire handler toolkit (jobwire.handler): sums orders per region
into a CSV report, in steps that a retry does not redo, with progress, logs and cancellation.

Payload: {"rows": [{"region": "north", "quantity": 3, "unit_price": 2.5}, ...]}, or
{"count": N} for N generated orders (a demo). Result: {"report": "<csv text>", "rows": N,
"skipped": K}; a row it cannot read is skipped, logged as WARN and counted as failed in the
progress. A payload with neither is a permanent failure (dead-lettered, no retry).

Run it (from the repository root, with `jobwire serve` on 127.0.0.1:8000 and `jq`):

    curl -s -X PUT http://127.0.0.1:8000/v1/handlers/report -H 'content-type: application/json' \\
      -d '{"url": "http://127.0.0.1:8001/report"}' | jq -r .secret > /tmp/report.secret
    export JOBWIRE_HANDLER_SECRET=$(cat /tmp/report.secret)
    python examples/report_handler.py --port 8001
    #   or: uvicorn examples.report_handler:app --port 8001

    curl -s -X POST http://127.0.0.1:8000/v1/jobs -H 'content-type: application/json' \\
      -d '{"handler": "report", "payload": {"count": 2000}}' | jq -r .id
    curl -s http://127.0.0.1:8000/v1/executions/<id> | jq -r .result.report

JOBWIRE_HANDLER_SECRET may hold several secrets, space- or comma-separated, during a rotation.
The toolkit needs the jobwire-sdk package (pip install ./sdk/python) and an ASGI server
(pip install uvicorn).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
from functools import partial
from typing import Any

from jobwire.handler import Context, HandlerApp, Job, Permanent, asgi_app

CHUNK = 500  # orders summed per step: a retry resumes after the last chunk recorded
MAX_COUNT = 1_000_000
REGIONS = ("north", "east", "south", "west")
PRICES = {"widget": 250, "gadget": 1299, "gizmo": 499, "doohickey": 75, "sprocket": 1850}  # cents


def demo_orders(count: int) -> list[dict[str, Any]]:
    """`count` orders, the same every time (a retry must see the rows the first attempt saw)."""
    products = list(PRICES)
    orders = []
    for n in range(count):
        product = products[(n * 7) % len(products)]
        orders.append({"region": REGIONS[n % len(REGIONS)], "product": product, "quantity": 1 + (n * 13) % 9,
                       "unit_price": PRICES[product] / 100})
    return orders


def orders_of(payload: Any) -> list[Any]:
    if isinstance(payload, dict) and isinstance(payload.get("rows"), list):
        return list(payload["rows"])
    count = payload.get("count") if isinstance(payload, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_COUNT:
        return demo_orders(count)
    # Another attempt would read the same payload: fail for good.
    raise Permanent(f'the payload needs "rows" (a list) or "count" (0 to {MAX_COUNT})', error_type="bad_payload")


def problem_with(order: Any) -> str | None:
    """Why an order cannot be summed, or None."""
    if not isinstance(order, dict):
        return "not an object"
    if not isinstance(order.get("region"), str) or not order["region"].strip():
        return "no region"
    quantity, price = order.get("quantity"), order.get("unit_price")
    if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity <= 0:
        return f"quantity {quantity!r} is not a positive whole number"
    if not isinstance(price, int | float) or isinstance(price, bool) or not 0 <= price < 10**9:
        return f"unit_price {price!r} is not a price"
    return None


def sum_chunk(orders: list[Any], first: int, ctx: Context) -> dict[str, Any]:
    """Totals per region of one chunk (revenue in cents: money is not summed in floats)."""
    regions: dict[str, list[int]] = {}
    skipped = 0
    for n, order in enumerate(orders, start=first):
        problem = problem_with(order)
        if problem:
            ctx.log("WARN", f"row {n} skipped: {problem}")
            skipped += 1
            continue
        totals = regions.setdefault(order["region"].strip().lower(), [0, 0, 0])
        totals[0] += 1
        totals[1] += order["quantity"]
        totals[2] += round(order["quantity"] * order["unit_price"] * 100)
    return {"regions": regions, "skipped": skipped}


def render_csv(regions: dict[str, list[int]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["region", "orders", "units", "revenue"])
    for region in sorted(regions):
        orders, units, cents = regions[region]
        writer.writerow([region, orders, units, f"{cents // 100}.{cents % 100:02d}"])
    orders, units, cents = (sum(column) for column in zip(*regions.values(), strict=True)) if regions else (0, 0, 0)
    writer.writerow(["total", orders, units, f"{cents // 100}.{cents % 100:02d}"])
    return out.getvalue()


async def build_report(job: Job, ctx: Context) -> dict[str, Any] | None:
    orders = orders_of(job.payload)
    ctx.log("INFO", f"attempt {job.attempt}: summing {len(orders)} orders in chunks of {CHUNK}")
    ctx.progress(total=len(orders), succeeded=0, failed=0, status="summing")
    regions: dict[str, list[int]] = {}
    summed = skipped = 0
    for first in range(0, len(orders), CHUNK):
        if await ctx.is_cancelled():
            ctx.log("WARN", f"cancelled after {summed + skipped} orders: stopping")
            return None
        chunk = orders[first:first + CHUNK]
        # A chunk an earlier attempt recorded is not summed again (nor logged again).
        part = await ctx.run_step_once(f"sum-{first}", partial(sum_chunk, chunk, first, ctx))
        for region, totals in part["regions"].items():
            merged = regions.setdefault(region, [0, 0, 0])
            for column, value in enumerate(totals):
                merged[column] += value
        skipped += part["skipped"]
        summed += len(chunk) - part["skipped"]
        ctx.progress(succeeded=summed, failed=skipped, status=f"summed {summed + skipped} of {len(orders)}")
    report = await ctx.run_step_once("render-csv", lambda: render_csv(regions))
    ctx.progress(status="done")
    ctx.log("INFO", f"report: {len(regions)} regions, {summed} orders, {skipped} skipped")
    return {"report": report, "rows": len(orders), "skipped": skipped}


def handler_secrets() -> list[str]:
    secrets = [s for s in re.split(r"[\s,]+", os.environ.get("JOBWIRE_HANDLER_SECRET", "")) if s]
    if not secrets:
        raise SystemExit("set JOBWIRE_HANDLER_SECRET to the handler's secret (whsec_…): "
                         "PUT /v1/handlers/{name} answers it")
    return secrets


def make_app(sync_window: float = 10.0) -> HandlerApp:
    return asgi_app(build_report, handler_secrets(), sync_window=sync_window)


app = make_app()  # `uvicorn examples.report_handler:app`


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--sync-window", type=float, default=10.0,
                        help="seconds to answer in the request before answering 202 (0: always 202)")
    args = parser.parse_args()
    uvicorn.run(make_app(args.sync_window), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
