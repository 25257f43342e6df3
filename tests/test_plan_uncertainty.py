"""Uncertainty of the v2 design's components (issue 19, findings 6-7): REML against statsmodels, the
tau2 profile interval, and sigma2_within / tau2 under each pairing of j and q rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.common import contrast_of, runs_frame
from analysis.estimators.variance_components import anova_components, difference_groups
from analysis.estimators.variance_uncertainty import (
    restricted_loglik,
    tau2_uncertainty_groups,
    variance_pairing_range,
    variance_pairing_range_outcomes,
)
from analysis.evidence import load_package
from support.paths import REPO

V1 = REPO / "data" / "v1"


def _groups(seed: int) -> list[np.ndarray]:
    rng = np.random.Generator(np.random.PCG64(seed))
    sizes = rng.integers(1, 7, size=14)
    return [rng.normal(0.3 * rng.standard_normal(), 0.4, size=int(n)) for n in sizes]


def _statsmodels(groups: list[np.ndarray]) -> object:
    import statsmodels.api as sm

    y = np.concatenate(groups)
    g = np.concatenate([[i] * len(x) for i, x in enumerate(groups)])
    return sm.MixedLM(y, np.ones((y.size, 1)), groups=g).fit(reml=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reml_equals_statsmodels_mixedlm(seed: int) -> None:
    """Oracle: statsmodels MixedLM (reml=True) on the same unbalanced one-way data. Its llf is the
    restricted log-likelihood with the constant -(N - 1)/2 log(2 pi) that ours leaves out."""
    groups = _groups(seed)
    ours = tau2_uncertainty_groups(groups)
    fit = _statsmodels(groups)
    assert ours.tau2_reml == pytest.approx(float(np.asarray(fit.cov_re)[0, 0]), rel=2e-3, abs=1e-6)
    assert ours.sigma2_within_reml == pytest.approx(float(fit.scale), rel=2e-3)
    n = sum(g.size for g in groups)
    assert ours.loglik_reml - (n - 1) / 2 * math.log(2 * math.pi) == pytest.approx(float(fit.llf), abs=1e-4)


def test_reml_equals_anova_when_balanced() -> None:
    """Hand derivation: for a balanced one-way layout with MSB > MSW, REML = (MSB - MSW) / n."""
    groups = [np.array([0.1, 0.3, 0.2]), np.array([0.9, 0.7, 1.0]), np.array([-0.2, 0.0, 0.1]),
              np.array([0.5, 0.4, 0.8])]
    a = anova_components(groups)
    u = tau2_uncertainty_groups(groups)
    assert a["tau2_untruncated"] > 0
    assert u.tau2_reml == pytest.approx(a["tau2"], rel=1e-6)
    assert u.sigma2_within_reml == pytest.approx(a["sigma2_within"], rel=1e-6)


def test_profile_interval_ends_drop_the_likelihood_by_the_chi2_cutoff() -> None:
    """At each end, max over sigma2 of l_R (checked by brute force on a fine sigma2 grid, not by our
    optimiser) is l_max - chi2_1(0.95)/2; REML lies inside."""
    groups = _groups(4)
    u = tau2_uncertainty_groups(groups, 0.95)
    cut = stats.chi2.ppf(0.95, 1) / 2
    s2 = np.geomspace(u.sigma2_within_reml / 5, u.sigma2_within_reml * 5, 20001)
    for end in (u.tau2_lo, u.tau2_hi):
        if end == 0:
            continue
        best = max(restricted_loglik(groups, end, float(s)) for s in s2[::10])
        assert best == pytest.approx(u.loglik_reml - cut, abs=2e-3)
    assert u.tau2_lo < u.tau2_reml < u.tau2_hi


def test_v1_reml_and_interval_beside_anova() -> None:
    pkg = load_package(V1)
    g = list(difference_groups(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                               recency_cutoff=pkg.study.recency_cutoff).values())
    u = tau2_uncertainty_groups(g)
    a = anova_components(g)
    assert u.tau2_reml == pytest.approx(float(np.asarray(_statsmodels(g).cov_re)[0, 0]), rel=2e-3)
    assert u.tau2_lo < a["tau2"] < u.tau2_hi and u.tau2_lo < u.tau2_reml < u.tau2_hi


def test_too_little_data_gives_reasons() -> None:
    one = tau2_uncertainty_groups([np.array([0.1, 0.2])])
    assert math.isnan(one.tau2_reml) and "fewer than two configurations" in one.reasons["tau2_reml"]
    singles = tau2_uncertainty_groups([np.array([0.1]), np.array([0.3])])
    assert math.isnan(singles.tau2_lo) and "two complete pairs" in singles.reasons["tau2_lo"]


def test_pairing_by_hand() -> None:
    """T = 2. Configuration A: j passed (0, 2), q passed (2, 0) as shipped; B: j (1, 1), q (2, 2).
    Shipped A: d = (1, -1); sorted A: j (0, 2), q (0, 2) -> d = (0, 0); reversed = shipped.
    B: d = (0.5, 0.5) under every pairing. MSW = SSW / (N - K) = (SS_A + 0) / 2:
    shipped/reversed (2 / 2) = 1.0, sorted 0. Random: E[SSW_A] = SS_j + SS_q = 4 * 0.5 / ... in recall
    units (j/2 = 0, 1: SS 0.5; q: 0.5) -> E[MSW] = (0.5 + 0.5) / 2 = 0.5."""
    outcomes = [(np.array([0.0, 2.0]), np.array([2.0, 0.0])), (np.array([1.0, 1.0]), np.array([2.0, 2.0]))]
    pr = variance_pairing_range_outcomes(outcomes, 2, np.random.Generator(np.random.PCG64(5)), 400)
    by = {r.pairing: r for r in pr.rows}
    assert by["shipped"].sigma2_within == pytest.approx(1.0)
    assert by["sorted"].sigma2_within == pytest.approx(0.0)
    assert by["reversed"].sigma2_within == pytest.approx(1.0)
    assert pr.random_expected == pytest.approx(0.5)
    assert by["random"].sigma2_within == pytest.approx(0.5, abs=0.1)   # mean of 400 draws of 0 or 1
    assert by["random"].sigma2_within_lo == 0.0 and by["random"].sigma2_within_hi == 1.0


def test_v1_pairing_range_is_bounded_by_sorted_and_reversed() -> None:
    """Rearrangement inequality: sorted gives the least within sum of squares, reversed the most; the
    random draws' mean is near the exact expectation; configuration means (MSB) never move."""
    pkg = load_package(V1)
    pr = variance_pairing_range(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                       recency_cutoff=pkg.study.recency_cutoff, rng=np.random.Generator(np.random.PCG64(1)),
                       draws=200)
    by = {r.pairing: r for r in pr.rows}
    assert [r.pairing for r in pr.rows] == ["shipped", "sorted", "random", "reversed"]
    assert by["sorted"].sigma2_within <= by["shipped"].sigma2_within < by["random"].sigma2_within
    assert by["random"].sigma2_within_hi < by["reversed"].sigma2_within
    assert by["random"].sigma2_within == pytest.approx(pr.random_expected, rel=0.03)
    assert by["reversed"].tau2 < by["random"].tau2 < by["shipped"].tau2
    # the shipped pairing is what the package's own estimator sees
    g = list(difference_groups(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                               recency_cutoff=pkg.study.recency_cutoff).values())
    assert by["shipped"].sigma2_within == pytest.approx(anova_components(g)["sigma2_within"])


def test_pairing_range_undefined_with_one_configuration() -> None:
    pr = variance_pairing_range_outcomes([(np.array([1.0, 2.0]), np.array([2.0, 2.0]))], 2,
                                np.random.Generator(np.random.PCG64(1)), 10)
    assert pr.rows == () and "fewer than two configurations" in pr.reasons["pairing"]
