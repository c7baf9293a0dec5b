"""The scale steps' bookkeeping, without a database: the options and --only names, the targets
and the table, a "with" run that pruned nothing, pg_waldump's summary, the workflows step's
shapes and summary. (The steps themselves run in tests/bench/test_bench_quick.py, marker
`cluster`.)"""

from __future__ import annotations

import pytest

from bench import report, workflows
from bench.cli import SCALE_STEPS, parse_args
from bench.drain_pruning import summarise
from bench.pgcost import parse_waldump, per_job


def test_quick_keeps_the_scale_steps_small():
    args = parse_args(["--quick"])
    assert (args.counts_rows, args.prune_rows, args.history_rows) == (20_000, 20_000, 20_000)
    full = parse_args([])
    assert (full.counts_rows, full.prune_rows, full.history_rows) == (1_000_000, 1_000_000, 10_000_000)
    assert full.counts_requests == 200


def test_only_names_the_scale_steps_and_baseline_refuses_them():
    args = parse_args(["--only", "counts,drain_pruning,claim_history"])
    assert args.only == ["counts", "drain_pruning", "claim_history"] and args.skip_peers
    assert set(SCALE_STEPS) == {"counts", "saturation", "drain_pruning", "claim_history", "flow", "events",
                                "workflows", "dashboard", "two_nodes"}
    with pytest.raises(SystemExit):
        parse_args(["--only", "counts", "--baseline", "HEAD"])
    assert parse_args(["--only", "workflows", "--runs", "3"]).only == ["workflows"]
    with pytest.raises(SystemExit):
        parse_args(["--only", "workflows", "--baseline", "HEAD"])


def test_workflow_shapes_fit_the_api():
    """1 → 1,000 → 1 in two calls of at most 1,000 jobs (the root first, the final last, depending on
    every child); as many independent jobs in as many calls; a root and 10,000 children in 11."""
    calls = workflows.fan_calls("q")
    jobs = [j for c in calls for j in c]
    assert [len(c) for c in calls] == [1000, 2] and len(jobs) == 1002
    assert jobs[0]["ref"] == "root" and "depends_on" not in jobs[0]
    assert all(j["depends_on"] == ["root"] for j in jobs[1:-1])
    assert jobs[-1]["ref"] == "final" and jobs[-1]["depends_on"] == [f"c{i}" for i in range(1, 1001)]
    assert len({j["ref"] for j in jobs}) == 1002 and all(j["queue"] == "q" for j in jobs)
    assert [len(c) for c in workflows.independent_calls("q", 1002)] == [1000, 2]
    release = workflows.release_calls("q", 10_000)
    assert len(release) == 11 and sum(map(len, release)) == 10_001 and release[0][0]["ref"] == "root"
    assert all(j["depends_on"] == ["root"] for c in release for j in c[1 if c is release[0] else 0:])


def _side(jobs_per_s):
    return {"jobs_per_s": jobs_per_s, "lost": 0, "dispatched_twice": 0}


def test_workflows_summary():
    by_side = {"independent": [{"run": r, "jobs_per_s": v, "repeats": [_side(v), _side(v)]}
                                for r, v in ((1, 1000.0), (2, 1200.0), (3, 800.0))],
               "workflow": [{"run": r, "jobs_per_s": v, "repeats": [_side(v), _side(v)]}
                            for r, v in ((1, 900.0), (2, 600.0), (3, 800.0))]}
    releases = [{"db_ms": ms, "transaction_ms": ms + 2} for ms in (900.0, 1500.0, 1100.0)]
    out = workflows.summarise(by_side, releases, 10_000, 2)
    assert out["independent"]["jobs_per_s"] == 1000.0 and out["workflow"]["jobs_per_s"] == 800.0
    assert out["ratio_workflow_to_independent"] == 0.8
    assert out["pair_ratios"] == [0.9, 0.9, 0.5, 0.5, 1.0, 1.0]
    assert out["release_10000_children_db_ms"] == out["release"]["db_ms"] == 1100.0
    assert out["release"]["transaction_ms"] == 1102.0 and out["lost_total"] == 0


def test_auto_explain_notices_grouped_by_statement():
    notices = [f"duration: {ms} ms  plan:\nQuery Text: UPDATE job_workflows x\n    SET counts = 1\n"
               "Update on job_workflows x" for ms in (0.1, 0.3, 0.2)]
    notices += ["duration: 5.0 ms  plan:\nQuery Text: WITH u AS (\nUpdate on job_executions e", "no duration here"]
    groups = workflows.group_nested(notices)
    assert [(g["calls"], g["total_ms"], g["max_ms"]) for g in groups] == [(1, 5.0, 5.0), (3, 0.6, 0.3)]
    assert groups[1]["statement"].startswith("UPDATE job_workflows x") and "0.3 ms" in groups[1]["plan_of_largest"]


def _run(side, jobs_per_s, pruned):
    return {"side": side, "jobs_per_s": jobs_per_s, "pruned_during_drain": pruned, "lost": 0, "dispatched_twice": 0}


def test_a_with_run_that_pruned_nothing_is_left_out_and_said():
    by_side = {"with": [_run("with", 900, 5000), _run("with", 2000, 0), _run("with", 880, 4000)],
               "without": [_run("without", 1000, 0), _run("without", 1000, 0), _run("without", 1100, 0)]}
    out = summarise(by_side, {}, 20_000, 1_000_000)
    assert out["with"]["jobs_per_s"] == 890  # the median of the two that pruned
    assert out["without"]["jobs_per_s"] == 1000
    assert out["pair_ratios"] == [0.9, None, 0.8]
    assert out["ratio_with_to_without"] == 0.85  # the median of the pairs that pruned, not 890 / 1000
    assert out["with_runs_pruning_nothing"] == 1 and "deleted nothing" in out["note"]
    none = summarise({"with": [_run("with", 900, 0)], "without": [_run("without", 1000, 0)]}, {}, 1000, 20_000)
    assert none["ratio_with_to_without"] is None and none["with"]["jobs_per_s"] is None


def test_scale_targets_and_table():
    jw = {
        "counts": {"rows": 1_000_000, "requests": 200, "ratio_history_to_empty": {"queues": 1.0, "metrics": 1.1},
                   "same_answer": True, "queues_listed": 10,
                   "history": {"queues": {"p50_ms": 2.0, "p95_ms": 3.0, "max_ms": 9.0},
                               "metrics": {"p50_ms": 12.0, "p95_ms": 13.0, "max_ms": 19.0}},
                   "empty": {"queues": {"p50_ms": 2.0, "p95_ms": 3.0, "max_ms": 9.0},
                             "metrics": {"p50_ms": 11.0, "p95_ms": 13.0, "max_ms": 19.0}}},
        "claim_history": {"history_rows": 10_000_000, "batch": 64, "backlog": 1000, "ratio_large_to_small": 1.05,
                          "sizes": {"0": {"median_ms": 3.0, "p95_ms": 4.0},
                                    "10000000": {"median_ms": 3.15, "p95_ms": 4.1}}},
    }
    result = {"jobwire": jw, "peers": {"skipped": True}, "ratios": {k: None for k in report.ratios(
        {"jobwire": {}, "peers": {}})}, "meta": {"runs": 3, "jobs": 20_000, "prune_rows": 1_000_000}}
    result["targets"] = report.targets(result)
    scale = [t for t in result["targets"] if t["group"] == report.SCALE]
    assert [(t["value"], t["met"]) for t in scale] == [(2.0, True), (12.0, False), (None, None), (1.05, True),
                                                       (None, None)]
    assert "1,000,000 finished rows" in scale[0]["target"] and "10,000,000 rows of history" in scale[3]["target"]
    text = report.table(result)
    assert "GET /v1/queues p50 / p95 / max" in text and "NOT met" in text and "targets (issue 7)" not in text


WALDUMP = """\
WAL statistics between 0/1AF5820 and 0/2A76180:
Type                                           N      (%)          Record size      (%)             FPI size      (%)        Combined size      (%)
----                                           -      ---          -----------      ---             --------      ---        -------------      ---
Transaction/COMMIT                             1 (  0.00)                   34 (  0.00)                    0 (  0.00)                   34 (  0.00)
Heap/INSERT                                99166 ( 49.51)              9123272 ( 57.71)                 8192 (100.00)              9131464 ( 57.71)
Btree/INSERT_LEAF                          99727 ( 49.80)              6382528 ( 40.38)                    0 (  0.00)              6382528 ( 40.38)
                                        --------                      --------                      --------                      --------
Total                                     198894                      15505834 [100.00%]                8192 [0.05%]              15514026 [100%]
"""  # noqa: E501 (pg_waldump's own line width)


def test_waldump_summary_and_per_job_figures():
    parsed = parse_waldump(WALDUMP)
    assert (parsed["records"], parsed["record_bytes"], parsed["fpi_bytes"], parsed["combined_bytes"]) == (
        198894, 15505834, 8192, 15514026)
    assert [k["kind"] for k in parsed["largest"]] == ["Heap/INSERT", "Btree/INSERT_LEAF", "Transaction/COMMIT"]
    phases = {"enqueue": {"seconds": 1.0, "postgres_cpu_s": 0.5, "jobwire_cpu_s": 0.4, "handler_cpu_s": 0.0,
                          "wal_bytes": 2000, "waldump": parsed},
              "drain": {"seconds": 2.0, "postgres_cpu_s": 1.5, "jobwire_cpu_s": 1.0, "handler_cpu_s": 0.2,
                        "wal_bytes": 8000, "waldump": parsed}}
    f = per_job(phases, ("enqueue", "drain"), 1000)
    assert f["postgres_cpu_s_per_1000_jobs"] == 2.0 and f["wal_bytes_per_job"] == 10.0
    assert f["wal_fpi_share"] == round(2 * 8192 / (2 * 15514026), 3)
    assert per_job(phases, ("drain",), 1000)["jobwire_cpu_s_per_1000_jobs"] == 1.0


def test_the_dashboard_target_is_its_slowest_page_and_none_when_a_page_failed():
    page = {"p50_ms": 40.0, "status": 200}
    step = {"rows": 10_000_000, "pages": {"nav Overview": page}, "slowest": {"page": "nav Overview", "p50_ms": 40.0},
            "not_200": {}}
    result = {"jobwire": {"dashboard": step}, "meta": {}}
    (target,) = [t for t in report.scale_targets(result) if "dashboard" in t[0]]
    assert target[1:] == (40.0, "<=", 100.0) and "10,000,000 rows" in target[0]
    step["not_200"] = {"nav Overview": 500}
    (target,) = [t for t in report.scale_targets(result) if "dashboard" in t[0]]
    assert target[1] is None
