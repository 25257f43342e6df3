"""Hodges–Lehmann estimate of the panel effect with its signed-rank interval (ours, not the paper's).

Methods note. The units are the panel's per-configuration paired effects e_1..e_n. The estimand is
the pseudo-median of the effects' distribution (its centre of symmetry, if the distribution is
symmetric), not the paper's equal-configuration mean. The estimate is the median of the n(n+1)/2
Walsh averages (e_i + e_j)/2, i <= j: the shift that the Wilcoxon signed-rank statistic centres. It is
found by selection on the sorted effects (O(n log^2 n), never the n^2 averages themselves).

The interval inverts the signed-rank test, as R's ``wilcox.test(conf.int = TRUE)`` does:

- exact (R's default when n < 50 and no effect is 0 or tied): with W's null distribution on 0..M
  (M = n(n+1)/2; every sign pattern of the ranks equally likely, counted by dynamic programming), c is
  the largest k with P(W <= k) <= alpha/2, and the interval is [A_(c+1), A_(M-c)] of the sorted Walsh
  averages A. Its achieved confidence 1 - 2 P(W <= c) is at least the nominal 1 - alpha. For n too
  small to reach the level (2^-n > alpha/2: n <= 5 at alpha = 0.05) there is no interval.
- otherwise (zeros, ties, or n >= 50) the exact null does not hold, and the interval is R's
  ``exact = FALSE, correct = TRUE`` one: the shifts d whose signed-rank z, computed on the non-zero
  e_i - d with the tie-corrected variance n(n+1)(2n+1)/24 - sum(t^3 - t)/48 and a continuity
  correction of 1/2 towards 0, lies within the normal quantiles; each bound is the root of that step
  function between min(e) and max(e) (R: ``uniroot``, tolerance 1e-4; here ``brentq``, 1e-12).
  Its confidence is the nominal one, approximately.

Where the data cannot support the interval (all effects alike, too few configurations) it is not
estimable, with the reason (analysis.estimators.estimable).

Registration: HODGES_LEHMANN_REGISTRATION (below) is the statistic's results.json block ``hodges_lehmann``,
its row of t_beyond_inference and its key-results sentence; analysis/results/registry.py lists it in results.json
order (docs/ADDING_A_STATISTIC.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import optimize, stats

from analysis.estimators.common import OURS_LABEL, finite_effects
from analysis.estimators.estimable import too_few
from analysis.estimators.registration import Block, Estimates, InferenceRow, ResultsBlock

EXACT_BELOW = 50
"""The exact interval is used below this many configurations (R's ``wilcox.test`` default), and only
without zeros and ties; from it on the normal approximation is (the exact null counts grow as n^3)."""

ESTIMAND = "pseudo-median of the configuration effects (their centre, if symmetric)"
"""What the estimate estimates, in words (results.json ``estimand``; the report names it)."""

EXACT = "exact signed-rank"
NORMAL = "normal approximation (zero and tie corrected, continuity corrected; R wilcox.test exact = FALSE)"


@dataclass(frozen=True, slots=True)
class HodgesLehmann:
    """Hodges–Lehmann estimate of the panel effect and its signed-rank interval (ours)."""

    label: str
    """``ours, not the paper's``."""
    n: int
    """Configurations (the units)."""
    estimate: float
    """Median of the Walsh averages (NaN without configurations)."""
    lo: float | None
    """Lower bound (None when not estimable: see ``reason``)."""
    hi: float | None
    """Upper bound."""
    nominal: float
    """Requested confidence 1 - alpha."""
    achieved: float | None
    """Exact confidence 1 - 2 P(W <= c) of an exact interval (>= nominal); None for the approximation."""
    reason: str | None
    """Why the estimate or the interval is not estimable, else None."""
    method: str | None = None
    """How the interval was computed: :data:`EXACT` or :data:`NORMAL` (None: no interval)."""
    estimand: str = ESTIMAND
    """What the estimate estimates (:data:`ESTIMAND`)."""


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
    """The n(n+1)/2 averages (e_i + e_j)/2, i <= j, sorted (O(n^2): for small n and tests)."""
    i, j = np.triu_indices(effects.size)
    return np.sort((effects[i] + effects[j]) / 2.0)


def _row_bounds(e: np.ndarray, pivot: float, strict: bool) -> np.ndarray:
    """For each row i of sorted ``e``: the first column j >= i whose Walsh average (e_i + e_j)/2 is above
    ``pivot`` (``strict``: at or above). Rows are monotone in j, so one vectorised binary search."""
    n = e.size
    lo = np.arange(n)
    hi = np.full(n, n)
    rows = np.arange(n)
    while np.any(active := lo < hi):
        mid = (lo + hi) // 2
        val = (e[rows] + e[np.minimum(mid, n - 1)]) / 2.0
        below = (val < pivot) if strict else (val <= pivot)
        lo = np.where(active & below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)
    return lo


def walsh_order_statistic(sorted_effects: np.ndarray, rank: int) -> float:
    """The ``rank``-th smallest (1-based) Walsh average of sorted effects, by selection: each round takes
    the weighted median of the rows' middle candidates as pivot and keeps one side (at least a quarter
    of the candidates go), until few enough remain to enumerate. Equals ``walsh_averages(e)[rank - 1]``."""
    e = sorted_effects
    n = e.size
    left = np.arange(n)  # candidates of row i: columns left[i] .. right[i] - 1
    right = np.full(n, n)
    below = 0  # Walsh averages known to lie below every candidate
    while True:
        width = right - left
        total = int(width.sum())
        if total <= 200_000:
            rows = np.repeat(np.arange(n), width)
            starts = np.cumsum(width) - width
            cols = left[rows] + (np.arange(total) - np.repeat(starts, width))
            vals = (e[rows] + e[cols]) / 2.0
            k = rank - below - 1
            return float(np.partition(vals, k)[k])
        live = np.flatnonzero(width > 0)
        mids = (e[live] + e[(left[live] + right[live] - 1) // 2]) / 2.0
        order = np.argsort(mids, kind="stable")
        cum = np.cumsum(width[live][order])
        pivot = float(mids[order][int(np.searchsorted(cum, total / 2.0))])
        lt = np.maximum(np.minimum(_row_bounds(e, pivot, strict=True), right), left)
        le = np.maximum(np.minimum(_row_bounds(e, pivot, strict=False), right), left)
        n_lt, n_le = int((lt - left).sum()), int((le - left).sum())
        if rank <= below + n_lt:
            right = lt
        elif rank <= below + n_le:
            return pivot
        else:
            below += n_le
            left = le


def walsh_median(sorted_effects: np.ndarray) -> float:
    """Median of the Walsh averages (the Hodges–Lehmann estimate) without forming them."""
    m = sorted_effects.size * (sorted_effects.size + 1) // 2
    if m % 2:
        return walsh_order_statistic(sorted_effects, (m + 1) // 2)
    return (walsh_order_statistic(sorted_effects, m // 2) + walsh_order_statistic(sorted_effects, m // 2 + 1)) / 2.0


def signed_rank_z(effects: np.ndarray, shift: float, correct: bool = True) -> float:
    """R's normal signed-rank statistic of ``effects - shift``: zeros dropped, ranks of |x| with ties
    averaged, z = (V - n(n+1)/4 - sign * 1/2) / sqrt(n(n+1)(2n+1)/24 - sum(t^3 - t)/48). NaN when the
    variance is 0 (nothing left, or every |x| tied); 0 when no effect is left."""
    x = effects - shift
    x = x[x != 0]
    nx = x.size
    if nx == 0:
        return 0.0
    ranks = stats.rankdata(np.abs(x))
    v = float(ranks[x > 0].sum())
    _, ties = np.unique(ranks, return_counts=True)
    var = float(nx * (nx + 1) * (2 * nx + 1) / 24.0 - float(np.sum(ties.astype(float) ** 3 - ties)) / 48.0)
    if var <= 0:
        return math.nan
    z = v - nx * (nx + 1) / 4.0
    if correct:
        z -= math.copysign(0.5, z) if z != 0 else 0.0
    return float(z / math.sqrt(var))


def _approximate_bounds(e: np.ndarray, alpha: float) -> tuple[float, float] | str:
    """R's ``exact = FALSE, correct = TRUE`` interval (module note), or the reason there is none."""
    if e.size == 0:
        return "every configuration effect is 0, so the signed-rank statistic has no spread"
    mumin, mumax = float(e.min()), float(e.max())
    q = float(stats.norm.ppf(1.0 - alpha / 2.0))
    z_min, z_max = signed_rank_z(e, mumin), signed_rank_z(e, mumax)
    if math.isnan(z_min) or math.isnan(z_max) or mumin == mumax:
        return "every configuration effect is the same, so the signed-rank statistic has no spread"
    if z_min < q or z_max > -q:
        return (f"{e.size} non-zero configuration effects (zeros and ties leave no exact interval) cannot "
                f"reach a {1 - alpha:.0%} signed-rank interval")

    def root(zq: float) -> float:
        f_lo, f_hi = signed_rank_z(e, mumin) - zq, signed_rank_z(e, mumax) - zq
        if f_lo <= 0:
            return mumin
        if f_hi >= 0:
            return mumax
        return float(optimize.brentq(lambda d: signed_rank_z(e, d) - zq, mumin, mumax, xtol=1e-12))

    return root(q), root(-q)


def _exact_bounds(e: np.ndarray, alpha: float) -> tuple[float, float, float] | str:
    """The exact interval [A_(c+1), A_(M-c)] with its achieved confidence, or the reason there is none."""
    n = e.size
    counts = signed_rank_counts(n)
    total = 2**n
    cum = np.cumsum(counts)
    limit = Fraction(alpha).limit_denominator(10**12) / 2
    below = [k for k in range(cum.size) if Fraction(int(cum[k]), total) <= limit]
    if not below:
        return (f"{n} configurations cannot reach a {1 - alpha:.0%} exact interval "
                f"(P(W = 0) = 2^-{n} > alpha/2)")
    c = below[-1]
    m = n * (n + 1) // 2
    achieved = float(1 - 2 * Fraction(int(cum[c]), total))
    return walsh_order_statistic(e, c + 1), walsh_order_statistic(e, m - c), achieved


def hodges_lehmann(effects: Sequence[float] | np.ndarray, alpha: float) -> HodgesLehmann:
    """Hodges–Lehmann estimate and signed-rank interval at level 1 - ``alpha`` (module note)."""
    e = np.sort(finite_effects(effects))
    n, nominal = int(e.size), 1.0 - alpha
    if n == 0:
        return HodgesLehmann(OURS_LABEL, 0, math.nan, None, None, nominal, None, "no configuration in the panel")
    estimate = walsh_median(e)
    if n < 2:
        return HodgesLehmann(OURS_LABEL, n, estimate, None, None, nominal, None,
                             too_few(n, "configuration"))
    exact = n < EXACT_BELOW and not np.any(e == 0) and np.unique(np.abs(e)).size == n
    if exact:
        bounds = _exact_bounds(e, alpha)
        if isinstance(bounds, str):
            return HodgesLehmann(OURS_LABEL, n, estimate, None, None, nominal, None, bounds)
        lo, hi, achieved = bounds
        return HodgesLehmann(OURS_LABEL, n, estimate, lo, hi, nominal, achieved, None, EXACT)
    approx = _approximate_bounds(e[e != 0], alpha)  # R drops the zero effects first (its ZEROES step)
    if isinstance(approx, str):
        return HodgesLehmann(OURS_LABEL, n, estimate, None, None, nominal, None, approx)
    return HodgesLehmann(OURS_LABEL, n, estimate, approx[0], approx[1], nominal, None, None, NORMAL)


def hodges_lehmann_block(e: Estimates) -> Block:
    """results.json ``hodges_lehmann``: :func:`hodges_lehmann` of the panel's configuration effects at the
    analysis alpha."""
    return Block(hodges_lehmann(e.panel.frame.get_column("effect").to_numpy(), e.params.alpha))


def hodges_lehmann_row(value: Mapping[str, Any]) -> InferenceRow:
    """Its row of t_beyond_inference, from the block's results.json value (the label names the estimand
    and how the interval was computed)."""
    how = {EXACT: "exact signed-rank interval", NORMAL: "signed-rank interval, normal approximation"}.get(
        value.get("method") or "", "signed-rank interval")
    return InferenceRow("hodges_lehmann", f"Hodges–Lehmann pseudo-median (assumes symmetric effects), {how}",
                        value.get("estimate"), value.get("lo"), value.get("hi"), None, value.get("n"),
                        "configurations", value.get("reason"))


HODGES_LEHMANN_REGISTRATION = ResultsBlock(
    "hodges_lehmann", hodges_lehmann_block,
    "{label, n, estimate, lo, hi, nominal, achieved, reason, method, estimand}",
    "Hodges–Lehmann estimate of the panel effect (median of the Walsh averages of the configuration "
    "effects; estimand the pseudo-median, the centre under symmetry) with its signed-rank interval: exact "
    "without zeros and ties below 50 configurations, else R's normal approximation (`method` says which; "
    "`achieved` only for the exact one); null bounds with `reason` when not estimable (ours)",
    inference_row=hodges_lehmann_row,
    sentence="**Hodges–Lehmann** (ours; estimates the pseudo-median of the configuration effects, their "
             "centre if they are symmetric): {{ s.estimate|signed }} over {{ s.n|plural('configuration') }}"
             "{% if s.lo is number %}, {{ 'exact signed-rank ' ~ (s.achieved|pct) if s.achieved is number "
             "else 'signed-rank ' ~ (s.nominal|pct) ~ ' (normal approximation with zero and tie corrections, "
             "as R gives)' }}"
             " interval [{{ s.lo|signed }}, {{ s.hi|signed }}], conditional on this panel and not a confidence "
             "interval for a population of models"
             "{% elif s.reason %}; its interval is not estimable: {{ s.reason }}{% endif %}"
             "{{ see('t_beyond_inference') }}.")
"""The results.json block of this statistic (collected by analysis/results/registry.py)."""
