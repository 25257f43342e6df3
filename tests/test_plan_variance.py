"""Variance components of the primary estimand (issue 13): hand oracle, MixedLM REML cross-check, reasons."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pandas as pd
import pytest

from analysis.estimators.common import Contrast
from analysis.estimators.variance_components import (
    anova_components,
    variance_components,
)
from analysis.plan.simulate import study_frames
from support.paths import REPO

C = Contrast("j", "q", "S5")
CUT = datetime.date(2025, 1, 1)


def frames(groups: list[list[int]], t: int, missing: dict[tuple[int, int], bool] | None = None):
    """rows/runs for configurations whose paired differences are `groups` (in whole checks)."""
    r = max(len(g) for g in groups)
    d = np.zeros((len(groups), r))
    present = np.zeros((len(groups), r), dtype=bool)
    for i, g in enumerate(groups):
        d[i, :len(g)] = np.asarray(g) / t
        present[i, :len(g)] = True
    return study_frames(d, present, t)


def test_hand_oracle_two_configurations() -> None:
    # T = 2; A: differences 1, 2 checks -> d = 0.5, 1.0; B: 0, -1 -> 0, -0.5.
    # dbar_A = .75, dbar_B = -.25, dbar = .25 (4 pairs). MSW = (4 * .0625) / (4 - 2) = .125.
    # MSB = 2 * (.5^2 + .5^2) / 1 = 1.0; n0 = (4 - 8/4) / 1 = 2; tau2 = (1 - .125) / 2 = .4375.
    rows, runs = frames([[1, 2], [0, -1]], 2)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    assert (vc.configurations, vc.pairs, vc.within_df) == (2, 4, 2)
    assert vc.sigma2_within == pytest.approx(0.125)
    assert vc.msb == pytest.approx(1.0)
    assert vc.n0 == pytest.approx(2.0)
    assert vc.tau2 == pytest.approx(0.4375)
    assert vc.panel_mean == pytest.approx(0.25)
    assert not vc.tau2_truncated


def test_truncation_at_zero() -> None:
    # configuration means equal (0.5 each) while repeats vary: MSB = 0 < MSW -> tau2 = 0, flagged.
    vc = anova_components([np.array([0.0, 1.0]), np.array([1.0, 0.0])])
    assert vc["tau2"] == 0.0 and vc["tau2_truncated"] and vc["tau2_untruncated"] < 0


def test_fewer_than_two_configurations_is_null_with_reason() -> None:
    rows, runs = frames([[1, 2, 0]], 2)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    assert vc.configurations == 1
    assert math.isnan(vc.tau2) and "fewer than two configurations" in vc.reasons["tau2"]
    assert vc.sigma2_within == pytest.approx(np.var([0.5, 1.0, 0.0], ddof=1))
    assert "icc" in vc.reasons  # no checks table given


def test_one_pair_each_has_no_within_variance() -> None:
    rows, runs = frames([[1], [0], [2]], 2)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    assert math.isnan(vc.sigma2_within) and "two complete pairs" in vc.reasons["sigma2_within"]
    assert math.isnan(vc.tau2) and "tau2" in vc.reasons


def test_missing_rate_counts_invalid_rows() -> None:
    present = np.array([[True, False, True], [True, True, True]])
    rows, runs = study_frames(np.zeros((2, 3)), present, 4)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    miss = {m.arm: m for m in vc.missing}
    assert (miss["j"].planned, miss["j"].with_outcome, miss["j"].rate) == (6, 6, 0.0)
    assert (miss["q"].with_outcome, miss["q"].invalid, miss["q"].absent) == (5, 1, 0)
    assert miss["q"].rate == pytest.approx(1 / 6)
    assert vc.pairs == 5


@pytest.mark.parametrize("seed", [1, 2])
def test_balanced_equals_mixedlm_reml(seed: int) -> None:
    """Balanced panel: Henderson I equals statsmodels MixedLM REML (random intercept) when positive."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(seed)
    k, r, t = 12, 6, 1000
    theta = rng.normal(0.1, 0.3, size=(k, 1))
    d = np.rint((theta + rng.normal(0, 0.2, size=(k, r))) * t) / t
    rows, runs = study_frames(d, np.ones((k, r), dtype=bool), t)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    df = pd.DataFrame({"d": d.ravel(), "g": np.repeat(np.arange(k), r)})
    fit = smf.mixedlm("d ~ 1", df, groups=df["g"]).fit(reml=True)
    assert vc.tau2 == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-4)
    assert vc.sigma2_within == pytest.approx(float(fit.scale), rel=1e-4)


def test_unbalanced_close_to_mixedlm_reml() -> None:
    """Unbalanced: moments and REML differ, but agree closely on a large panel."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    k, r, t = 60, 8, 1000
    theta = rng.normal(0.0, 0.25, size=(k, 1))
    d = np.rint((theta + rng.normal(0, 0.25, size=(k, r))) * t) / t
    present = rng.random((k, r)) > 0.3
    present[:, 0] = True
    rows, runs = study_frames(d, present, t)
    vc = variance_components(rows, runs, C, recency_cutoff=CUT)
    df = pd.DataFrame({"d": d[present], "g": np.nonzero(present)[0]})
    fit = smf.mixedlm("d ~ 1", df, groups=df["g"]).fit(reml=True)
    assert vc.tau2 == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=0.1)
    assert vc.sigma2_within == pytest.approx(float(fit.scale), rel=0.05)


def test_v1_reconstruction_components() -> None:

    from analysis.estimators.common import contrast_of, runs_frame
    from analysis.evidence import load_package

    pkg = load_package(REPO / "data" / "v1")
    vc = variance_components(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                             recency_cutoff=pkg.study.recency_cutoff, checks=pkg.checks)
    assert vc.configurations == 20                        # the paper's primary panel
    assert vc.panel_mean == pytest.approx(0.135, abs=5e-4)  # paper: +0.135
    assert vc.tau2 > 0 and vc.sigma2_within > 0 and not math.isnan(vc.icc)
