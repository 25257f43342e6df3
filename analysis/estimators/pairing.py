"""How a pooled paired McNemar depends on which rows are paired inside a configuration (issue 19, finding 5).

Methods note. Within each (configuration, execution_group) run, keep the complete pairs of
``exact.paired_mcnemar`` (repeats with both arms valid with an outcome): n pairs, of which s1 succeed
under the first arm and s2 under the second (success: recall >= threshold). Which first-arm row is paired
with which second-arm row is the repeat index in a study; in a reconstruction it is a choice the paper
does not print. Keeping every row and re-pairing them inside each run gives, per run:
- sorted (the i-th best row of one arm with the i-th best of the other): both = min(s1, s2);
- reversed (the i-th best with the i-th worst): both = max(0, s1 + s2 - n);
- random (a uniform permutation inside each run, ``draws`` times from an explicit
  ``numpy.random.Generator``): both ~ hypergeometric(s1 successes, n - s1 failures, s2 drawn);
and b = s1 - both, c = s2 - both, neither = n - s1 - s2 + both. The pooled counts are summed over runs
and tested with ``exact.exact_p``. "As shipped" is the package's own pairing (its repeat index). A pairing
without a discordant pair has no p (not estimable: analysis.estimators.estimable); the ranges are over the
pairings that have one, and are null with the reason when none has.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.estimators.estimable import no_discordant_pairs
from analysis.estimators.exact import McNemarCounts, block_successes, exact_p

NO_PAIRS = "no complete pairs in the runs"


@dataclass(frozen=True, slots=True)
class PairingRange:
    """The pooled exact McNemar under the package's pairing and under re-pairings inside each run."""

    runs: int
    """Runs (configuration, execution_group) with at least one complete pair."""
    pairs: int
    """Complete pairs pooled over the runs (the same under every pairing)."""
    shipped: McNemarCounts
    """The package's own pairing (repeat index)."""
    sorted: McNemarCounts
    """Best with best inside each run (the most concordant pairing)."""
    reversed: McNemarCounts
    """Best with worst inside each run (the least concordant pairing)."""
    random_b_mean: float
    """Mean b (first arm only) over the random pairings (NaN without pairs)."""
    random_c_mean: float
    """Mean c (second arm only) over the random pairings (NaN without pairs)."""
    random_p_median: float
    """Median exact p over the random pairings (NaN without pairs)."""
    random_p_lo: float
    """2.5th percentile of the exact p over the random pairings."""
    random_p_hi: float
    """97.5th percentile of the exact p over the random pairings."""
    p_lo: float
    """Smallest exact p over shipped, sorted, reversed and every random pairing."""
    p_hi: float
    """Largest exact p over the same pairings."""
    draws: int
    """Random pairings drawn."""
    reason: str | None
    """Why the fields are undefined (None when defined)."""


def _p(b: int, c: int) -> float:
    """The exact two-sided p of discordant counts b, c; NaN without a discordant pair (not estimable)."""
    return float("nan") if no_discordant_pairs(b, c) else exact_p(b, c)[0]


def _counts(b: int, c: int, both: int, neither: int) -> McNemarCounts:
    why = no_discordant_pairs(b, c)
    if why:
        nan = float("nan")
        return McNemarCounts(b, c, both, neither, b + c + both + neither, nan, nan, why)
    p, mid = exact_p(b, c)
    return McNemarCounts(b, c, both, neither, b + c + both + neither, p, mid, None)


def _from_both(n: np.ndarray, s1: np.ndarray, s2: np.ndarray, both: np.ndarray) -> McNemarCounts:
    return _counts(int((s1 - both).sum()), int((s2 - both).sum()), int(both.sum()),
                   int((n - s1 - s2 + both).sum()))


def pairing_range(rows: pl.DataFrame, first: str, second: str, *, scenario: str, threshold: float,
                  runs: pl.DataFrame, rng: np.random.Generator, draws: int) -> PairingRange:
    """The pooled McNemar of `first` vs `second` under every pairing of the module note."""
    blocks = block_successes(rows, first, second, scenario=scenario, threshold=threshold, runs=runs)
    complete = blocks.filter(pl.col("first_ok").is_not_null() & pl.col("second_ok").is_not_null())
    per = (complete.group_by("configuration", "execution_group")
           .agg(pl.len().alias("n"), pl.col("first_ok").sum().alias("s1"), pl.col("second_ok").sum().alias("s2"),
                (pl.col("first_ok") & pl.col("second_ok")).sum().alias("both"))
           .sort("configuration", "execution_group"))
    n, s1, s2, both = (per[c].to_numpy().astype(np.int64) for c in ("n", "s1", "s2", "both"))
    if per.height == 0:
        nan = float("nan")
        empty = McNemarCounts(0, 0, 0, 0, 0, nan, nan, NO_PAIRS)
        return PairingRange(0, 0, empty, empty, empty, nan, nan, nan, nan, nan, nan, nan, 0, NO_PAIRS)
    shipped = _from_both(n, s1, s2, both)
    srt = _from_both(n, s1, s2, np.minimum(s1, s2))
    rev = _from_both(n, s1, s2, np.maximum(0, s1 + s2 - n))
    drawn = rng.hypergeometric(np.broadcast_to(s1, (draws, s1.size)), np.broadcast_to(n - s1, (draws, n.size)),
                               np.broadcast_to(s2, (draws, s2.size)))
    b = (s1 - drawn).sum(axis=1)
    c = (s2 - drawn).sum(axis=1)
    p_of: dict[tuple[int, int], float] = {}  # draws repeat few (b, c): each exact p is summed once per call
    for key in zip(b.tolist(), c.tolist(), strict=True):
        if key not in p_of:
            p_of[key] = _p(*key)
    ps = np.array([p_of[key] for key in zip(b.tolist(), c.tolist(), strict=True)])
    every = np.concatenate([ps, [shipped.p_value, srt.p_value, rev.p_value]])
    nan = float("nan")
    if np.all(np.isnan(every)):  # no pairing has a discordant pair: no p to range over
        return PairingRange(per.height, int(n.sum()), shipped, srt, rev, float(b.mean()), float(c.mean()),
                            nan, nan, nan, nan, nan, int(draws), shipped.reason)
    # pairings without a discordant pair have no p (not estimable); the range is over those that have one
    defined = ps[~np.isnan(ps)]
    return PairingRange(
        runs=per.height, pairs=int(n.sum()), shipped=shipped, sorted=srt, reversed=rev,
        random_b_mean=float(b.mean()), random_c_mean=float(c.mean()),
        random_p_median=float(np.median(defined)) if defined.size else nan,
        random_p_lo=float(np.percentile(defined, 2.5)) if defined.size else nan,
        random_p_hi=float(np.percentile(defined, 97.5)) if defined.size else nan,
        p_lo=float(np.nanmin(every)), p_hi=float(np.nanmax(every)), draws=int(draws), reason=None)
