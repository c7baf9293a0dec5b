"""`python -m bench --baseline REF`: the current checkout against the commit REF, on the same
machine in the same run, step by step (see bench/README.md, "Against a baseline commit").

REF is resolved with `git rev-parse` and checked out, detached, in a worktree of its own,
`.bench/baseline/<sha>` in the checkout (git-ignored; reused while it is clean and at that
commit). The baseline runs on this venv's interpreter and packages, with its worktree first on
PYTHONPATH, which wins over the editable install's path entry (a .pth in site-packages, after
PYTHONPATH on sys.path): `import app` in its processes is the baseline's app/, and its
migrations (found beside app/) are the baseline's. A child process with the same interpreter,
environment and working directory prints `app.__file__` before anything is measured; the run
stops if it is not the baseline's. The current side gets its own checkout first on PYTHONPATH
the same way. A baseline whose pyproject.toml asks for other dependencies is reported (the
run goes on, on this venv).

Every figure is compared: the medians of both sides, current ÷ baseline, and a noise band of
max(5 %, the larger relative min–max spread, (max − min) ÷ median, of the two sides' runs).
A ratio inside 1 ± band is "within noise"; outside it the figure is "faster" or "slower
(outside noise)" (for memory, "smaller" or "larger (outside noise)")."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import statistics
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from bench.claim_worker import WORKER_MODULE
from bench.processes import app_env
from bench.stats import claim_summary

# The checkout this bench/ belongs to: the current side's app/ is this tree's.
CHECKOUT = Path(__file__).resolve().parents[1]
WORKTREES = CHECKOUT / ".bench" / "baseline"
MIN_NOISE = 0.05

# What `import app` resolves to in a process started like `jobwire serve` (the console script,
# whose sys.path[0] is the venv's bin/, holds no app/): the -c's own '' entry is dropped.
APP_FILE_CHECK = "import sys; sys.path.pop(0); import app; print(app.__file__)"


@dataclass(frozen=True)
class Side:
    name: str  # "current" | "baseline"
    root: Path  # the tree whose app/ and alembic/ its processes import
    sha: str | None = None

    @property
    def label(self) -> str:
        """How the log names it ("jobwire" for the current side, as without --baseline)."""
        return "jobwire" if self.name == "current" else "baseline"


@dataclass
class Baseline:
    ref: str
    side: Side
    current: Side
    reused: bool
    app_files: dict[str, str] = field(default_factory=dict)
    dependencies: dict[str, Any] = field(default_factory=dict)
    current_head: str | None = None
    current_uncommitted: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "ref": self.ref, "sha": self.side.sha, "worktree": str(self.side.root), "worktree_reused": self.reused,
            "current": {"root": str(self.current.root), "head": self.current_head,
                        "uncommitted": self.current_uncommitted},
            "isolation": {"how": "this venv's interpreter and packages; each side's tree first on PYTHONPATH",
                          "app_file": self.app_files},
            "dependencies": self.dependencies,
        }


def _git(*args: str, cwd: Path = CHECKOUT) -> str:
    proc = subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.rstrip()  # not lstrip: `status --porcelain` lines begin with a space


def resolve(ref: str) -> str:
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except RuntimeError:
        raise SystemExit(f"--baseline {ref}: not a commit in the repository of {CHECKOUT}") from None


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Two benchmarks starting at once (a test and a manual run) create the worktree once."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _registered_worktrees() -> set[Path]:
    lines = _git("worktree", "list", "--porcelain").splitlines()
    return {Path(line.removeprefix("worktree ")).resolve() for line in lines if line.startswith("worktree ")}


def _usable(path: Path, sha: str) -> bool:
    """A registered worktree at `sha` with no change to a tracked file."""
    if not (path / ".git").exists() or path.resolve() not in _registered_worktrees():
        return False
    try:
        return (_git("rev-parse", "HEAD", cwd=path) == sha
                and _git("status", "--porcelain", "--untracked-files=no", cwd=path) == "")
    except RuntimeError:
        return False


def worktree(sha: str) -> tuple[Path, bool]:
    """The worktree of `sha` under WORKTREES, created or reused: (its path, reused)."""
    path = WORKTREES / sha
    with _locked(WORKTREES):
        if _usable(path, sha):
            return path, True
        if path.exists():  # ours (under WORKTREES), but stale, moved or edited: made anew
            with contextlib.suppress(RuntimeError):
                _git("worktree", "remove", "--force", str(path))
            shutil.rmtree(path, ignore_errors=True)
        # --force: a worktree of this path that git still lists after its directory went
        _git("worktree", "add", "--force", "--detach", str(path), sha)
    return path, False


def imported_app(side: Side) -> str:
    """app.__file__ in a child process started as the side's `jobwire serve` is (same
    interpreter, environment and working directory)."""
    proc = subprocess.run([sys.executable, "-c", APP_FILE_CHECK], env=app_env(side.root), cwd=side.root,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{side.name}: `import app` failed in {side.root}:\n{proc.stderr[-2000:]}")
    location = proc.stdout.strip().splitlines()[-1]
    if not Path(location).resolve().is_relative_to(side.root.resolve() / "app"):
        raise SystemExit(f"{side.name}: its processes would import {location}, not the app/ of {side.root}")
    return location


def _requirements(root: Path) -> list[str]:
    path = root / "pyproject.toml"
    if not path.exists():
        return []
    return list(tomllib.loads(path.read_text()).get("project", {}).get("dependencies", []))


def _unsatisfied(requirements: Sequence[str]) -> list[str]:
    """The requirements this venv does not satisfy (needs `packaging`; none checked without it)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        return []
    missing = []
    for text in requirements:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            missing.append(f"{text} (not installed)")
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            missing.append(f"{text} (installed {installed})")
    return missing


def dependencies(current: Path, baseline: Path) -> dict[str, Any]:
    mine, theirs = _requirements(current), _requirements(baseline)
    return {
        "same": sorted(mine) == sorted(theirs),
        "only_current": sorted(set(mine) - set(theirs)),
        "only_baseline": sorted(set(theirs) - set(mine)),
        "baseline_unsatisfied_here": _unsatisfied(theirs),
    }


def prepare(ref: str, log: Callable[[str], None]) -> Baseline:
    sha = resolve(ref)
    path, reused = worktree(sha)
    current = Side("current", CHECKOUT)
    base = Baseline(ref=ref, side=Side("baseline", path, sha), current=current, reused=reused)
    with contextlib.suppress(RuntimeError):
        base.current_head = _git("rev-parse", "HEAD")
        base.current_uncommitted = _git("status", "--porcelain", "--", "app", "alembic", "pyproject.toml").splitlines()
    base.app_files = {s.name: imported_app(s) for s in (current, base.side)}
    base.dependencies = dependencies(CHECKOUT, path)
    log(f"baseline {ref} = {sha[:12]}: worktree {path} ({'reused' if reused else 'created'}); "
        f"its processes import {base.app_files['baseline']}, the current side's {base.app_files['current']}")
    if base.current_uncommitted:
        paths = [line[3:] for line in base.current_uncommitted]
        log(f"current side: HEAD {base.current_head and base.current_head[:12]} plus {len(paths)} uncommitted "
            f"change(s) in app/, alembic/, pyproject.toml: " + ", ".join(paths[:5]) + (", …" if len(paths) > 5 else ""))
    deps = base.dependencies
    if not deps["same"]:
        log(f"baseline's dependencies differ from the current pyproject.toml: only baseline {deps['only_baseline']}, "
            f"only current {deps['only_current']}; both run on this venv")
    if deps["baseline_unsatisfied_here"]:
        log(f"WARNING: this venv does not satisfy the baseline's {deps['baseline_unsatisfied_here']}")
    return base


def order(sides: Sequence[Side], run: int) -> list[Side]:
    """The current side first in odd rounds, the baseline first in even ones."""
    return list(sides) if run % 2 == 1 else list(reversed(sides))


# --- claim cost, one worker process per side, interleaved block by block -----------------------

class ClaimWorker:
    def __init__(self, side: Side, proc: asyncio.subprocess.Process, app_file: str) -> None:
        self.side, self.proc, self.app_file = side, proc, app_file

    @classmethod
    async def start(cls, side: Side) -> ClaimWorker:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", WORKER_MODULE, "--app-root", str(side.root), cwd=CHECKOUT, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 2**20)
        hello = await cls._read(proc, side)
        return cls(side, proc, hello["app_file"])

    @staticmethod
    async def _read(proc: asyncio.subprocess.Process, side: Side) -> dict[str, Any]:
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        if not line:
            await proc.wait()
            raise RuntimeError(f"{side.name} claim worker exited with {proc.returncode} (its stderr is above)")
        reply = orjson.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{side.name} claim worker: {reply['error']}")
        return reply

    async def call(self, **msg: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()
        return await self._read(self.proc, self.side)

    async def close(self) -> None:
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 60)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def claim_cost_sides(dsns: dict[str, str], sides: Sequence[Side], sizes: tuple[int, ...], batch: int,
                           reps: int, runs: int, log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Each side's claim cost (bench.claim_cost's figures, plus each run's medians) in a database
    of its own, timed by a worker importing that side's app/: `reps` claims per size and side in
    blocks of about ten, the sides taking turns block by block (the current side first in even
    blocks), the blocks split evenly into `runs` runs. A side whose worker fails gets {"error": …}."""
    out: dict[str, dict[str, Any]] = {}
    workers: dict[str, ClaimWorker] = {}

    async def fill(side: Side) -> None:
        try:
            worker = await ClaimWorker.start(side)
            workers[side.name] = worker
            await worker.call(cmd="fill", dsn=dsns[side.name], sizes=list(sizes), batch=batch)
            await worker.call(cmd="time", n=10)  # warm-up, not counted
        except Exception as exc:
            out[side.name] = {"error": str(exc)}
            log(f"{side.label} claim cost failed: {exc}")

    try:
        await asyncio.gather(*(fill(s) for s in sides))  # not timed: both sides fill at once
        live = [s for s in sides if s.name not in out]
        blocks = max(runs, -(-reps // 10))
        times = {s.name: {size: [] for size in sizes} for s in live}
        groups = {s.name: [{size: [] for size in sizes} for _ in range(runs)] for s in live}
        for b in range(blocks):
            n = reps // blocks + (1 if b < reps % blocks else 0)
            for side in order(live, b + 1):
                if side.name in out:
                    continue
                try:
                    got = (await workers[side.name].call(cmd="time", n=n))["times"]
                except Exception as exc:
                    out[side.name] = {"error": str(exc)}
                    log(f"{side.label} claim cost failed: {exc}")
                    continue
                for size in sizes:
                    times[side.name][size].extend(got[str(size)])
                    groups[side.name][b * runs // blocks][size].extend(got[str(size)])
        for side in live:
            if side.name in out:
                continue
            plans = (await workers[side.name].call(cmd="plans"))["plans"]
            out[side.name] = claim_summary(sizes, batch, reps, times[side.name],
                                           {int(k): v for k, v in plans.items()}, groups[side.name])
            out[side.name]["app_file"] = workers[side.name].app_file
    finally:
        for worker in workers.values():
            await worker.close()
    return out


# --- the comparison ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Figure:
    key: str  # in the JSON: baseline.figures[].figure
    label: str
    kind: str  # "rate" (higher is better), "time" or "memory" (lower is better; WAL bytes count as memory)
    values: Callable[[dict], list[float] | None]  # each run's value, from a side's `jobwire` section
    median: Callable[[dict], float | None] | None = None  # the figure itself, when not the median of `values`


def _runs(step: str, key: str) -> Callable[[dict], list[float] | None]:
    def get(jw: dict) -> list[float] | None:
        runs = (jw.get(step) or {}).get("runs")
        values = [r[key] for r in runs or [] if r.get(key) is not None]
        return values or None
    return get


def _single(step: str, key: str) -> Callable[[dict], list[float] | None]:
    def get(jw: dict) -> list[float] | None:
        value = (jw.get(step) or {}).get(key)
        return None if value is None else [value]
    return get


def _claim_runs(size: str | None) -> Callable[[dict], list[float] | None]:
    def get(jw: dict) -> list[float] | None:
        runs = (jw.get("claim_cost") or {}).get("runs")
        if not runs:
            return None
        return [r["ratio_large_to_small"] if size is None else r["median_ms"][size] for r in runs]
    return get


def _claim_median(size: str | None) -> Callable[[dict], float | None]:
    def get(jw: dict) -> float | None:
        cc = jw.get("claim_cost") or {}
        if size is None:
            return cc.get("ratio_large_to_small")
        return ((cc.get("sizes") or {}).get(size) or {}).get("median_ms")
    return get


def figures(result: dict) -> list[Figure]:
    meta = result["meta"]
    out = [
        Figure("enqueue_single.jobs_per_s", f"enqueue, single, {meta['enqueue_clients']} clients (jobs/s)", "rate",
               _runs("enqueue_single", "jobs_per_s")),
        Figure("enqueue_batch.jobs_per_s", "enqueue, batch of 1,000 (jobs/s)", "rate",
               _runs("enqueue_batch", "jobs_per_s")),
        Figure("drain_sync.jobs_per_s", "end-to-end, sync 200 (jobs/s)", "rate", _runs("drain_sync", "jobs_per_s")),
        Figure("drain_callback.jobs_per_s", "end-to-end, 202 + callback (jobs/s)", "rate",
               _runs("drain_callback", "jobs_per_s")),
        Figure("drain_batch.jobs_per_s", "end-to-end, batches of 50 (jobs/s)", "rate",
               _runs("drain_batch", "jobs_per_s")),
        Figure("idle_latency.p50_ms", "idle latency p50 (ms)", "time", _runs("idle_latency", "p50_ms")),
        Figure("idle_latency.p95_ms", "idle latency p95 (ms)", "time", _runs("idle_latency", "p95_ms")),
        Figure("idle_latency.p99_ms", "idle latency p99 (ms)", "time", _runs("idle_latency", "p99_ms")),
        Figure("drain_sync.peak_rss_mb", "peak RSS, sync drains of N (MB)", "memory",
               _runs("drain_sync", "peak_rss_mb")),
        Figure("drain_callback.peak_rss_mb", "peak RSS, callback drains of N (MB)", "memory",
               _runs("drain_callback", "peak_rss_mb")),
        Figure("drain_sync.wal_bytes_per_job", "WAL per job, sync enqueue + drain (bytes)", "memory",
               _runs("drain_sync", "wal_bytes_per_job")),
        Figure("drain_rss.jobs_per_s", f"sync drain of {meta['rss_jobs']:,} (jobs/s)", "rate",
               _single("drain_rss", "jobs_per_s")),
        Figure("drain_rss.peak_rss_mb", f"peak RSS, sync drain of {meta['rss_jobs']:,} (MB)", "memory",
               _single("drain_rss", "peak_rss_mb")),
    ]
    sizes = sorted({int(s) for side in (result["jobwire"], result["baseline"]["jobwire"])
                    for s in ((side.get("claim_cost") or {}).get("sizes") or {})})
    for size in sizes:
        out.append(Figure(f"claim_cost.{size}.median_ms", f"claim of {meta['claim_batch']}, {size:,} rows (ms)",
                          "time", _claim_runs(str(size)), _claim_median(str(size))))
    if len(sizes) > 1:
        out.append(Figure("claim_cost.ratio_large_to_small", f"claim at {sizes[-1]:,} ÷ at {sizes[0]:,} rows",
                          "time", _claim_runs(None), _claim_median(None)))
    return out


def spread(values: Sequence[float]) -> float:
    """(max − min) ÷ median of one side's runs (0 for a single run)."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if len(values) > 1 and med else 0.0


VERDICTS = {  # kind: (better, worse)
    "rate": ("faster", "slower (outside noise)"),
    "time": ("faster", "slower (outside noise)"),
    "memory": ("smaller", "larger (outside noise)"),
}


def compare_one(fig: Figure, current: dict, baseline: dict) -> dict[str, Any] | None:
    cur, base = fig.values(current), fig.values(baseline)
    if cur is None and base is None:
        return None
    row: dict[str, Any] = {"figure": fig.key, "label": fig.label, "kind": fig.kind,
                           "better": "higher" if fig.kind == "rate" else "lower",
                           "current_runs": cur, "baseline_runs": base}
    c = None if cur is None else fig.median(current) if fig.median else statistics.median(cur)
    b = None if base is None else fig.median(baseline) if fig.median else statistics.median(base)
    if cur is None or base is None:  # a step one side did not measure (or whose claim cost failed)
        return {**row, "current": c, "baseline": b, "ratio": None, "noise": None, "verdict": "n/a"}
    noise = max(MIN_NOISE, spread(cur), spread(base))
    ratio = c / b if b else None
    better, worse = VERDICTS[fig.kind]
    if ratio is None:
        verdict = "n/a"
    elif abs(ratio - 1) <= noise:
        verdict = "within noise"
    elif (ratio > 1) == (fig.kind == "rate"):
        verdict = better
    else:
        verdict = worse
    return {**row, "current": c, "baseline": b, "ratio": None if ratio is None else round(ratio, 3),
            "current_spread": round(spread(cur), 3), "baseline_spread": round(spread(base), 3),
            "noise": round(noise, 3), "verdict": verdict}


def compare(result: dict) -> list[dict[str, Any]]:
    current, baseline = result["jobwire"], result["baseline"]["jobwire"]
    return [row for fig in figures(result) if (row := compare_one(fig, current, baseline)) is not None]


def tally(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    outside = [row["figure"] for row in rows if row["verdict"].endswith("(outside noise)")]
    return {"verdicts": counts, "outside_noise_worse": outside, "all_within_noise_or_better": not outside}


def _num(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def _correctness(jw: dict) -> str:
    drains = ("drain_sync", "drain_callback", "drain_batch")
    lost = sum((jw.get(m) or {}).get("lost_total") or 0 for m in drains)
    twice = sum((jw.get(m) or {}).get("dispatched_twice_total") or 0 for m in drains)
    return f"{lost} / {twice}"


def table(result: dict) -> str:
    b = result["baseline"]
    runs = result["meta"]["runs"]
    cur = b["current"]
    lines = [
        f"baseline {b['ref']} = {b['sha'][:12]} ({b['worktree']}); current = {cur['root']}"
        f" (HEAD {(cur['head'] or '?')[:12]}"
        + (f", {len(cur['uncommitted'])} uncommitted change(s) in app/, alembic/, pyproject.toml)"
           if cur["uncommitted"] else ")"),
        f"alternating: the current side first in odd rounds, the baseline first in even ones; median of {runs} "
        f"run(s) per side; noise = max(5 %, the larger (max − min) ÷ median of the two sides' runs)",
        "",
        f"{'figure':44s}{'current':>10s}{'baseline':>10s}{'cur/base':>10s}{'noise':>9s}  verdict",
    ]
    single = False
    for row in b["figures"]:
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.3f}"
        noise = "—" if row["noise"] is None else f"±{row['noise'] * 100:.0f} %"
        if row["noise"] is not None and len(row["current_runs"]) == len(row["baseline_runs"]) == 1:
            noise, single = noise + "*", True
        else:
            noise += " "
        lines.append(f"{row['label']:44s}{_num(row['current']):>10s}{_num(row['baseline']):>10s}{ratio:>10s}"
                     f"{noise:>9s}  {row['verdict']}")
    lines.append(f"{'drains: lost / dispatched twice (all runs)':44s}{_correctness(result['jobwire']):>10s}"
                 f"{_correctness(b['jobwire']):>10s}")
    for name, cc in (("current", result["jobwire"].get("claim_cost")), ("baseline", b["jobwire"].get("claim_cost"))):
        if cc and "error" in cc:
            lines.append(f"claim cost of the {name} side failed: {cc['error'].strip().splitlines()[-1]}")
    if single:
        lines.append("* one run per side: no spread, the band is the 5 % floor alone (two runs of the same code "
                     "differ by more here)")
    s = b["summary"]
    lines.append("")
    lines.append(f"{len(b['figures'])} figures: " + ", ".join(f"{n} {v}" for v, n in sorted(s["verdicts"].items())))
    if s["outside_noise_worse"]:
        lines.append("outside noise, worse than the baseline: " + ", ".join(s["outside_noise_worse"]))
    deps = b["dependencies"]
    if not deps["same"]:
        lines.append(f"the baseline's pyproject.toml asks for other dependencies (only baseline: "
                     f"{deps['only_baseline']}; only current: {deps['only_current']}); both ran on this venv")
    if deps["baseline_unsatisfied_here"]:
        lines.append(f"this venv does not satisfy the baseline's {deps['baseline_unsatisfied_here']}")
    lines.append("peers: skipped with --baseline")
    return "\n".join(lines)
