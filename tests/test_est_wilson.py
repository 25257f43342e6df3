"""Design-effect-adjusted Wilson cell intervals (ours, not the paper's).

Oracle (not the engine, which is statsmodels' proportion_confint): the Wilson score interval by hand,
(p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n) with z = qnorm(0.975) = 1.959963984540054 (R),
which is also R's prop.test(x, n, correct = FALSE)$conf.int for integer x and n.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.estimators.common import OURS_LABEL
from analysis.estimators.wilson import design_effect_interval, design_effect_intervals


# ----------------------------------------------------------------------------- design effect
def _wilson_by_hand(p: float, n: float) -> tuple[float, float]:
    z = 1.959963984540054  # R: qnorm(0.975)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_deff_interval_matches_the_wilson_formula_by_hand():
    # mean 0.5 over 10 rows of 14 checks with deff 10.745 -> n_eff = 140 / 10.745 = 13.0293; at p = 1/2 the
    # centre is exactly 1/2 and the half width is z sqrt(1/4n + z^2/4n^2) / (1 + z^2/n) = 0.2455...
    d = design_effect_interval(0.5, 10, 14, 10.745)
    assert d.effective_n == pytest.approx(140 / 10.745)
    assert (d.lo, d.hi) == pytest.approx(_wilson_by_hand(0.5, 140 / 10.745), rel=1e-12)
    assert (d.lo + d.hi) / 2 == pytest.approx(0.5, abs=1e-15)
    # 28 of 112 checks (8 rows of 14, deff 1): prop.test(28, 112, correct = FALSE) by the same formula
    e = design_effect_interval(0.25, 8, 14, 1.0)
    assert (e.lo, e.hi) == pytest.approx(_wilson_by_hand(28 / 112, 112), rel=1e-12)
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
