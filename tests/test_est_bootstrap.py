"""Configuration bootstrap of the panel mean (ours, not the paper's).

Oracle: scipy.stats.bootstrap (percentile / BCa, same resampling scheme).
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


def test_bootstrap_seeded_and_close_to_scipy():
    x = np.array([0.786, 0.0, -0.089, 0.0, -0.054, 0.0, 0.161, 0.232, -0.054, -0.393,
                  0.054, 0.714, 0.619, 0.196, 0.179, -0.214, -0.024, 0.929, -0.411, 0.078])  # Table 3
    a = bootstrap_mean(x, resamples=20_000, seed=1)
    b = bootstrap_mean(x, resamples=20_000, seed=1)
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.seed == 1 and a.label == OURS_LABEL
    assert a.estimate == pytest.approx(0.135, abs=5e-4)  # the paper's panel mean
    for method in ("percentile", "bca"):
        ours = bootstrap_mean(x, resamples=20_000, seed=3, method=method)
        ref = stats.bootstrap((x,), np.mean, n_resamples=20_000, method=method, rng=np.random.default_rng(5))
        # Different random draws: agreement to Monte Carlo error (~0.01 here).
        assert ours.lo == pytest.approx(ref.confidence_interval.low, abs=0.015)
        assert ours.hi == pytest.approx(ref.confidence_interval.high, abs=0.015)


@settings(max_examples=25, deadline=None)
@given(effects_st, st.sampled_from(["percentile", "bca"]))
def test_bootstrap_interval_contains_the_mean(x, method):
    r = bootstrap_mean(x, resamples=400, seed=11, method=method)
    if len(x) == 1 or len(set(x)) == 1:  # one configuration, or no spread: not estimable (issue 30)
        assert math.isnan(r.lo) and math.isnan(r.hi) and r.reason
    else:
        assert r.lo - 1e-12 <= r.estimate <= r.hi + 1e-12
        assert min(x) - 1e-12 <= r.lo and r.hi <= max(x) + 1e-12
