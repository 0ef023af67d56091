"""Step-time statistics. Pure Python so they are testable without torch."""

from __future__ import annotations

import math
from typing import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between order
    statistics (numpy's default), so results match what users compute."""
    if not samples:
        raise ValueError("percentile of no samples")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside 0..100")
    xs = sorted(samples)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50.0)


def mad(samples: Sequence[float]) -> float:
    """Median absolute deviation: a spread that one slow step cannot inflate."""
    m = median(samples)
    return median([abs(x - m) for x in samples])


def summarize(samples_ms: Sequence[float]) -> dict:
    """The `step_time` figures of the manifest, from per-step times in ms."""
    xs = [float(x) for x in samples_ms]
    if not xs:
        raise ValueError("no step times to summarize")
    bad = [x for x in xs if not math.isfinite(x) or x <= 0.0]
    if bad:
        raise ValueError(f"step times must be positive and finite, got {bad[:3]}")
    return {
        "steps": len(xs),
        "median": median(xs),
        "p10": percentile(xs, 10.0),
        "p90": percentile(xs, 90.0),
        "mad": mad(xs),
        "mean": sum(xs) / len(xs),
        "min": min(xs),
        "max": max(xs),
    }
