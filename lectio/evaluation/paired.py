"""Paired comparison of two rankings' per-query scores: the bootstrap interval of the mean
change, which decides whether a drop (or a gain) is real or noise."""

from __future__ import annotations

from typing import Sequence

import numpy as np


BOOTSTRAP_SAMPLES = 2000


def paired_interval(live: Sequence[dict], candidate: Sequence[dict], metric: str) -> list[float] | None:
    """95 % bootstrap interval of the mean per-query change of `metric` (candidate − live), over
    the queries both scored; None with fewer than two. Seeded: the same reports give the same
    interval, so a gate decision can be reproduced."""
    before = {q["id"]: q.get(metric) for q in live}
    deltas = np.asarray([q[metric] - before[q["id"]] for q in candidate
                         if q.get(metric) is not None and before.get(q["id"]) is not None], dtype=float)
    if len(deltas) < 2:
        return None
    rng = np.random.default_rng(20261201)
    means = deltas[rng.integers(0, len(deltas), size=(BOOTSTRAP_SAMPLES, len(deltas)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]
