"""The benchmark harness works: `python -m bench --quick --skip-peers` runs end to end and
writes every figure, the scale steps' (counts, saturation, drain_pruning, claim_history,
workflows, dashboard) at their --quick sizes included. No speed is asserted (figures depend on the
machine); only that each one was measured, and that the drains lost nothing and dispatched
nothing twice."""

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
    for mode in ("drain_sync", "drain_callback", "drain_batch"):
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
    assert len(result["targets"]) == 24
    assert "Jobwire" in proc.stdout and "targets (issue 7)" in proc.stdout
    assert "targets (operations: counts and scale)" in proc.stdout
    assert "targets (issue 26: performance II)" in proc.stdout
    assert jw["drain_sync"]["wal_bytes_per_job"] > 0
    check_scale_figures(result)


def check_scale_figures(result: dict) -> None:
    """The figures of the scale steps (bench/scale.py) at --quick sizes."""
    jw, meta = result["jobwire"], result["meta"]

    counts = jw["counts"]  # GET /v1/queues and /metrics, history beside none
    assert counts["rows"] == meta["counts_rows"] == 20_000
    assert counts["history"]["fill"]["rows"] == 20_000 and counts["empty"]["fill"]["rows"] == 0
    for side in ("history", "empty"):
        assert counts[side]["fill"]["live_rows"] == 3000
        for endpoint in ("queues", "metrics"):
            f = counts[side][endpoint]
            assert f["requests"] == meta["counts_requests"]
            assert 0 < f["p50_ms"] <= f["p95_ms"] <= f["max_ms"]
        assert "job_executions" in counts[side]["plan"]
    assert counts["ratio_history_to_empty"]["queues"] > 0 and counts["ratio_history_to_empty"]["metrics"] > 0
    assert counts["same_answer"] is True and counts["queues_listed"] == 10  # the live queues, not the history's

    sat = jw["saturation"]  # PostgreSQL CPU and WAL per job
    for mode in ("sync", "callback"):
        assert sat[mode]["lost_total"] == 0 and sat[mode]["dispatched_twice_total"] == 0
        for name in ("drain", "enqueue_drain", "enqueue_drain_vacuum"):
            f = sat[mode][name]
            assert f["wal_bytes_per_job"] > 0, (mode, name, f)
            assert f["postgres_cpu_s_per_1000_jobs"] is not None, (mode, name, f)
        assert sat[mode]["enqueue_drain"]["wal_bytes_per_job"] > sat[mode]["drain"]["wal_bytes_per_job"]
    assert sat["enqueue_single"]["wal_bytes_per_job"] > 0

    dp = jw["drain_pruning"]  # the drain with and without the pruner at work
    assert dp["jobs"] == meta["jobs"] and dp["history_rows"] == meta["prune_rows"] == 20_000
    assert len(dp["with"]["runs"]) == len(dp["without"]["runs"]) == meta["runs"]
    assert dp["without"]["jobs_per_s"] > 0 and dp["without"]["pruned_during_drain"] == [0]
    assert all(r["pruned_before_drain"] > 0 for r in dp["with"]["runs"])  # the pruner was at work
    if dp["with_runs_pruning_nothing"]:  # a drain between two batches: no ratio, and the result says so
        assert "note" in dp
    else:
        assert dp["ratio_with_to_without"] > 0 and dp["with"]["pruned_during_drain"][0] > 0
    assert dp["lost_total"] == 0 and dp["dispatched_twice_total"] == 0
    assert dp["pruner_alone"]["pruned"] > 0 and dp["pruner_alone"]["wal_bytes_per_pruned_row"] > 0

    ch = jw["claim_history"]  # the claim with history beside none
    assert ch["history_rows"] == meta["history_rows"] == 20_000
    assert sorted(int(s) for s in ch["sizes"]) == [0, 20_000]
    for size in ch["sizes"].values():
        assert size["median_ms"] > 0
        assert "Update on job_executions" in "\n".join(size["explain"])
    assert ch["ratio_large_to_small"] > 0

    wf = jw["workflows"]  # 1 → 1,000 → 1 beside 1,002 independent jobs; a parent's children released
    for side in ("independent", "workflow"):
        (run,) = wf[side]["runs"]
        (rep,) = run["repeats"]
        assert rep["jobs"] == rep["succeeded"] == rep["handler_distinct"] == 1002 and rep["jobs_per_s"] > 0
    assert wf["workflow"]["runs"][0]["repeats"][0]["workflow_state"] == "SUCCEEDED"
    assert wf["ratio_workflow_to_independent"] > 0
    assert wf["lost_total"] == 0 and wf["dispatched_twice_total"] == 0
    assert wf["release"]["children"] == 1000 and wf["release_1000_children_db_ms"] > 0
    assert wf["release"]["runs"][0]["children_enqueued"] == 1000
    assert "Trigger jobwire_workflow_transitions" in wf["release_explained"]["explain"]

    dash = jw["dashboard"]  # every page of /ui with the history, each filter showing the rows it matched
    assert dash["rows"] == 20_000 and not dash["not_200"]
    pages = dash["pages"]
    assert {"nav Overview", "nav Executions", "nav Workflows", "executions metadata", "execution (history)",
            "executions second page"} <= set(pages)
    assert pages["executions metadata"]["execution_rows"] == 50  # 100 of tenant-7: the first page of 50
    assert pages["executions idempotency_key"]["execution_rows"] == 1
    assert pages["executions state=DEAD_LETTER"]["execution_rows"] == 50
    assert all(p["p50_ms"] > 0 for p in pages.values())

    two = jw["two_nodes"]  # the sync drain with two nodes on one database beside one
    for side in ("one", "two"):
        (run,) = two[side]["runs"]
        assert run["jobs_per_s"] > 0 and run["lost"] == 0 and run["dispatched_twice"] == 0
    assert two["ratio_two_to_one"] > 0 and two["lost_total"] == two["dispatched_twice_total"] == 0
    (target,) = [t for t in result["targets"] if t["target"].startswith("two nodes")]
    assert target["value"] == two["ratio_two_to_one"] and target["met"] in (True, False)

    scale = {t["target"]: t for t in result["targets"] if t["group"] == "operations: counts and scale"}
    assert len(scale) == 5
    for name, t in scale.items():
        if "while pruning" in name and dp["with_runs_pruning_nothing"]:
            assert t["value"] is None and t["met"] is None
        else:
            assert t["value"] is not None and t["met"] in (True, False), t
