"""Shared pieces of the exploratory estimators (fill, headings, carrier, failures, beyond).

Holds the row filters they share (built on analysis.estimators.common) and one correlation
helper, so every module defines "valid row with an outcome" and "undefined correlation" the
same way: NaN with a reason, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.estimators.common import EstimatorError, at_least, outcomes
from analysis.estimators.common import require_columns as _require

EXPLORE_LABEL = "ours, not the paper's"


class ExploreInputError(EstimatorError):
    """An exploratory estimator got input it cannot use; the message names the fix."""


def require_columns(df: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise MissingColumnError naming every missing column."""
    _require(df, tuple(columns), what)


def valid_outcome_rows(rows: pl.DataFrame, scenario: str | None, arms: Sequence[str] | None = None) -> pl.DataFrame:
    """Valid rows of `scenario` (all scenarios when None) with an outcome, plus `recall`
    (the shared population filter of analysis.estimators.common.outcomes), optionally only `arms`."""
    out = outcomes(rows, scenario)
    if arms is not None:
        out = out.filter(pl.col("arm").is_in(list(arms)))
    return out


def recall_at_least(threshold: float) -> pl.Expr:
    """Exact `checks_passed / checks_total >= threshold` (integer arithmetic, no float slack)."""
    return at_least(pl.col("checks_passed"), pl.col("checks_total"), threshold)


def recall_expr() -> pl.Expr:
    """Exact recall of a row: checks_passed / checks_total (null without an outcome)."""
    return (pl.col("checks_passed").cast(pl.Float64) / pl.col("checks_total").cast(pl.Float64)).alias(
        "recall"
    )


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
