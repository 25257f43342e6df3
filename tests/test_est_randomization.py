"""Sign-flip randomisation test of the panel mean (ours, not the paper's).

Oracles: brute-force enumeration with itertools and scipy.stats.permutation_test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.common import OURS_LABEL
from analysis.estimators.randomization import sign_flip_test

effects_st = st.lists(st.integers(-14, 14).map(lambda k: k / 14), min_size=1, max_size=12)


# ----------------------------------------------------------------------------- sign flip
def test_sign_flip_handmade_effects_by_hand():
    # Effects 0.5, -0.5, 0.75 (hand-made panel): the 8 sums are +-0.5 +-0.5 +-0.75 =
    # 1.75, 0.75, 0.75, -0.25 and their negatives; |sum| >= 0.75 for 6 of 8 -> p = 0.75.
    r = sign_flip_test([0.5, -0.5, 0.75])
    assert (r.p_value, r.patterns, r.exact, r.label) == (0.75, 8, True, OURS_LABEL)


@pytest.mark.parametrize("x", [[0.1, 0.3, -0.2, 0.7, 0.05], [0.2] * 6, [1.0, -1.0, 0.5, 0.25, 0.125, -0.0625, 0.3]])
def test_sign_flip_matches_bruteforce_and_scipy(x):
    obs = abs(sum(x))
    brute = np.mean([abs(sum(s * v for s, v in zip(signs, x, strict=True))) >= obs - 1e-12
                     for signs in itertools.product((1, -1), repeat=len(x))])
    r = sign_flip_test(x)
    assert r.p_value == pytest.approx(brute, abs=1e-15)
    ref = stats.permutation_test((np.array(x),), lambda v: abs(np.mean(v)), permutation_type="samples",
                                 alternative="greater", n_resamples=np.inf)
    assert r.p_value == pytest.approx(ref.pvalue, abs=1e-12)


def test_sign_flip_exact_at_20_and_monte_carlo_above():
    x = np.linspace(-0.3, 0.9, 20)
    r = sign_flip_test(x)
    assert r.exact and r.patterns == 2**20 and 0 < r.p_value <= 1
    y = np.linspace(-0.3, 0.9, 21)
    m1 = sign_flip_test(y, draws=20_000, seed=7)
    m2 = sign_flip_test(y, draws=20_000, seed=7)
    assert not m1.exact and m1.seed == 7 and m1.p_value == m2.p_value      # seeded, reproducible
    # Monte Carlo p = (1 + hits) / (1 + draws) > 0; close to the exact p of the same data.
    exact = sign_flip_test(y, exact_max_n=21)
    assert m1.p_value == pytest.approx(exact.p_value, abs=0.01)


@settings(max_examples=30, deadline=None)
@given(effects_st)
def test_sign_flip_p_in_unit_interval_and_symmetric(x):
    r = sign_flip_test(x)
    if not any(x) or len(x) == 1:  # all zero, or one configuration: not estimable (tests below)
        assert math.isnan(r.p_value)
        return
    assert 0 < r.p_value <= 1
    assert sign_flip_test([-v for v in x]).p_value == pytest.approx(r.p_value)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 20))
def test_sign_flip_all_zero_effects_are_not_estimable(n):
    # every pattern gives the observed 0, so p = 1 says nothing: not estimable, like McNemar without a
    # discordant pair (issue 30)
    r = sign_flip_test([0.0] * n)
    assert math.isnan(r.p_value) and ("is 0" in r.reason or n == 1)


def test_sign_flip_empty_is_nan_with_reason():
    r = sign_flip_test([])
    assert math.isnan(r.p_value) and r.reason


def test_sign_flip_of_one_configuration_is_not_estimable():
    # two patterns, +e and -e, both as extreme as the observed: p = 1 whatever e is (issue 30)
    r = sign_flip_test([0.214])
    assert math.isnan(r.p_value) and r.n == 1 and "at least 2 configurations" in r.reason
