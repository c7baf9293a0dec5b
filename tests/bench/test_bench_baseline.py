"""`python -m bench --baseline REF` measures the current checkout and REF side by side: the
end-to-end run (marker `cluster`) compares HEAD against itself at --quick sizes and checks that
both sides were measured, from their own trees, with a ratio and a verdict for every figure. No
speed is asserted. The verdict rule itself is checked on made-up runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.baseline import Figure, Side, compare_one, order, spread

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {"within noise", "faster", "slower (outside noise)", "smaller", "larger (outside noise)"}


def _head() -> str | None:
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.mark.cluster
def test_quick_run_against_head_compares_every_figure(tmp_path):
    head = _head()
    if head is None:
        pytest.skip("not a git checkout")
    out = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--skip-peers", "--baseline", "HEAD",
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())

    b = result["baseline"]
    assert b["ref"] == "HEAD" and b["sha"] == head
    worktree = Path(b["worktree"])
    assert worktree.is_relative_to(ROOT / ".bench" / "baseline") and (worktree / "app").is_dir()
    # Each side's processes imported its own tree's app/ (not the editable install's for the baseline).
    assert Path(b["isolation"]["app_file"]["baseline"]).is_relative_to(worktree / "app")
    assert Path(b["isolation"]["app_file"]["current"]).is_relative_to(ROOT / "app")
    assert result["peers"]["skipped"] is True

    for jw in (result["jobwire"], b["jobwire"]):  # both sides measured every step
        for step in ("enqueue_single", "enqueue_batch", "drain_sync", "drain_callback"):
            assert jw[step]["jobs_per_s"] > 0
        for mode in ("drain_sync", "drain_callback"):
            assert jw[mode]["lost_total"] == 0 and jw[mode]["dispatched_twice_total"] == 0
        assert jw["idle_latency"]["p50_ms"] > 0 and jw["drain_rss"]["lost"] == 0
        assert jw["claim_cost"]["ratio_large_to_small"] > 0 and len(jw["claim_cost"]["runs"]) == 1
    assert Path(b["jobwire"]["claim_cost"]["app_file"]).is_relative_to(worktree / "app")

    figures = {row["figure"]: row for row in b["figures"]}
    assert set(figures) >= {
        "enqueue_single.jobs_per_s", "enqueue_batch.jobs_per_s", "drain_sync.jobs_per_s",
        "drain_callback.jobs_per_s", "idle_latency.p50_ms", "idle_latency.p99_ms", "drain_sync.peak_rss_mb",
        "drain_rss.jobs_per_s", "drain_rss.peak_rss_mb", "claim_cost.1000.median_ms",
        "claim_cost.20000.median_ms", "claim_cost.ratio_large_to_small"}
    for row in figures.values():
        assert row["current"] > 0 and row["baseline"] > 0, row
        assert row["ratio"] == pytest.approx(row["current"] / row["baseline"], abs=1e-3)
        assert row["noise"] >= 0.05 and row["verdict"] in VERDICTS, row
    assert sum(b["summary"]["verdicts"].values()) == len(figures)
    assert "cur/base" in proc.stdout and "verdict" in proc.stdout


def _rate(values_current, values_baseline, kind="rate"):
    runs = {"current": values_current, "baseline": values_baseline}
    fig = Figure("x", "x", kind, lambda jw: runs[jw["side"]])
    return compare_one(fig, {"side": "current"}, {"side": "baseline"})


def test_noise_is_the_larger_spread_of_the_two_sides_or_5_percent():
    assert spread([90, 100, 110]) == pytest.approx(0.2)
    assert spread([100]) == 0
    row = _rate([100, 101, 102], [95, 100, 115])  # baseline spread 20 %
    assert row["noise"] == pytest.approx(0.2) and row["verdict"] == "within noise"
    assert _rate([104], [100])["verdict"] == "within noise"  # one run each: the 5 % floor
    assert _rate([106], [100])["verdict"] == "faster"
    assert _rate([94], [100])["verdict"] == "slower (outside noise)"


def test_lower_is_better_for_times_and_memory():
    assert _rate([10], [12], "time")["verdict"] == "faster"
    assert _rate([12], [10], "time")["verdict"] == "slower (outside noise)"
    assert _rate([120], [100], "memory")["verdict"] == "larger (outside noise)"
    assert _rate([80], [100], "memory")["verdict"] == "smaller"


def test_a_figure_one_side_lacks_has_no_verdict():
    row = _rate([100], None)
    assert row["verdict"] == "n/a" and row["ratio"] is None


def test_rounds_alternate_which_side_goes_first():
    current, base = Side("current", ROOT), Side("baseline", ROOT / "x", "0" * 40)
    assert [s.name for s in order([current, base], 1)] == ["current", "baseline"]
    assert [s.name for s in order([current, base], 2)] == ["baseline", "current"]
    assert [s.name for s in order([current, base], 3)] == ["current", "baseline"]
