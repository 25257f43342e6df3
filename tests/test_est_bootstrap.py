"""Configuration bootstrap of the panel mean (ours, not the paper's).

The engine is scipy.stats.bootstrap, so the oracle is not: _by_hand draws the same resamples with numpy
alone (the Generator's integers in blocks of 2048 rows, as scipy draws them) and takes the percentile and
BCa ends by Efron & Tibshirani (1993) 14.3 (z0 = Phi^-1 of the share of resampled means below the estimate,
ties counted half; acceleration a = sum d^3 / (6 (sum d^2)^1.5) over the jackknife deviations d).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.bootstrap import bootstrap_mean
from analysis.estimators.common import OURS_LABEL, EstimatorError

effects_st = st.lists(st.integers(-14, 14).map(lambda k: k / 14), min_size=1, max_size=12)


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_degenerate_cases():
    eq = bootstrap_mean([0.25, 0.25, 0.25])
    # equal effects: no spread, so not estimable (issue 30; it used to print the zero-width [0.25, 0.25])
    assert eq.estimate == 0.25 and math.isnan(eq.lo) and math.isnan(eq.hi) and "no spread" in eq.reason
    one = bootstrap_mean([0.4])
    assert one.estimate == 0.4 and math.isnan(one.lo) and "one configuration" in one.reason
    none = bootstrap_mean([])
    assert math.isnan(none.estimate) and none.reason
    with pytest.raises(EstimatorError, match="percentile"):
        bootstrap_mean([0.1, 0.2], method="studentized")


def _by_hand(x: np.ndarray, resamples: int, seed: int, method: str, alpha: float = 0.05) -> tuple[float, float]:
    rng = np.random.Generator(np.random.PCG64(seed))
    n = x.size
    boots = np.concatenate([x[rng.integers(0, n, size=(min(2048, resamples - s), n))].mean(axis=1)
                            for s in range(0, resamples, 2048)])
    q = np.array([alpha / 2, 1 - alpha / 2])
    if method == "bca":
        est = x.mean()
        z0 = stats.norm.ppf((np.sum(boots < est) + np.sum(boots <= est)) / (2 * resamples))
        jack = (x.sum() - x) / (n - 1)
        d = jack.mean() - jack
        a = np.sum(d**3) / (6.0 * np.sum(d**2) ** 1.5)
        z = stats.norm.ppf(q)
        q = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    lo, hi = np.quantile(boots, q)
    return float(lo), float(hi)


def test_bootstrap_seeded_and_equal_to_the_hand_resampling():
    x = np.array([0.786, 0.0, -0.089, 0.0, -0.054, 0.0, 0.161, 0.232, -0.054, -0.393,
                  0.054, 0.714, 0.619, 0.196, 0.179, -0.214, -0.024, 0.929, -0.411, 0.078])  # Table 3
    a = bootstrap_mean(x, resamples=20_000, seed=1)
    b = bootstrap_mean(x, resamples=20_000, seed=1)
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.seed == 1 and a.label == OURS_LABEL
    assert a.estimate == pytest.approx(0.135, abs=5e-4)  # the paper's panel mean
    for method in ("percentile", "bca"):
        ours = bootstrap_mean(x, resamples=20_000, seed=3, method=method)
        # The same draws: equal up to rounding in the mean and the quantile.
        assert (ours.lo, ours.hi) == pytest.approx(_by_hand(x, 20_000, 3, method), rel=1e-12, abs=1e-15)
        assert ours.reason is None


def test_bca_with_every_resampled_mean_on_one_side_falls_back_to_percentile():
    # Two configurations, 3 resamples: the first seed whose 3 draws all pick the second effect twice, so every
    # resampled mean is 1 > 0.5 = the estimate, z0 = Phi^-1(0) = -inf and BCa is undefined; the percentile
    # ends of the same draws are returned, with the reason.
    x = np.array([0.0, 1.0])
    seed = next(s for s in range(200) if np.all(np.random.default_rng(s).integers(0, 2, (3, 2)).sum(1) == 2))
    r = bootstrap_mean(x, resamples=3, seed=seed, method="bca")
    assert r.reason is not None and "percentile used" in r.reason
    assert (r.lo, r.hi) == pytest.approx(_by_hand(x, 3, seed, "percentile"))


@settings(max_examples=25, deadline=None)
@given(effects_st, st.sampled_from(["percentile", "bca"]))
def test_bootstrap_interval_contains_the_mean(x, method):
    r = bootstrap_mean(x, resamples=400, seed=11, method=method)
    if len(x) == 1 or len(set(x)) == 1:  # one configuration, or no spread: not estimable (issue 30)
        assert math.isnan(r.lo) and math.isnan(r.hi) and r.reason
    else:
        assert r.lo - 1e-12 <= r.estimate <= r.hi + 1e-12
        assert min(x) - 1e-12 <= r.lo and r.hi <= max(x) + 1e-12
