"""The benchmark harness works: `python -m bench --quick --skip-peers` runs end to end and
writes every figure. No speed is asserted (figures depend on the machine); only that each one
was measured, and that the drains lost nothing and dispatched nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_every_figure(tmp_path):
    out = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBWIRE_")}
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--skip-peers", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())

    assert set(result) == {"meta", "jobwire", "peers", "ratios", "targets"}
    assert result["peers"] == {"skipped": True}
    jw = result["jobwire"]
    assert jw["enqueue_single"]["jobs_per_s"] > 0 and jw["enqueue_batch"]["jobs_per_s"] > 0
    for mode in ("drain_sync", "drain_callback"):
        assert jw[mode]["jobs_per_s"] > 0
        assert jw[mode]["lost_total"] == 0 and jw[mode]["dispatched_twice_total"] == 0
        (run,) = jw[mode]["runs"]
        assert run["succeeded"] == run["handler_distinct"] == result["meta"]["jobs"]
    assert 0 < jw["idle_latency"]["p50_ms"] <= jw["idle_latency"]["p95_ms"] <= jw["idle_latency"]["p99_ms"]
    assert jw["peak_rss_mb"] > 0
    assert jw["drain_rss"]["peak_rss_mb"] > 0 and jw["drain_rss"]["lost"] == 0
    sizes = jw["claim_cost"]["sizes"]
    assert sorted(int(s) for s in sizes) == [1000, 20_000]
    for size in sizes.values():
        assert size["median_ms"] > 0
        plans = "\n".join(size["explain"])  # auto_explain: every statement inside jobwire_claim
        assert "Update on job_executions" in plans and "ix_job_executions_claim_all" in plans, plans
    assert jw["claim_cost"]["ratio_large_to_small"] > 0
    assert set(result["ratios"]) >= {"drain_sync_vs_pgqueuer_default", "drain_callback_vs_drain_sync"}
    assert len(result["targets"]) == 9
    assert "Jobwire" in proc.stdout and "targets (issue 7)" in proc.stdout
