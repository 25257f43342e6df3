"""Exact paired McNemar test of a recall threshold between two arms (paper 4.3, 4.5).

Methods note. Blocks are (configuration, execution_group, repeat) on one
scenario; an arm succeeds in a block when its valid row's recall is >= the
threshold (compared exactly in integers; `== 1.0` is `>= 1.0`). Over blocks
where both arms have a valid outcome: b = only the first arm succeeds, c = only
the second, plus the concordant counts. With n = b + c and X ~ Bin(n, 1/2):
  p     = min(1, 2 P(X <= min(b, c)))                    (two-sided exact; scipy.stats.binomtest)
  mid-p = min(1, 2 P(X <= min(b, c)) - P(X = min(b, c)))  (Lancaster mid-p; scipy.stats.binom)
With n = 0 (no discordant pair) the test is not estimable: both are NaN with the reason of
analysis.estimators.estimable.no_discordant_pairs (exact_p alone still returns 1); with no blocks
at all they are NaN with a reason.
The missing-partner variants add the blocks where exactly one arm has a valid
outcome, with the absent outcome counted as a failure, or as a success. Pass `runs`
to fix the population; ``runs_planning_both`` gives the runs (configuration,
execution_group) in which both arms were planned (each has at least one row, valid or
not, on the scenario), the population of the paper's secondary comparisons: outside it a
"missing partner" was never run and the variants would count it as a pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from analysis.estimators.common import (
    BLOCK,
    NAN,
    EstimatorError,
    at_least,
    single_outcomes,
    valid_outcome_rows,
)
from analysis.estimators.estimable import no_discordant_pairs

NO_BLOCKS = "no block has both arms' outcomes"


@dataclass(frozen=True, slots=True)
class McNemarCounts:
    """Paired threshold counts and the exact test for one population of blocks."""

    b: int
    """Blocks where only the first arm succeeds."""
    c: int
    """Blocks where only the second arm succeeds."""
    both: int
    """Blocks where both arms succeed (concordant)."""
    neither: int
    """Blocks where neither arm succeeds (concordant)."""
    pairs: int
    """Blocks counted (b + c + both + neither)."""
    p_value: float
    """Two-sided exact binomial p = min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2)."""
    mid_p: float
    """Two-sided mid-p = min(1, 2 P(X <= min(b, c)) - P(X = min(b, c)))."""
    reason: str | None
    """Why p_value/mid_p are NaN (None when defined)."""


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """Exact paired McNemar of `first` against `second` at one threshold."""

    first: str
    """First arm (its lone successes are b)."""
    second: str
    """Second arm (its lone successes are c)."""
    scenario: str
    """Scenario of the blocks."""
    threshold: float
    """Success means recall >= threshold."""
    complete: McNemarCounts
    """Blocks where both arms have a valid outcome."""
    missing_as_failure: McNemarCounts
    """Adds one-arm blocks, the absent outcome counted as a failure."""
    missing_as_success: McNemarCounts
    """Adds one-arm blocks, the absent outcome counted as a success."""
    first_only: int
    """Blocks where only the first arm has a valid outcome."""
    second_only: int
    """Blocks where only the second arm has a valid outcome."""


def exact_p(b: int, c: int) -> tuple[float, float]:
    """Two-sided exact binomial p and Lancaster mid-p for discordant counts b and c (1, 1 when b + c = 0).

    A thin wrapper: p is scipy.stats.binomtest(min(b, c), b + c, 1/2).pvalue (two-sided; at 1/2 the
    doubled tail capped at 1, which is also statsmodels' mcnemar(exact=True)). Neither library offers
    the mid-p, so it is 2 P(X < m) + P(X = m), capped at 1, from scipy.stats.binom's cdf and pmf.
    Callers check no_discordant_pairs first (b + c = 0 is not estimable).
    """
    n, m = b + c, min(b, c)
    if n == 0:
        return 1.0, 1.0
    p = float(stats.binomtest(m, n, 0.5).pvalue)
    mid = float(2.0 * stats.binom.cdf(m - 1, n, 0.5) + stats.binom.pmf(m, n, 0.5))
    return min(1.0, p), min(1.0, mid)


def counts(first_ok: np.ndarray, second_ok: np.ndarray) -> McNemarCounts:
    """McNemar counts and exact test from two aligned boolean success vectors."""
    a, s = np.asarray(first_ok, dtype=bool), np.asarray(second_ok, dtype=bool)
    b, c = int((a & ~s).sum()), int((~a & s).sum())
    both, neither = int((a & s).sum()), int((~a & ~s).sum())
    pairs = b + c + both + neither
    if pairs == 0:
        return McNemarCounts(0, 0, 0, 0, 0, NAN, NAN, NO_BLOCKS)
    none_discordant = no_discordant_pairs(b, c)
    if none_discordant:
        return McNemarCounts(b, c, both, neither, pairs, NAN, NAN, none_discordant)
    p, mid = exact_p(b, c)
    return McNemarCounts(b, c, both, neither, pairs, p, mid, None)


def block_successes(rows: pl.DataFrame, first: str, second: str, *, scenario: str,
                    threshold: float, runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per block with any valid outcome of either arm: first_ok, second_ok (null = missing).

    `runs` (configuration, execution_group), when given, restricts the blocks to those runs.
    """
    if first == second:
        raise EstimatorError(f"both arms are {first!r}; McNemar compares two different arms")
    out = valid_outcome_rows(rows, scenario, [first, second])
    if runs is not None:
        out = out.join(runs.select("configuration", "execution_group"),
                       on=["configuration", "execution_group"], how="semi")
    single_outcomes(out, (*BLOCK, "arm"))
    ok = at_least(pl.col("checks_passed"), pl.col("checks_total"), threshold)

    def arm(code: str, tag: str) -> pl.DataFrame:
        return out.filter(pl.col("arm") == code).select(*BLOCK, ok.alias(tag))
    return arm(first, "first_ok").join(arm(second, "second_ok"), on=BLOCK, how="full",
                                       coalesce=True)


def runs_planning_both(rows: pl.DataFrame, first: str, second: str, *, scenario: str) -> pl.DataFrame:
    """(configuration, execution_group) runs with at least one row of each arm on `scenario`, sorted."""
    sub = rows.filter(pl.col("scenario") == scenario, pl.col("arm").is_in([first, second]))
    return (sub.group_by("configuration", "execution_group").agg(pl.col("arm").n_unique().alias("arms"))
            .filter(pl.col("arms") == 2).select("configuration", "execution_group")
            .sort("configuration", "execution_group"))


def paired_mcnemar(rows: pl.DataFrame, first: str, second: str, *, scenario: str,
                   threshold: float, runs: pl.DataFrame | None = None) -> McNemarResult:
    """Exact paired McNemar of `first` vs `second` at `recall >= threshold` (module note)."""
    blocks = block_successes(rows, first, second, scenario=scenario, threshold=threshold, runs=runs)
    present = blocks.select(
        fp=pl.col("first_ok").is_not_null(), sp=pl.col("second_ok").is_not_null(),
        f0=pl.col("first_ok").fill_null(False), s0=pl.col("second_ok").fill_null(False),
        f1=pl.col("first_ok").fill_null(True), s1=pl.col("second_ok").fill_null(True))
    col = {name: present.get_column(name).to_numpy() for name in present.columns}
    complete = col["fp"] & col["sp"]
    return McNemarResult(
        first=first, second=second, scenario=scenario, threshold=float(threshold),
        complete=counts(col["f0"][complete], col["s0"][complete]),
        missing_as_failure=counts(col["f0"], col["s0"]),
        missing_as_success=counts(col["f1"], col["s1"]),
        first_only=int((col["fp"] & ~col["sp"]).sum()),
        second_only=int((~col["fp"] & col["sp"]).sum()))
