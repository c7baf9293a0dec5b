"""Small numeric helpers shared by the measurements."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def median_of(runs: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (p in 0..100)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, round(p / 100 * len(sorted_values) + 0.5 - 1e-9))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarise(runs: list[dict[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """{key: median over runs for each key, "runs": the raw per-run dicts}."""
    out: dict[str, Any] = {k: median_of(runs, k) for k in keys}
    out["runs"] = runs
    return out


def claim_summary(sizes: tuple[int, ...], batch: int, reps: int, times: dict[int, list[float]],
                  plans: dict[int, list[str]], groups: list[dict[int, list[float]]] | None = None) -> dict[str, Any]:
    """The claim-cost figures of `times` (ms per claim at each size); with `groups` (the same
    claims split into the benchmark's runs), each run's medians too, for the noise band."""
    out: dict[str, Any] = {"batch": batch, "repetitions": reps, "interleaved": True, "sizes": {}}
    for size in sizes:
        ordered = sorted(times[size])
        out["sizes"][str(size)] = {
            "rows": size,
            "median_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(percentile(ordered, 95), 3),
            "min_ms": round(ordered[0], 3),
            "explain": plans.get(size, []),
        }
    small, large = (out["sizes"][str(s)]["median_ms"] for s in (sizes[0], sizes[-1]))
    out["ratio_large_to_small"] = round(large / small, 2)
    if groups is not None:
        out["runs"] = []
        for group in groups:
            medians = {str(size): round(statistics.median(group[size]), 3) for size in sizes}
            out["runs"].append({"median_ms": medians, "claims_per_size": len(group[sizes[0]]),
                                "ratio_large_to_small": round(medians[str(sizes[-1])] / medians[str(sizes[0])], 2)})
    return out
