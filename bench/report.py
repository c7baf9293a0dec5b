"""The summary: Jobwire's figures, the peers' and PostgreSQL's beside them, the ratios, and the
targets (issue 7's, the operations issue's counts and scale, and issue 26's) each marked met or not."""

from __future__ import annotations

from typing import Any


def _get(doc: dict | None, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def ratios(result: dict) -> dict[str, float | None]:
    jw, peers = result["jobwire"], result["peers"]
    sync = _get(jw, "drain_sync", "jobs_per_s")
    return {
        "drain_sync_vs_pgqueuer_default": _ratio(sync, _get(peers, "pgqueuer", "drain_default", "jobs_per_s")),
        "drain_sync_vs_pgqueuer_tuned": _ratio(sync, _get(peers, "pgqueuer", "drain_tuned", "jobs_per_s")),
        "drain_sync_vs_procrastinate_c20": _ratio(sync, _get(peers, "procrastinate", "drain_c20", "jobs_per_s")),
        "drain_sync_vs_postgres_L1": _ratio(sync, _get(peers, "postgres", "L1", "jobs_per_s")),
        "drain_sync_vs_postgres_L50": _ratio(sync, _get(peers, "postgres", "L50", "jobs_per_s")),
        "drain_callback_vs_drain_sync": _ratio(_get(jw, "drain_callback", "jobs_per_s"), sync),
        "drain_batch_vs_pgqueuer_tuned": _ratio(_get(jw, "drain_batch", "jobs_per_s"),
                                                _get(peers, "pgqueuer", "drain_tuned", "jobs_per_s")),
        "enqueue_single_vs_pgqueuer": _ratio(_get(jw, "enqueue_single", "jobs_per_s"),
                                             _get(peers, "pgqueuer", "enqueue_single", "jobs_per_s")),
        "enqueue_single_vs_procrastinate": _ratio(_get(jw, "enqueue_single", "jobs_per_s"),
                                                  _get(peers, "procrastinate", "enqueue_single", "jobs_per_s")),
        "enqueue_batch_vs_pgqueuer": _ratio(_get(jw, "enqueue_batch", "jobs_per_s"),
                                            _get(peers, "pgqueuer", "enqueue_batch", "jobs_per_s")),
        "enqueue_batch_vs_procrastinate": _ratio(_get(jw, "enqueue_batch", "jobs_per_s"),
                                                 _get(peers, "procrastinate", "enqueue_batch", "jobs_per_s")),
    }


def _rss_jobs(jw: dict) -> int:
    return (jw.get("drain_rss") or {}).get("jobs") or (jw.get("drain_sync") or {}).get("runs", [{}])[0].get("jobs", 0)


def _rss_peak(jw: dict) -> float | None:
    return (jw.get("drain_rss") or {}).get("peak_rss_mb") or jw.get("peak_rss_mb")


ISSUE_7 = "issue 7"
SCALE = "operations: counts and scale"
ISSUE_26 = "issue 26: performance II"
# WAL bytes per job of the sync drain (enqueue + drain) at the commit issue 26 started from,
# 61bc129: `python -m bench --only drain_sync --baseline 61bc129` (bench/README.md). WAL is
# counted, not timed, so a figure of another run holds as the bound's base.
ISSUE_26_BASE_WAL_PER_JOB = 5318.0


def _size(result: dict, step: str, key: str, meta_key: str) -> int:
    return _get(result, "jobwire", step, key) or _get(result, "meta", meta_key) or 0


def scale_targets(result: dict) -> list[tuple[str, Any, str, float]]:
    jw = result["jobwire"]
    counts_rows = _size(result, "counts", "rows", "counts_rows")
    prune_rows = _size(result, "drain_pruning", "history_rows", "prune_rows")
    jobs = _size(result, "drain_pruning", "jobs", "jobs")
    history_rows = _size(result, "claim_history", "history_rows", "history_rows")
    return [
        (f"GET /v1/queues p50 ≤ 10 ms, {counts_rows:,} finished rows",
         _get(jw, "counts", "history", "queues", "p50_ms"),
         "<=", 10.0),
        (f"GET /metrics p50 ≤ 10 ms, {counts_rows:,} finished rows", _get(jw, "counts", "history", "metrics", "p50_ms"),
         "<=", 10.0),
        (f"drain of {jobs:,} while pruning {prune_rows:,} ≥ 0.8× without",
         _get(jw, "drain_pruning", "ratio_with_to_without"), ">=", 0.8),
        (f"claim with {history_rows:,} rows of history ≤ 1.2× none",
         _get(jw, "claim_history", "ratio_large_to_small"), "<=", 1.2),
        (f"slowest dashboard page p50 ≤ 100 ms, {_size(result, 'dashboard', 'rows', 'history_rows'):,} rows",
         _dashboard_p50(jw), "<=", 100.0),
    ]


def issue_26_targets(result: dict) -> list[tuple[str, Any, str, float]]:
    jw, r = result["jobwire"], result["ratios"]
    wal = _get(jw, "drain_sync", "wal_bytes_per_job")
    return [
        ("end-to-end sync ≥ 1.5× PgQueuer default drain", r["drain_sync_vs_pgqueuer_default"], ">=", 1.5),
        ("end-to-end sync ≥ 0.6× PgQueuer tuned (4 × 50)", r["drain_sync_vs_pgqueuer_tuned"], ">=", 0.6),
        ("end-to-end, batches of 50 ≥ 1.0× PgQueuer tuned (4 × 50)", r["drain_batch_vs_pgqueuer_tuned"], ">=", 1.0),
        ("end-to-end callback ≥ 0.6× Jobwire sync", r["drain_callback_vs_drain_sync"], ">=", 0.6),
        ("single enqueue (16 clients) ≥ 1.2× PgQueuer", r["enqueue_single_vs_pgqueuer"], ">=", 1.2),
        ("batch enqueue (return=minimal) ≥ 0.6× PgQueuer", r["enqueue_batch_vs_pgqueuer"], ">=", 0.6),
        ("idle latency p50 ≤ 2.5 ms", _get(jw, "idle_latency", "p50_ms"), "<=", 2.5),
        ("idle latency p99 ≤ 8 ms", _get(jw, "idle_latency", "p99_ms"), "<=", 8.0),
        (f"WAL per job, sync drain ≤ 0.6× {ISSUE_26_BASE_WAL_PER_JOB:,.0f} B (61bc129)",
         None if wal is None else round(wal / ISSUE_26_BASE_WAL_PER_JOB, 3), "<=", 0.6),
        ("two nodes' drain ≥ 0.9× one node's", _get(jw, "two_nodes", "ratio_two_to_one"), ">=", 0.9),
    ]


def _dashboard_p50(jw: dict) -> float | None:
    """The slowest page's p50, none when a page did not answer 200 (its time says nothing)."""
    step = jw.get("dashboard")
    if not step or step.get("not_200"):
        return None
    return _get(step, "slowest", "p50_ms")


def targets(result: dict) -> list[dict[str, Any]]:
    jw, r = result["jobwire"], result["ratios"]
    rows = [
        ("end-to-end sync ≥ 1.0× PgQueuer default drain", r["drain_sync_vs_pgqueuer_default"], ">=", 1.0),
        ("end-to-end sync ≥ 9× Procrastinate (c20) drain", r["drain_sync_vs_procrastinate_c20"], ">=", 9.0),
        ("end-to-end callback ≥ 0.5× Jobwire sync", r["drain_callback_vs_drain_sync"], ">=", 0.5),
        ("single enqueue (16 clients) ≥ 1.0× PgQueuer", r["enqueue_single_vs_pgqueuer"], ">=", 1.0),
        ("batch enqueue ≥ 0.5× PgQueuer", r["enqueue_batch_vs_pgqueuer"], ">=", 0.5),
        ("idle latency p50 ≤ 5 ms", _get(jw, "idle_latency", "p50_ms"), "<=", 5.0),
        ("idle latency p99 ≤ 25 ms", _get(jw, "idle_latency", "p99_ms"), "<=", 25.0),
        ("claim cost at 1M rows ≤ 1.5× at 1k", _get(jw, "claim_cost", "ratio_large_to_small"), "<=", 1.5),
        (f"peak RSS while draining {_rss_jobs(jw):,} ≤ 200 MB", _rss_peak(jw), "<=", 200.0),
    ]
    out = []
    for group, group_rows in ((ISSUE_7, rows), (SCALE, scale_targets(result)), (ISSUE_26, issue_26_targets(result))):
        for name, value, op, bound in group_rows:
            met = None if value is None else (value >= bound if op == ">=" else value <= bound)
            out.append({"target": name, "value": value, "bound": bound, "met": met, "group": group})
    return out


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)


USUAL = ("enqueue_single", "enqueue_batch", "drain_sync", "drain_callback", "drain_batch", "idle_latency", "claim_cost",
         "drain_rss")


def table(result: dict) -> str:
    jw, peers = result["jobwire"], result["peers"]
    if not any(jw.get(k) for k in USUAL) and peers.get("skipped"):  # --only with scale steps alone
        return "\n".join([f"scale steps (median of {result['meta']['runs']} where repeated)",
                           *scale_table(jw), *_targets(result, (SCALE, ISSUE_26))])
    pgq, proc, pg = (peers.get(k) for k in ("pgqueuer", "procrastinate", "postgres"))
    lines = [
        f"{'measure (median of ' + str(result['meta']['runs']) + ')':48s}{'Jobwire':>12s}{'PgQueuer':>12s}"
        f"{'× PgQ':>8s}{'Procrast.':>12s}{'× Proc':>8s}",
    ]

    def row(label: str, mine: Any, p: Any = None, q: Any = None, digits: int = 0) -> None:
        lines.append(f"{label:48s}{_fmt(mine, digits):>12s}{_fmt(p, digits):>12s}{_fmt(_ratio(mine, p), 2):>8s}"
                     f"{_fmt(q, digits):>12s}{_fmt(_ratio(mine, q), 2):>8s}")

    row("enqueue, single, 16 clients (jobs/s)", _get(jw, "enqueue_single", "jobs_per_s"),
        _get(pgq, "enqueue_single", "jobs_per_s"), _get(proc, "enqueue_single", "jobs_per_s"))
    row("enqueue, batch of 1,000 (jobs/s)", _get(jw, "enqueue_batch", "jobs_per_s"),
        _get(pgq, "enqueue_batch", "jobs_per_s"), _get(proc, "enqueue_batch", "jobs_per_s"))
    row("end-to-end, sync 200 (jobs/s) vs default", _get(jw, "drain_sync", "jobs_per_s"),
        _get(pgq, "drain_default", "jobs_per_s"), _get(proc, "drain_c20", "jobs_per_s"))
    row("end-to-end, sync 200 (jobs/s) vs PgQ tuned", _get(jw, "drain_sync", "jobs_per_s"),
        _get(pgq, "drain_tuned", "jobs_per_s"))
    row("end-to-end, 202 + callback (jobs/s)", _get(jw, "drain_callback", "jobs_per_s"),
        _get(pgq, "drain_default", "jobs_per_s"), _get(proc, "drain_c20", "jobs_per_s"))
    row("end-to-end, batches of 50 (jobs/s) vs PgQ tuned", _get(jw, "drain_batch", "jobs_per_s"),
        _get(pgq, "drain_tuned", "jobs_per_s"))
    lines.append("")
    lat = jw.get("idle_latency") or {}
    lines.append(f"{'idle latency p50 / p95 / p99 (ms)':48s}{_fmt(lat.get('p50_ms'), 1)} / "
                 f"{_fmt(lat.get('p95_ms'), 1)} / {_fmt(lat.get('p99_ms'), 1)}")
    lines.append(f"{'peak RSS of jobwire serve, drains of N (MB)':48s}{_fmt(jw.get('peak_rss_mb'), 1)}")
    if jw.get("drain_rss"):
        d = jw["drain_rss"]
        label = f"peak RSS, one sync drain of {d['jobs']:,} (MB)"
        lines.append(f"{label:48s}{_fmt(d['peak_rss_mb'], 1)}"
                     f"  ({_fmt(d['jobs_per_s'])} jobs/s, lost {d['lost']}, twice {d['dispatched_twice']})")
    cc = jw.get("claim_cost") or {}
    sizes = cc.get("sizes") or {}
    if sizes:
        small, large = (sizes[k] for k in sorted(sizes, key=int)[:: len(sizes) - 1])
        label = f"claim of {cc['batch']}, median ms: {small['rows']:,} / {large['rows']:,} rows"
        lines.append(f"{label:48s}{_fmt(small['median_ms'], 2)} / {_fmt(large['median_ms'], 2)}"
                     f"  (× {_fmt(cc.get('ratio_large_to_small'), 2)})")
    lost = sum(_get(jw, m, "lost_total") or 0 for m in ("drain_sync", "drain_callback", "drain_batch"))
    twice = sum(_get(jw, m, "dispatched_twice_total") or 0 for m in ("drain_sync", "drain_callback", "drain_batch"))
    lines.append(f"{'drains: lost / dispatched twice (all runs)':48s}{lost} / {twice}")
    if pg:
        lines.append("")
        sync = _get(jw, "drain_sync", "jobs_per_s")
        for name, label in (("L1", "PostgreSQL limit L1: claim 1 + complete 1, 16 cl."),
                            ("L50", "PostgreSQL limit L50: claim 50 + bulk complete, 4 cl.")):
            lines.append(f"{label:52s}{_fmt(_get(pg, name, 'jobs_per_s')):>10s} jobs/s"
                         f"  (Jobwire sync = {_fmt(_ratio(sync, _get(pg, name, 'jobs_per_s')), 2)}×)")
    lines.extend(scale_table(jw))
    has_scale = any(jw.get(k) for k in ("counts", "drain_pruning", "claim_history", "saturation", "dashboard"))
    lines.extend(_targets(result, (ISSUE_7, SCALE, ISSUE_26) if has_scale else (ISSUE_7, ISSUE_26)))
    return "\n".join(lines)


def _targets(result: dict, groups: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    for group in groups:
        lines.append("")
        lines.append(f"targets ({group}):")
        for t in result["targets"]:
            if t.get("group", ISSUE_7) == group:
                mark = {True: "met", False: "NOT met", None: "n/a"}[t["met"]]
                lines.append(f"  {t['target']:58s}{_fmt(t['value'], 2):>10s}  {mark}")
    return lines


def scale_table(jw: dict) -> list[str]:
    """The scale steps' lines (those that ran)."""
    lines: list[str] = []
    counts = jw.get("counts")
    if counts:
        lines += ["", f"{'counts: ' + format(counts['rows'], ',') + ' finished rows vs none':48s}"
                      f"{'history':>22s}{'empty':>22s}{'× p50':>8s}"]
        for endpoint, label in (("queues", "GET /v1/queues"), ("metrics", "GET /metrics")):
            h, e = counts["history"][endpoint], counts["empty"][endpoint]
            lines.append(f"{'  ' + label + ' p50 / p95 / max (ms)':48s}"
                         f"{_fmt(h['p50_ms'], 2) + ' / ' + _fmt(h['p95_ms'], 2) + ' / ' + _fmt(h['max_ms'], 1):>22s}"
                         f"{_fmt(e['p50_ms'], 2) + ' / ' + _fmt(e['p95_ms'], 2) + ' / ' + _fmt(e['max_ms'], 1):>22s}"
                         f"{_fmt(counts['ratio_history_to_empty'][endpoint], 2):>8s}")
        lines.append(f"{'  same answer on both / queues listed':48s}{str(counts['same_answer']):>22s}"
                     f"{counts['queues_listed']:>22d}")
    dp = jw.get("drain_pruning")
    if dp:
        title = f"drain of {dp['jobs']:,}, pruner on {dp['history_rows']:,} old rows"
        lines += ["", f"{title:48s}"
                      f"{'with':>12s}{'without':>12s}{'× with':>8s}"]
        lines.append(f"{'  sync drain (jobs/s medians; × median of pairs)':48s}{_fmt(dp['with']['jobs_per_s']):>12s}"
                     f"{_fmt(dp['without']['jobs_per_s']):>12s}{_fmt(dp['ratio_with_to_without'], 2):>8s}")
        pairs = ", ".join(_fmt(x, 2) for x in dp["pair_ratios"])
        pruned = ", ".join(_fmt(x) for x in dp["with"]["pruned_during_drain"])
        lines.append(f"{'  pair by pair (with ÷ without)':48s}{pairs}")
        lines.append(f"{'  rows the pruner deleted during each drain':48s}{pruned}")
        lines.append(f"{'  lost / dispatched twice (all runs)':48s}{dp['lost_total']} / {dp['dispatched_twice_total']}")
        if dp.get("note"):
            lines.append(f"  NOTE: {dp['note']}")
        alone = dp.get("pruner_alone")
        if alone:
            drop = alone["drop_events_table"]
            lines.append(f"{'  pruner alone: rows/s; PG CPU µs, WAL B a row':48s}{_fmt(alone['pruned_per_s'])}, "
                         f"{_fmt(alone['postgres_cpu_us_per_pruned_row'])}, {_fmt(alone['wal_bytes_per_pruned_row'])}")
            lines.append(f"{'  DROP TABLE job_events: rows; s, WAL B':48s}{_fmt(drop['rows'])}, "
                         f"{_fmt(drop['seconds'], 3)}, {_fmt(drop['wal_bytes'])}")
    ch = jw.get("claim_history")
    if ch:
        small, large = ch["sizes"]["0"], ch["sizes"][str(ch["history_rows"])]
        label = f"claim of {ch['batch']}, median ms: no history / {ch['history_rows']:,}"
        lines += ["", f"{label:48s}{_fmt(small['median_ms'], 2)} / {_fmt(large['median_ms'], 2)}"
                      f"  (× {_fmt(ch['ratio_large_to_small'], 2)}; p95 {_fmt(small['p95_ms'], 2)} / "
                      f"{_fmt(large['p95_ms'], 2)}; backlog {ch['backlog']:,})"]
    sat = jw.get("saturation")
    if sat:
        lines += ["", f"{'PostgreSQL per job (saturation, N=' + format(sat['jobs'], ',') + ')':48s}"
                      f"{'PG CPU s/1k':>12s}{'WAL B/job':>11s}{'FPI':>6s}{'jobs/s/core':>12s}{'WAL MB/s':>10s}"
                      f"{'JW CPU s/1k':>12s}"]

        def sat_row(label: str, f: dict) -> None:
            fpi = f.get("wal_fpi_share")
            lines.append(f"{'  ' + label:48s}{_fmt(f.get('postgres_cpu_s_per_1000_jobs'), 3):>12s}"
                         f"{_fmt(f.get('wal_bytes_per_job')):>11s}{'—' if fpi is None else f'{fpi:.0%}':>6s}"
                         f"{_fmt(f.get('jobs_per_s_per_postgres_core')):>12s}"
                         f"{_fmt(f.get('wal_mb_per_s_per_core'), 1):>10s}"
                         f"{_fmt(f.get('jobwire_cpu_s_per_1000_jobs'), 3):>12s}")

        for mode in ("sync", "callback"):
            m = sat[mode]
            sat_row(f"{mode} ({_fmt(m['jobs_per_s'])} jobs/s): drain alone", m["drain"])
            sat_row(f"{mode}: enqueue (batch) + drain", m["enqueue_drain"])
            sat_row(f"{mode}: enqueue + drain + vacuum", m["enqueue_drain_vacuum"])
        sat_row(f"single enqueue (POST /v1/jobs, {sat['enqueue_single']['jobs']:,} jobs)", sat["enqueue_single"])
    two = jw.get("two_nodes")
    if two:
        lines += ["", f"{'sync drain, two nodes / one (jobs/s medians)':48s}{_fmt(two['two']['jobs_per_s']):>12s}"
                      f"{_fmt(two['one']['jobs_per_s']):>12s}{_fmt(two['ratio_two_to_one'], 2):>8s}",
                  f"{'  lost / dispatched twice (all runs)':48s}{two['lost_total']} / {two['dispatched_twice_total']}"]
    return lines
