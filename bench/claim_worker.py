"""The claim cost of one side of `--baseline`, in a process of its own: the app/ of `--app-root`
(the baseline's worktree, or the current checkout) is what it imports, while the harness code
(bench/) stays the current checkout's. The parent sends one JSON command a line on stdin and
reads one JSON reply a line; the timing is bench.claim_cost's, so both sides are timed alike.

    {"cmd": "fill", "dsn": …, "sizes": [1000, 1000000], "batch": 64}   → {"ok": true}
    {"cmd": "time", "n": 10}      → {"times": {"1000": [ms, …], …}}    (n claims at each size, in turns)
    {"cmd": "plans"}              → {"plans": {"1000": [plan, …], …}}
    end of input                  → the engines are disposed, exit 0

The first line written is {"app_file": …}: where `import app` resolved, checked against --app-root."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import orjson

# Started by the parent as `python -m bench.claim_worker` from the current checkout: `bench` is
# already imported from there (its submodules load from bench.__path__), and `app` is not yet.
WORKER_MODULE = "bench.claim_worker"


def _claim_app_root(root: Path) -> str:
    sys.path.insert(0, str(root))
    import app

    location = Path(app.__file__).resolve()
    if not location.is_relative_to(root.resolve() / "app"):
        raise SystemExit(f"claim worker: `import app` gave {location}, not the app/ of {root}")
    return str(location)


async def _serve(out: Any) -> None:
    from bench.claim_cost import ClaimTables  # imports app.db.*: the --app-root's

    tables: ClaimTables | None = None
    try:
        while line := await asyncio.to_thread(sys.stdin.readline):
            msg = orjson.loads(line)
            try:
                if msg["cmd"] == "fill":
                    tables = ClaimTables(msg["dsn"], tuple(msg["sizes"]), msg["batch"])
                    await tables.fill()
                    reply: dict[str, Any] = {"ok": True}
                elif msg["cmd"] == "time":
                    assert tables is not None
                    reply = {"times": {str(k): v for k, v in (await tables.time(msg["n"])).items()}}
                elif msg["cmd"] == "plans":
                    assert tables is not None
                    reply = {"plans": {str(k): v for k, v in (await tables.plans()).items()}}
                else:
                    reply = {"error": f"unknown command {msg['cmd']!r}"}
            except Exception:  # the parent decides: it reports the side's claim cost as failed
                reply = {"error": traceback.format_exc(limit=8)}
            out.write(orjson.dumps(reply).decode() + "\n")
            out.flush()
    finally:
        if tables is not None:
            await tables.close()


def main() -> None:
    p = argparse.ArgumentParser(prog=f"python -m {WORKER_MODULE}")
    p.add_argument("--app-root", type=Path, required=True, help="the tree whose app/ is imported")
    args = p.parse_args()
    # Replies go to the original stdout; anything else printing to stdout lands on stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    app_file = _claim_app_root(args.app_root)
    out.write(orjson.dumps({"app_file": app_file}).decode() + "\n")
    out.flush()
    import uvloop

    uvloop.run(_serve(out))


if __name__ == "__main__":
    main()
