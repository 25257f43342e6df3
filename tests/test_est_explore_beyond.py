"""Beyond the paper (ours, not the paper's): bootstrap, sign flip, GEE, design-effect intervals.

Oracles: brute-force enumeration with itertools and scipy.stats.permutation_test (sign flip),
scipy.stats.bootstrap (percentile / BCa, same resampling scheme), statsmodels
proportion_confint(method='wilson') (design-effect interval), hand derivations for GEE on a
balanced design (coefficient = difference of arm means).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from analysis.estimators.beyond import (
    LABEL,
    bootstrap_mean,
    design_effect_interval,
    design_effect_intervals,
    gee_arm_effect,
    sign_flip_test,
)
from analysis.estimators.common import EstimatorError

effects_st = st.lists(st.integers(-14, 14).map(lambda k: k / 14), min_size=1, max_size=12)


# ----------------------------------------------------------------------------- sign flip
def test_sign_flip_handmade_effects_by_hand():
    # Effects 0.5, -0.5, 0.75 (hand-made panel): the 8 sums are +-0.5 +-0.5 +-0.75 =
    # 1.75, 0.75, 0.75, -0.25 and their negatives; |sum| >= 0.75 for 6 of 8 -> p = 0.75.
    r = sign_flip_test([0.5, -0.5, 0.75])
    assert (r.p_value, r.patterns, r.exact, r.label) == (0.75, 8, True, LABEL)


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
    assert 0 < r.p_value <= 1
    assert sign_flip_test([-v for v in x]).p_value == pytest.approx(r.p_value)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 20))
def test_sign_flip_all_zero_effects_give_p_one(n):
    assert sign_flip_test([0.0] * n).p_value == 1.0


def test_sign_flip_empty_is_nan_with_reason():
    r = sign_flip_test([])
    assert math.isnan(r.p_value) and r.reason


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_degenerate_cases():
    eq = bootstrap_mean([0.25, 0.25, 0.25])
    assert (eq.lo, eq.hi, eq.estimate) == (0.25, 0.25, 0.25) and "collapses" in eq.reason
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
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.seed == 1 and a.label == LABEL
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
    if len(x) == 1:
        assert math.isnan(r.lo)
    else:
        assert r.lo - 1e-12 <= r.estimate <= r.hi + 1e-12
        assert min(x) - 1e-12 <= r.lo and r.hi <= max(x) + 1e-12


# ----------------------------------------------------------------------------- GEE
def _balanced_rows() -> pl.DataFrame:
    # 4 configurations x 3 repeats x 2 arms; control recall c_i + noise, treatment + 0.25.
    rng = np.random.default_rng(0)
    recs = []
    for c in range(4):
        base = rng.uniform(0.1, 0.6)
        for _repeat in range(3):
            recs.append((f"c{c}", "j", float(np.round(base + rng.normal(0, 0.05), 3))))
            recs.append((f"c{c}", "q", float(np.round(base + 0.25 + rng.normal(0, 0.05), 3))))
    return pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")


def test_gee_balanced_design_coefficient_is_mean_difference():
    # With equal arm counts in every cluster the exchangeable GEE estimate of the treatment
    # coefficient equals mean(treatment) - mean(control) (the design is orthogonal to clusters).
    rows = _balanced_rows()
    g = gee_arm_effect(rows, control="j", treatment="q")
    diff = rows.filter(pl.col("arm") == "q")["recall"].mean() - rows.filter(pl.col("arm") == "j")["recall"].mean()
    assert g.coefficient == pytest.approx(diff, abs=1e-8)
    assert (g.clusters, g.rows, g.df) == (4, 24, 3)
    # t(3) reference: p and interval consistent with coefficient / se.
    assert g.p_value == pytest.approx(2 * stats.t.sf(abs(g.coefficient / g.se), 3))
    assert g.hi - g.coefficient == pytest.approx(stats.t.ppf(0.975, 3) * g.se)
    # Mancl-DeRouen inflates the plain sandwich SE with few clusters.
    assert g.se >= g.se_robust and g.converged
    assert "Mancl-DeRouen" in g.method and g.label == LABEL


def test_gee_swapping_arms_negates_coefficient():
    # Unbalanced: drop two control rows of c0 and one treatment row of c3.
    rows = _balanced_rows().with_row_index("i").filter(~pl.col("i").is_in([0, 2, 23])).drop("i")
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = gee_arm_effect(rows, control="q", treatment="j")
    assert b.coefficient == pytest.approx(-a.coefficient, abs=1e-8)
    assert b.se == pytest.approx(a.se, rel=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 14), min_size=1, max_size=4),
                          st.lists(st.integers(0, 14), min_size=1, max_size=4)), min_size=2, max_size=5))
def test_gee_swap_property_on_unbalanced_data(clusters):
    # Every configuration has both arms (as in a panel); arm counts may differ.
    recs = [(f"c{i}", arm, p / 14) for i, (cs, ts) in enumerate(clusters)
            for arm, vals in (("j", cs), ("q", ts)) for p in vals]
    rows = pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = gee_arm_effect(rows, control="q", treatment="j")
    assert math.isfinite(a.coefficient) == math.isfinite(b.coefficient)
    if math.isfinite(a.coefficient):
        assert b.coefficient == pytest.approx(-a.coefficient, abs=1e-6)
    if a.reason is None:
        assert a.lo <= a.coefficient <= a.hi and 0 <= a.p_value <= 1


def test_gee_undefined_cases():
    one = pl.DataFrame({"configuration": ["c"] * 4, "arm": ["j", "q"] * 2, "recall": [0.0, 1.0, 0.5, 1.0]})
    assert "fewer than 2" in gee_arm_effect(one, control="j", treatment="q").reason
    flat = pl.DataFrame({"configuration": ["a", "a", "b", "b"], "arm": ["j", "q"] * 2, "recall": [1.0] * 4})
    r = gee_arm_effect(flat, control="j", treatment="q")
    assert math.isnan(r.coefficient) and "zero variance" in r.reason


# ----------------------------------------------------------------------------- design effect
def test_deff_interval_matches_statsmodels_wilson():
    # mean 0.5 over 10 rows of 14 checks with deff 10.745 -> n_eff = 140 / 10.745 = 13.0293.
    d = design_effect_interval(0.5, 10, 14, 10.745)
    assert d.effective_n == pytest.approx(140 / 10.745)
    lo, hi = proportion_confint(0.5 * d.effective_n, d.effective_n, alpha=0.05, method="wilson")
    assert (d.lo, d.hi) == (pytest.approx(lo), pytest.approx(hi))
    assert d.label == LABEL and "wilson" in d.method


def test_deff_interval_undefined_and_vectorised():
    assert math.isnan(design_effect_interval(0.5, 0, 14, 2.0).lo)
    assert "design effect" in design_effect_interval(0.5, 3, 14, math.nan).reason
    cells = pl.DataFrame({"mean": [0.25, None, 1.0], "rows": [8, 0, 4]})
    out = design_effect_intervals(cells, 14, 3.5)
    for i, (m, n) in enumerate(((0.25, 8), (1.0, 4))):
        row = out.row([0, 2][i], named=True)
        one = design_effect_interval(m, n, 14, 3.5)
        assert (row["effective_n"], row["lo"], row["hi"]) == (pytest.approx(one.effective_n),
                                                              pytest.approx(one.lo), pytest.approx(one.hi))
    assert out.row(1, named=True)["lo"] is None


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 14 * 12), st.integers(1, 12), st.floats(1.0, 14.0))
def test_deff_interval_contains_mean_and_widens_with_deff(passed, rows, deff):
    mean = min(passed, 14 * rows) / (14 * rows)
    d = design_effect_interval(mean, rows, 14, deff)
    assert 0 <= d.lo <= mean <= d.hi <= 1
    wider = design_effect_interval(mean, rows, 14, deff * 2)
    assert wider.lo <= d.lo + 1e-12 and wider.hi >= d.hi - 1e-12


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 14), min_size=1, max_size=5),
                          st.lists(st.integers(0, 14), min_size=1, max_size=5)), min_size=3, max_size=8))
def test_gee_vectorised_engine_equals_statsmodels(clusters):
    # Oracle: statsmodels.genmod GEE (Gaussian, exchangeable, cov_type='bias_reduced').
    recs = [(f"c{i}", arm, p / 14) for i, (cs, ts) in enumerate(clusters)
            for arm, vals in (("j", cs), ("q", ts)) for p in vals]
    rows = pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")
    ours = gee_arm_effect(rows, control="j", treatment="q")
    ref = gee_arm_effect(rows, control="j", treatment="q", engine="statsmodels")
    if not (ref.converged and ours.converged):
        return  # statsmodels stops at 60 iterations; only converged fits are comparable
    assert (ours.reason is None) == (ref.reason is None)
    if math.isfinite(ref.coefficient):
        assert ours.coefficient == pytest.approx(ref.coefficient, abs=1e-6)
        assert ours.working_correlation == pytest.approx(ref.working_correlation, abs=1e-5)
        assert ours.se_robust == pytest.approx(ref.se_robust, rel=1e-4, abs=1e-9)
    if ref.reason is None:
        assert ours.se == pytest.approx(ref.se, rel=1e-4, abs=1e-9)
        assert ours.p_value == pytest.approx(ref.p_value, abs=1e-4)


def test_gee_engines_agree_on_the_balanced_design():
    rows = _balanced_rows()
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = gee_arm_effect(rows, control="j", treatment="q", engine="statsmodels")
    assert (a.engine, b.engine) == ("vectorised", "statsmodels")
    assert (a.coefficient, a.se, a.se_robust) == (pytest.approx(b.coefficient, abs=1e-8),
                                                  pytest.approx(b.se, rel=1e-6), pytest.approx(b.se_robust, rel=1e-6))
    with pytest.raises(EstimatorError, match="engine"):
        gee_arm_effect(rows, control="j", treatment="q", engine="R")
