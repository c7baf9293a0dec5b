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
