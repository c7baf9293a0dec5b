"""The summary: Jobwire's figures, the peers' and PostgreSQL's beside them, the ratios, and the
targets of issue 7 each marked met or not."""

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
    for name, value, op, bound in rows:
        met = None if value is None else (value >= bound if op == ">=" else value <= bound)
        out.append({"target": name, "value": value, "bound": bound, "met": met})
    return out


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, float | int):
        return f"{value:,.{digits}f}"
    return str(value)


def table(result: dict) -> str:
    jw, peers = result["jobwire"], result["peers"]
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
    lost = sum(_get(jw, m, "lost_total") or 0 for m in ("drain_sync", "drain_callback"))
    twice = sum(_get(jw, m, "dispatched_twice_total") or 0 for m in ("drain_sync", "drain_callback"))
    lines.append(f"{'drains: lost / dispatched twice (all runs)':48s}{lost} / {twice}")
    if pg:
        lines.append("")
        sync = _get(jw, "drain_sync", "jobs_per_s")
        for name, label in (("L1", "PostgreSQL limit L1: claim 1 + complete 1, 16 cl."),
                            ("L50", "PostgreSQL limit L50: claim 50 + bulk complete, 4 cl.")):
            lines.append(f"{label:52s}{_fmt(_get(pg, name, 'jobs_per_s')):>10s} jobs/s"
                         f"  (Jobwire sync = {_fmt(_ratio(sync, _get(pg, name, 'jobs_per_s')), 2)}×)")
    lines.append("")
    lines.append("targets (issue 7):")
    for t in result["targets"]:
        mark = {True: "met", False: "NOT met", None: "n/a"}[t["met"]]
        lines.append(f"  {t['target']:50s}{_fmt(t['value'], 2):>10s}  {mark}")
    return "\n".join(lines)
