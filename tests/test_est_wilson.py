"""Design-effect-adjusted Wilson cell intervals (ours, not the paper's).

Oracle: statsmodels proportion_confint(method='wilson').
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from analysis.estimators.common import OURS_LABEL
from analysis.estimators.wilson import design_effect_interval, design_effect_intervals


# ----------------------------------------------------------------------------- design effect
def test_deff_interval_matches_statsmodels_wilson():
    # mean 0.5 over 10 rows of 14 checks with deff 10.745 -> n_eff = 140 / 10.745 = 13.0293.
    d = design_effect_interval(0.5, 10, 14, 10.745)
    assert d.effective_n == pytest.approx(140 / 10.745)
    lo, hi = proportion_confint(0.5 * d.effective_n, d.effective_n, alpha=0.05, method="wilson")
    assert (d.lo, d.hi) == (pytest.approx(lo), pytest.approx(hi))
    assert d.label == OURS_LABEL and d.method.startswith("Wilson score interval")


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
