"""Hodges–Lehmann estimate of the panel effect with its exact signed-rank interval (ours, not the paper's).

Methods note. The units are the panel's per-configuration paired effects e_1..e_n. The estimate is
the median of the n(n+1)/2 Walsh averages (e_i + e_j)/2, i <= j: the shift that the Wilcoxon
signed-rank statistic centres. The interval inverts the exact signed-rank test: with W's null
distribution on 0..M (M = n(n+1)/2; every sign pattern of the ranks equally likely, counted by
dynamic programming), c is the largest k with P(W <= k) <= alpha/2, and the interval is
[A_(c+1), A_(M-c)] of the sorted Walsh averages A. Its achieved confidence 1 - 2 P(W <= c) is at
least the nominal 1 - alpha (equal only by chance: W is discrete). The interval assumes a continuous,
symmetric distribution of effects; tied effects make it approximate. For n too small to reach the
level (P(W = 0) = 2^-n > alpha/2: n <= 5 at alpha = 0.05) no finite interval exists, and the bounds
are None with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.estimators.common import OURS_LABEL, finite_effects


@dataclass(frozen=True, slots=True)
class HodgesLehmann:
    """Hodges–Lehmann estimate of the panel effect and its exact signed-rank interval (ours)."""

    label: str
    """``ours, not the paper's``."""
    n: int
    """Configurations (the units)."""
    estimate: float
    """Median of the Walsh averages (NaN without configurations)."""
    lo: float | None
    """Lower bound A_(c+1) (None when no finite interval reaches the level)."""
    hi: float | None
    """Upper bound A_(M-c)."""
    nominal: float
    """Requested confidence 1 - alpha."""
    achieved: float | None
    """Exact confidence 1 - 2 P(W <= c) of the interval (>= nominal)."""
    reason: str | None
    """Why the estimate or the interval is undefined, else None."""


def signed_rank_counts(n: int) -> np.ndarray:
    """Number of sign patterns giving each value 0..n(n+1)/2 of the signed-rank statistic W (sum 2^n)."""
    counts = np.zeros(n * (n + 1) // 2 + 1, dtype=object)  # exact integers: 2^n overflows int64 for n > 62
    counts[0] = 1
    top = 0
    for rank in range(1, n + 1):
        counts[rank:top + rank + 1] = counts[rank:top + rank + 1] + counts[0:top + 1]
        top += rank
    return counts


def walsh_averages(effects: np.ndarray) -> np.ndarray:
    """The n(n+1)/2 averages (e_i + e_j)/2, i <= j, sorted."""
    i, j = np.triu_indices(effects.size)
    return np.sort((effects[i] + effects[j]) / 2.0)


def hodges_lehmann(effects: Sequence[float] | np.ndarray, alpha: float) -> HodgesLehmann:
    """Hodges–Lehmann estimate and exact signed-rank interval at level 1 - ``alpha`` (module note)."""
    e = finite_effects(effects)
    n, nominal = int(e.size), 1.0 - alpha
    if n == 0:
        return HodgesLehmann(OURS_LABEL, 0, math.nan, None, None, nominal, None, "no configuration in the panel")
    walsh = walsh_averages(e)
    estimate = float(np.median(walsh))
    counts = signed_rank_counts(n)
    cdf = np.cumsum(counts) / float(2**n)
    below = np.flatnonzero(cdf <= alpha / 2.0)
    if below.size == 0:
        return HodgesLehmann(OURS_LABEL, n, estimate, None, None, nominal, None,
                             f"{n} configurations cannot reach a {nominal:.0%} exact interval "
                             f"(P(W = 0) = 2^-{n} > alpha/2)")
    c = int(below[-1])
    m = walsh.size
    return HodgesLehmann(OURS_LABEL, n, estimate, float(walsh[c]), float(walsh[m - c - 1]), nominal,
                         float(1.0 - 2.0 * cdf[c]), None)
