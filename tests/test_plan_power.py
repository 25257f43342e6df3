"""Power simulation of a v2 design (issue 13): equivalence with the package's estimator, calibration,
closed form, and the resampling variant."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest

from analysis.estimators.common import Contrast
from analysis.estimators.paired import panel
from analysis.estimators.randomization import sign_flip_test
from analysis.params import DEFAULT_PARAMS
from analysis.plan.simulate import (
    SimModel,
    analyse_simulated,
    closed_form,
    draw_parametric,
    draw_resampled,
    parametric_differences,
    sign_patterns,
    study_frames,
)

C = Contrast("j", "q", "S5")
V1_LIKE = SimModel(tau2=0.0757, sigma2_within=0.0659, checks_total=14, missing_control=0.05,
                   missing_treatment=0.03)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_vectorised_analysis_equals_package_estimator(seed: int) -> None:
    """Each simulated study through analysis.estimators.paired + randomization.sign_flip_test gives the same numbers."""
    rng = np.random.Generator(np.random.PCG64(seed))
    k, r, sims = 7, 3, 4
    model = SimModel(0.05, 0.08, 14, missing_control=0.0, missing_treatment=0.3)
    zc, ze, present = draw_parametric(model, k, r, sims, rng)
    present[0, 0, :] = False   # one configuration without any complete pair leaves the panel
    d = parametric_differences(model, 0.1, zc, ze)
    patterns, exact = sign_patterns(k, 12, 999, rng)
    assert exact
    res = analyse_simulated(d, present, DEFAULT_PARAMS.alpha, patterns, exact)
    for s in range(sims):
        rows, runs = study_frames(d[s], present[s], 14)
        p = panel(rows, runs, C, recency_cutoff=datetime.date(2025, 1, 1), params=DEFAULT_PARAMS)
        assert p.summary.configurations == res.configurations[s]
        assert p.summary.mean == pytest.approx(res.mean[s], abs=1e-12)
        assert p.summary.dispersion_lo == pytest.approx(res.lo[s], abs=1e-12)
        assert p.summary.dispersion_hi == pytest.approx(res.hi[s], abs=1e-12)
        effects = p.frame.get_column("effect").to_numpy()
        assert sign_flip_test(effects).p_value == pytest.approx(res.p_signflip[s], abs=1e-12)
    assert res.configurations[0] <= k - 1


def _rate(reject: np.ndarray) -> tuple[float, float]:
    p = float(reject.mean())
    return p, math.sqrt(0.05 * 0.95 / reject.size)


@pytest.mark.parametrize("k,r", [(10, 2), (20, 4), (40, 8)])
def test_calibration_at_zero_effect(k: int, r: int) -> None:
    """At effect 0 both tests reject at rate alpha within Monte Carlo error (3.5 MCSE)."""
    rng = np.random.Generator(np.random.PCG64(100 + k + r))
    sims = 4000
    zc, ze, present = draw_parametric(V1_LIKE, k, r, sims, rng)
    patterns, exact = sign_patterns(k, 12, 999, rng)
    res = analyse_simulated(parametric_differences(V1_LIKE, 0.0, zc, ze), present, 0.05, patterns, exact)
    rate, mcse = _rate(res.reject_t())
    assert abs(rate - 0.05) < 3.5 * mcse, rate
    rate_sf, _ = _rate(res.p_signflip <= 0.05)
    assert abs(rate_sf - 0.05) < 3.5 * mcse, rate_sf


@pytest.mark.parametrize("k,r,effect", [(10, 4, 0.1), (20, 2, 0.15), (40, 8, 0.1), (30, 1, 0.05)])
def test_closed_form_agrees_with_simulation(k: int, r: int, effect: float) -> None:
    """Continuous differences, no missingness: configuration means are iid normal, so the t test's
    power is exactly the noncentral-t closed form; simulation must agree within 3.5 MCSE."""
    model = SimModel(0.0757, 0.0659, None)
    rng = np.random.Generator(np.random.PCG64(7 * k + r))
    sims = 4000
    zc, ze, present = draw_parametric(model, k, r, sims, rng)
    patterns, exact = sign_patterns(k, 12, 999, rng)
    res = analyse_simulated(parametric_differences(model, effect, zc, ze), present, 0.05, patterns, exact)
    power_cf, half_cf = closed_form(model.tau2, model.sigma2_within, k, r, effect, 0.05)
    sim = float(res.reject_t().mean())
    assert abs(sim - float(power_cf)) < 3.5 * math.sqrt(power_cf * (1 - power_cf) / sims) + 1e-9
    # the median half-width is close to t_crit * sqrt(Var) (sd's median is slightly below sigma)
    assert float(np.median(res.halfwidth())) == pytest.approx(float(half_cf), rel=0.1)


def test_closed_form_known_value() -> None:
    """tau2 = 0.04, s2 = 0.16, K = 16, R = 4: Var = 0.04/16 + 0.16/64 = 0.005. Effect 0.2:
    ncp = 0.2/sqrt(0.005) = 2.828; power = P(|t'_15| > t_.975,15) = scipy nct (independent formula)."""
    from scipy import stats

    power, half = closed_form(0.04, 0.16, 16, 4, 0.2, 0.05)
    tc = stats.t.ppf(0.975, 15)
    ncp = 0.2 / math.sqrt(0.005)
    expect = 1 - stats.nct.cdf(tc, 15, ncp) + stats.nct.cdf(-tc, 15, ncp)
    assert float(power) == pytest.approx(expect)
    assert float(half) == pytest.approx(tc * math.sqrt(0.005))
    assert float(closed_form(0.04, 0.16, 16, 4, 0.0, 0.05)[0]) == pytest.approx(0.05)


def test_resampling_variant_centres_and_shifts() -> None:
    groups = [np.array([0.1, 0.3]), np.array([-0.5]), np.array([0.2, 0.2, 0.5])]
    rng = np.random.Generator(np.random.PCG64(1))
    d, present = draw_resampled(groups, 50, 3, 400, SimModel(0, 0, 14), rng)
    assert present.all()
    centre = np.mean([g.mean() for g in groups])
    values = set(np.round(np.concatenate(groups) - centre, 12))
    assert set(np.round(np.unique(d), 12)) <= values
    # mean over studies of the panel mean is ~0 (centred); configurations with one pair never vary
    assert abs(float(d.mean())) < 0.02


def test_grid_is_drawn_in_chunks_with_the_same_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunking bounds memory; pooled over chunks the rates stay calibrated at effect 0."""
    from types import MappingProxyType

    from analysis.estimators.variance_components import ArmMissing, VarianceComponents
    from analysis.params import DEFAULT_PLAN_PARAMS
    from analysis.plan import design

    comps = VarianceComponents(
        contrast=C, checks_total=14, configurations=20, pairs=80, pairs_per_configuration=(4,) * 20,
        within_df=60, grand_mean=0.0, panel_mean=0.0, msb=0.0, msw=0.0659, n0=4.0, tau2_untruncated=0.0757,
        tau2=0.0757, tau2_truncated=False, sigma2_within=0.0659, icc=0.7, design_effect=10.0, icc_rows=160,
        missing=(ArmMissing("j", 80, 80, 0, 0, 0.0), ArmMissing("q", 80, 80, 0, 0, 0.0)), method="m",
        reasons=MappingProxyType({}))
    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(20,), repeats=(4,), effects=(0.0,), sims=3000)
    monkeypatch.setattr(design, "CHUNK_CELLS", 20 * 4 * 700)   # five chunks (4 x 700 + 200)
    assert design._chunks(3000, 20, 4) == [700, 700, 700, 700, 200]
    grid, boot = design.simulate_grid(comps, [np.array([0.1, 0.2]), np.array([-0.1, 0.0])], plan,
                                      np.random.Generator(np.random.PCG64(9)))
    (row,) = grid.iter_rows(named=True)
    assert abs(row["power"] - 0.05) < 3.5 * math.sqrt(0.05 * 0.95 / 3000)
    assert boot.height == 1 and 0.0 <= boot["power"][0] <= 1.0


def test_shifted_analysis_equals_one_analysis_per_effect() -> None:
    """The resampling variant's shared signed sums (eff0 @ P' + effect * present @ P') give what
    `analyse_simulated(d0 + effect)` gives, effect by effect (identity: a present configuration's mean moves
    by the effect, an absent one stays 0)."""
    from analysis.plan.simulate import analyse_shifted

    rng = np.random.Generator(np.random.PCG64(21))
    groups = [np.array([0.1, 0.3, -0.2]), np.array([-0.5, 0.0]), np.array([0.2, 0.2, 0.5, 0.9])]
    model = SimModel(0.05, 0.08, 14, missing_control=0.2, missing_treatment=0.1)
    for k, r in ((7, 3), (15, 2)):
        d0, present = draw_resampled(groups, k, r, 300, model, rng)
        patterns, exact = sign_patterns(k, 12, 999, rng)
        effects = (0.0, 0.05, 0.1, -0.15)
        for effect, got in zip(effects, analyse_shifted(d0, present, 0.05, patterns, exact, effects), strict=True):
            want = analyse_simulated(d0 + effect, present, 0.05, patterns, exact)
            np.testing.assert_array_equal(got.p_signflip, want.p_signflip)
            np.testing.assert_array_equal(got.reject_t(), want.reject_t())
            np.testing.assert_allclose(got.mean, want.mean, atol=1e-12)
            np.testing.assert_allclose(got.lo, want.lo, atol=1e-12)


# ------------------------------------------------------------------------------ Monte Carlo p
def test_the_monte_carlo_sign_flip_p_value_carries_its_plus_one() -> None:
    # Plant: `p = hits / m` whatever `exact` (or `(hits) / (1 + m)`) -> 2/4 = 0.5 (or 0.4) instead of 0.6.
    # Hand: K = 3 configurations with effects 1, 1, 1 (one repeat each): observed |sum| = 3.
    # Four random patterns: (+,+,+) -> 3 (hit), (-,-,-) -> 3 (hit), (+,-,+) -> 1, (+,+,-) -> 1.
    # Monte Carlo: p = (1 + 2) / (1 + 4) = 0.6. The same patterns as an exact enumeration: 2 / 4 = 0.5.
    d = np.ones((1, 3, 1))
    present = np.ones((1, 3, 1), dtype=bool)
    patterns = np.array([[1, 1, 1], [-1, -1, -1], [1, -1, 1], [1, 1, -1]], dtype=float)
    assert analyse_simulated(d, present, 0.05, patterns, exact=False).p_signflip[0] == pytest.approx(3 / 5)
    assert analyse_simulated(d, present, 0.05, patterns, exact=True).p_signflip[0] == pytest.approx(2 / 4)
    # above signflip_exact_max the patterns are random and flagged as not exact, so the +1 applies
    _pats, exact = sign_patterns(13, 12, 99, np.random.Generator(np.random.PCG64(1)))
    assert exact is False

