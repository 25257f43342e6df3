"""Pearson and Spearman correlation with undefined values as NaN and a reason, never 0.

Shared by the fill and headings estimators, so every module defines "undefined correlation"
the same way (fewer than two units or zero variance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True, slots=True)
class Correlation:
    """Pearson and Spearman correlation of two columns over a named set of units."""

    pearson: float
    """Pearson's r (NaN when undefined)."""
    spearman: float
    """Spearman's rho, average ranks for ties (NaN when undefined)."""
    n: int
    """Units (rows or configurations) entering the correlation."""
    units: tuple[str, ...]
    """Names of those units (configurations), empty for row-level correlations."""
    reason: str | None
    """Why the correlation is undefined, else None."""


def pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, str | None]:
    """Pearson's r with NaN and a reason for n < 2 or zero variance."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size < 2:
        return math.nan, f"fewer than 2 units (n={x.size})"
    for name, v in (("x", x), ("y", y)):
        if np.all(v == v[0]):  # exact test: the centred sum of squares can round to a tiny non-zero
            return math.nan, f"zero variance in {name}"
    dx = x - x.mean()
    dy = y - y.mean()
    # elementwise sums, not BLAS dot: no thread start-up cost on a busy machine
    sxx = float(np.sum(dx * dx))
    syy = float(np.sum(dy * dy))
    r = float(np.sum(dx * dy)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r)), None


def average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank (scipy.stats.rankdata 'average')."""
    s = pl.Series(np.asarray(v, dtype=float))
    return s.rank(method="average").to_numpy().astype(float)


def correlation(x: np.ndarray, y: np.ndarray, units: Sequence[str] = ()) -> Correlation:
    """Pearson and Spearman of x and y (Spearman = Pearson of average ranks)."""
    r, reason_r = pearson(x, y)
    x = np.asarray(x, dtype=float)
    if x.size >= 2:
        rho, reason_s = pearson(average_ranks(x), average_ranks(np.asarray(y, dtype=float)))
    else:
        rho, reason_s = math.nan, reason_r
    reason = reason_r or reason_s
    return Correlation(pearson=r, spearman=rho, n=int(x.size), units=tuple(units), reason=reason)
