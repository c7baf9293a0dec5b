"""The scale steps' bookkeeping, without a database: the options and --only names, the targets
and the table, a "with" run that pruned nothing, pg_waldump's summary. (The steps themselves run
in tests/bench/test_bench_quick.py, marker `cluster`.)"""

from __future__ import annotations

import pytest

from bench import report
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
    assert set(SCALE_STEPS) == {"counts", "saturation", "drain_pruning", "claim_history", "flow", "events"}
    with pytest.raises(SystemExit):
        parse_args(["--only", "counts", "--baseline", "HEAD"])


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
    assert [(t["value"], t["met"]) for t in scale] == [(2.0, True), (12.0, False), (None, None), (1.05, True)]
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
