"""Headings carried versus recall (analysis/estimators/headings.py).

Oracles: hand derivations (comments) on the hand-made package and on small hand-built
DataFrames; scipy.stats.pearsonr; statsmodels OLS with cell fixed effects (Frisch-Waugh-Lovell:
the within-cell slope equals the headings coefficient of OLS with one dummy per cell).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.headings import (
    headings_analysis,
    headings_table,
    pooled_correlation,
    within_cell,
)
from analysis.params import DEFAULT_PARAMS
from est_handmade_support import handmade, rows_frame


@pytest.fixture(scope="module")
def pkg():
    return handmade()


def test_handmade_table_all_arms(pkg):
    # Valid S5 rows with headings and an outcome (16): headings -> recalls
    #   0: a2-j 0.0, c1-j 0.0            -> rows 2, mean 0.0, >= 0.5: 0
    #   1: a3-j 0.5                      -> 1, 0.5, 1
    #   2: b1-j 0.5                      -> 1, 0.5, 1
    #   3: b2-j 1.0                      -> 1, 1.0, 1
    #   4: c3-j 0.5                      -> 1, 0.5, 1
    #   5: a1-j 1, a1-q 1, a2-q 1, b1-q 0, b2-q 0.5, c1-q 1, c2-q 1, c3-q 1, a1-m 1, a2-m 1
    #      -> 10 rows, mean 8.5/10 = 0.85, >= 0.5: 9
    # (c2-j is invalid; the S1 rows are another scenario.)
    t = headings_table(pkg.rows, "S5").to_frame()
    assert t.to_dicts() == [
        {"headings": 0, "rows": 2, "mean": 0.0, "rows_at_threshold": 0},
        {"headings": 1, "rows": 1, "mean": 0.5, "rows_at_threshold": 1},
        {"headings": 2, "rows": 1, "mean": 0.5, "rows_at_threshold": 1},
        {"headings": 3, "rows": 1, "mean": 1.0, "rows_at_threshold": 1},
        {"headings": 4, "rows": 1, "mean": 0.5, "rows_at_threshold": 1},
        {"headings": 5, "rows": 10, "mean": 0.85, "rows_at_threshold": 9},
    ]


def test_handmade_table_arm_filter_keeps_empty_levels(pkg):
    # q only: all seven valid q rows carry 5 headings; levels 0-4 are present and empty (mean NaN).
    t = headings_table(pkg.rows, "S5", arms=("q",))
    assert [lv.rows for lv in t.levels] == [0, 0, 0, 0, 0, 7]
    assert all(math.isnan(lv.mean) for lv in t.levels[:5])
    # q recalls 1, 1, 0, 0.5, 1, 1, 1 -> 5.5 / 7
    assert t.levels[5].mean == pytest.approx(5.5 / 7)
    assert t.levels[5].rows_at_threshold == 6


def test_handmade_pooled_r(pkg):
    pooled = pooled_correlation(pkg.rows, "S5")
    h = [5, 5, 5, 0, 1, 2, 5, 5, 3, 0, 5, 5, 5, 4, 5, 5]
    y = [1, 1, 1, 0, .5, .5, 0, .5, 1, 0, 1, 1, 1, .5, 1, 1]
    assert pooled.rows == 16
    assert pooled.r == pytest.approx(stats.pearsonr(h, y).statistic, abs=1e-12)


def test_handmade_within_cell(pkg):
    # Informative cells (headings vary): the three j cells.
    #   alpha-1/j/g1: h (5, 0, 1) mean 2, y (1, 0, .5) mean .5 -> x~ (3, -2, -1), y~ (.5, -.5, 0)
    #                 Sxy = 1.5 + 1 + 0 = 2.5, Sxx = 14, Syy = .5
    #   alpha-2/j/g2: h (2, 3), y (.5, 1) -> x~ (-.5, .5), y~ (-.25, .25): Sxy .25, Sxx .5, Syy .125
    #   beta-1/j/g3:  h (0, 4), y (0, .5) -> x~ (-2, 2), y~ (-.25, .25):   Sxy 1, Sxx 8, Syy .125
    # q and m cells all carry 5 headings: not informative.
    # slope = 3.75 / 22.5 = 0.166667; r = 3.75 / sqrt(22.5 * .75) = 0.912871; 3 cells, 7 rows.
    w = within_cell(pkg.rows, "S5")
    assert (w.cells, w.rows) == (3, 7)
    assert w.slope == pytest.approx(3.75 / 22.5)
    assert w.r == pytest.approx(3.75 / math.sqrt(22.5 * 0.75))
    assert w.reason is None


def _cells_frame() -> pl.DataFrame:
    # Hand-built: cell A (c1, j, g1) h (0, 2, 4) passed (0, 7, 7); cell B (c1, q, g1) h (5, 3)
    # passed (14, 7); cell C (c2, j, g2) h (1, 1) passed (0, 14) (not informative);
    # cell D (c2, p, g2) h (0, 5) passed (7, 14); one row without headings is ignored.
    rec = []
    for cfg, arm, grp, hs, ps in (("c1", "j", "g1", (0, 2, 4), (0, 7, 7)), ("c1", "q", "g1", (5, 3), (14, 7)),
                                  ("c2", "j", "g2", (1, 1), (0, 14)), ("c2", "p", "g2", (0, 5), (7, 14))):
        for i, (h, p) in enumerate(zip(hs, ps, strict=True)):
            rec.append({"configuration": cfg, "arm": arm, "execution_group": grp, "repeat": i + 1,
                        "headings_carried": h, "checks_passed": p})
    rec.append({"configuration": "c2", "arm": "j", "execution_group": "g2", "repeat": 9, "checks_passed": 14})
    return rows_frame(rec)


def test_within_cell_by_hand_and_arm_sets():
    rows = _cells_frame()
    # A: x~ (-2, 0, 2), y~ (-1/3, 1/6, 1/6): Sxy = 2/3 + 1/3 = 1, Sxx = 8, Syy = 1/9 + 1/36 + 1/36 = 1/6
    # B: x~ (1, -1), y~ (.25, -.25): Sxy .5, Sxx 2, Syy .125
    # D: x~ (-2.5, 2.5), y~ (-.25, .25): Sxy 1.25, Sxx 12.5, Syy .125
    w = within_cell(rows, "S5")
    assert (w.cells, w.rows) == (3, 7)
    assert w.slope == pytest.approx((1 + .5 + 1.25) / (8 + 2 + 12.5))
    assert w.r == pytest.approx(2.75 / math.sqrt(22.5 * (1 / 6 + .125 + .125)))
    # Single-field arms (j, p, t): cells A and D -> slope 2.25 / 20.5
    ws = within_cell(rows, "S5", ("j", "p", "t"))
    assert (ws.cells, ws.rows, ws.slope) == (2, 5, pytest.approx(2.25 / 20.5))
    # j alone: cell A -> slope 1/8, r = 1 / sqrt(8 * 1/6)
    wj = within_cell(rows, "S5", ("j",))
    assert (wj.cells, wj.rows) == (1, 3)
    assert wj.slope == pytest.approx(1 / 8) and wj.r == pytest.approx(1 / math.sqrt(8 / 6))


def test_within_cell_equals_ols_with_cell_dummies():
    rows = _cells_frame()
    df = rows.filter(pl.col("headings_carried").is_not_null()).with_columns(
        (pl.col("checks_passed") / 14).alias("y"),
        pl.concat_str("configuration", "arm", "execution_group", separator="|").alias("cell"))
    cells = sorted(set(df["cell"]))
    dummies = np.array([[float(c == k) for k in cells] for c in df["cell"]])
    X = np.column_stack([df["headings_carried"].to_numpy().astype(float), dummies])
    ols = sm.OLS(df["y"].to_numpy(), X).fit()
    assert within_cell(rows, "S5").slope == pytest.approx(ols.params[0], abs=1e-10)


def test_no_informative_cell_is_nan_with_reason():
    rows = rows_frame([{"configuration": "c", "arm": "q", "headings_carried": 5, "checks_passed": p} for p in (0, 14)])
    w = within_cell(rows, "S5")
    assert (w.cells, w.rows) == (0, 0)
    assert math.isnan(w.slope) and math.isnan(w.r) and "no informative cell" in w.reason
    # zero variance in recall inside informative cells: slope 0 is defined, r is not.
    # 1/14 six times: the float cell mean is 1/14 - 1.4e-17, the residuals must still be exactly 0.
    rows2 = rows_frame([{"configuration": "c", "arm": "j", "headings_carried": h, "checks_passed": 1}
                        for h in (0, 1, 2, 3, 4, 5)])
    w2 = within_cell(rows2, "S5")
    assert w2.slope == 0.0 and math.isnan(w2.r) and "zero variance" in w2.reason


def test_headings_analysis_bundles_the_three_fits(pkg):
    h = headings_analysis(pkg.rows, "S5", "j", DEFAULT_PARAMS)
    assert h.within_all.cells == 3 and h.within_single_field.arms == ("j", "p", "t")
    assert h.within_control.arms == ("j",)
    assert h.table_single_field.arms == ("j", "p", "t")
    assert sum(lv.rows for lv in h.table_single_field.levels) == 7  # the seven valid S5 j rows


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 14)), min_size=2, max_size=30),
       st.lists(st.integers(-3, 3), min_size=4, max_size=4))
def test_within_cell_invariant_to_cell_level_shifts(data, shifts):
    # Adding a constant to every row of a cell (headings) leaves the within-cell fit unchanged.
    base = [{"configuration": f"c{c}", "arm": "j", "headings_carried": h, "checks_passed": p} for c, h, p in data]
    shifted = [dict(r, headings_carried=r["headings_carried"] + 10 + shifts[int(r["configuration"][1:])]) for r in base]
    w1 = within_cell(rows_frame(base), "S5")
    w2 = within_cell(rows_frame(shifted), "S5")
    assert (w1.cells, w1.rows) == (w2.cells, w2.rows)
    for a, b in ((w1.slope, w2.slope), (w1.r, w2.r)):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-9)
    if not math.isnan(w1.r):
        assert -1 <= w1.r <= 1
