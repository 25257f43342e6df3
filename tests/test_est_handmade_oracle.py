"""Oracle tests of the core estimators on the hand-made package.

Every expected number is a hand derivation (tests/fixtures/handmade/README.md,
restated here) or an independent library value (scipy, numpy). Two README
lines carry arithmetic slips; the corrected derivations are written out below
and were reported to the lead:
  * panel dispersion half-width: 4.302653 * 0.381881 = 1.643103 (README 1.643098);
  * alpha-1 bound hi: (0 + 1 + 0.5)/3 = 0.5 (README 0.833333), so the panel hi is
    (0.5 + 0 + 0.833333)/3 = 0.444444 (README 0.555556).
"""

from __future__ import annotations

import datetime
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.estimators import bounds, cells, dependence, families, paired
from analysis.estimators.common import (
    EstimatorError,
    InconsistentTotalsError,
    contrast_of,
    runs_frame,
)
from analysis.params import DEFAULT_PARAMS
from est_loader_support import load_handmade


@pytest.fixture(scope="module")
def package():
    return load_handmade()


@pytest.fixture(scope="module")
def panel(package):
    study = package.study
    return paired.panel(package.rows, runs_frame(study), contrast_of(study),
                        recency_cutoff=study.recency_cutoff, params=DEFAULT_PARAMS)


def test_configuration_effects(panel):
    # alpha-1: pairs r1 (1.0 - 1.0 = 0), r2 (1.0 - 0.0 = 1); r3 has no valid q -> (0 + 1)/2 = 1/2;
    #   j rows 3 (1, 0, .5: mean .5), q rows 2 (mean 1).
    # alpha-2: r1 0 - .5, r2 .5 - 1 -> -1/2; r3 j invalid, no q row; 2 and 2 rows.
    # beta-1: r1 1 - 0 (the retried q is the valid one), r3 1 - .5 -> 3/4; r2 j invalid
    #   (catchup, has an outcome but is not valid); j rows 2 (mean .25), q rows 3 (mean 1).
    got = {e.configuration: e for e in panel.effects}
    expect = {"acme/alpha-1": (Fraction(1, 2), 2, 3, 2, 0.5, 1.0),
              "acme/alpha-2": (Fraction(-1, 2), 2, 2, 2, 0.75, 0.25),
              "beta/beta-1": (Fraction(3, 4), 2, 2, 3, 0.25, 1.0)}
    assert set(got) == set(expect)
    for name, (eff, pairs, cr, tr, cm, tm) in expect.items():
        e = got[name]
        assert e.effect_exact == eff and e.effect == float(eff)
        assert (e.pairs, e.control_rows, e.treatment_rows) == (pairs, cr, tr)
        assert e.control_mean == pytest.approx(cm) and e.treatment_mean == pytest.approx(tm)


def test_panel_summary(panel):
    s = panel.summary
    # mean 0.75/3; sorted [-.5, .5, .75]: median .5, q1 (pos .5) 0.0, q3 (pos 1.5) .625.
    assert (s.configurations, s.mean, s.median, s.q1, s.q3) == (3, 0.25, 0.5, 0.0, 0.625)
    assert (s.min, s.max) == (-0.5, 0.75)
    assert (s.positive, s.negative, s.zero) == (2, 1, 0)
    # leave-one-out means 0.125, 0.625, 0.0.
    assert (s.loo_min, s.loo_max) == (0.0, 0.625)
    # numpy's default percentile is R's type 7 (independent of our ordering code).
    np.testing.assert_allclose([s.q1, s.median, s.q3], np.percentile([0.5, -0.5, 0.75], [25, 50, 75]))
    # sd = sqrt(0.875/2) = 0.661438, se = 0.381881, t(.975, 2) = 4.302653 -> +/- 1.643103.
    lo, hi = stats.t.interval(0.95, 2, loc=0.25, scale=math.sqrt(0.875 / 2) / math.sqrt(3))
    assert s.dispersion_lo == pytest.approx(lo, abs=1e-12)
    assert s.dispersion_hi == pytest.approx(hi, abs=1e-12)
    assert s.dispersion_lo == pytest.approx(-1.393103, abs=1e-6)
    assert s.dispersion_hi == pytest.approx(1.893103, abs=1e-6)
    assert dict(s.reasons) == {}


def test_sparse_subsets(panel):
    # No configuration has >= 4 pairs: empty, mean and median undefined (NaN with a reason).
    k4 = paired.min_pairs_subset(panel, 4, 0.05)
    assert k4.summary.configurations == 0
    assert math.isnan(k4.summary.mean) and math.isnan(k4.summary.median)
    assert "no configurations" in k4.summary.reasons["mean"]
    # Equal counts: only alpha-2 (2 j = 2 q).
    eq = paired.equal_counts_subset(panel, 0.05)
    assert eq.configurations == ("acme/alpha-2",)
    assert (eq.summary.mean, eq.summary.median) == (-0.5, -0.5)
    assert math.isnan(eq.summary.dispersion_lo) and "fewer than two" in eq.summary.reasons["dispersion_lo"]
    # Named exclusion: drop beta-1 -> mean of (.5, -.5) = 0.
    ex = paired.excluded_subset(panel, ["beta/beta-1"], 0.05)
    assert ex.summary.configurations == 2 and ex.summary.mean == 0.0
    # Each excluded: means are the LOO means; medians of two values equal their mean.
    each = paired.each_excluded(panel)
    np.testing.assert_allclose(each.mean, [0.125, 0.625, 0.0])
    np.testing.assert_allclose(each.median, [0.125, 0.625, 0.0])


def test_bounds(package, panel):
    # alpha-1 r3 (j .5, q missing): lo 0 - .5, hi 1 - .5 -> lo (0 + 1 - .5)/3 = 1/6,
    #   hi (0 + 1 + .5)/3 = 1/2.
    # alpha-2 r3 (both missing): [-1, 1] -> lo (-.5 - .5 - 1)/3 = -2/3, hi (-.5 - .5 + 1)/3 = 0.
    # beta-1 r2 (j missing, q 1): [0, 1] -> lo (1 + 0 + .5)/3 = 1/2, hi (1 + 1 + .5)/3 = 5/6.
    # panel lo (1/6 - 2/3 + 1/2)/3 = 0; hi (1/2 + 0 + 5/6)/3 = 4/9.
    b = bounds.planned_repeat_bounds(package.rows, panel)
    per = {r["configuration"]: (r["lo"], r["hi"]) for r in b.per_configuration.iter_rows(named=True)}
    assert per["acme/alpha-1"] == pytest.approx((1 / 6, 1 / 2))
    assert per["acme/alpha-2"] == pytest.approx((-2 / 3, 0.0))
    assert per["beta/beta-1"] == pytest.approx((1 / 2, 5 / 6))
    assert b.lo == pytest.approx(0.0, abs=1e-15) and b.hi == pytest.approx(4 / 9)
    assert (b.planned_repeats, b.missing_control, b.missing_treatment, b.missing_both) == (9, 2, 2, 1)


def test_families(panel):
    # acme (.5 - .5)/2 = 0, beta .75 -> 0.375; lofo [0, .75];
    # sd = .75/sqrt 2, se = .375, t(.975, 1) = 12.706205 -> [-4.389827, 5.139827].
    f = families.family_weighted(panel.frame, 0.05)
    assert (f.families, f.mean, f.lofo_min, f.lofo_max) == (2, 0.375, 0.0, 0.75)
    lo, hi = stats.t.interval(0.95, 1, loc=0.375, scale=0.375)
    assert (f.dispersion_lo, f.dispersion_hi) == (pytest.approx(lo), pytest.approx(hi))
    assert f.dispersion_lo == pytest.approx(-4.389827, abs=1e-6)
    assert f.dispersion_hi == pytest.approx(5.139827, abs=1e-6)


def test_dependence(package):
    # Valid S5 rows with an outcome: 16 (c2-j is invalid; a3-q, b3-j and c1-q-try1 have no
    # outcome; S1 rows are another scenario). Checks passed: 14 on 9 rows (a1-j, a1-q, a2-q,
    # b2-j, c1-q, c2-q, c3-q, a1-m, a2-m), 7 on 4 (a3-j, b1-j, b2-q, c3-j), 0 on 3 (a2-j, b1-q, c1-j).
    # k = 14, n = 16, grand mean p = (9*14 + 4*7)/(16*14) = 154/224 = 0.6875.
    # SSB = k * sum (p_i - p)^2 = 14 * (9*.3125^2 + 4*.1875^2 + 3*.6875^2) = 14 * 2.4375 = 34.125
    # MSB = 34.125 / 15 = 91/40 = 2.275
    # SSW = sum k p_i (1 - p_i) = 4 rows * 14 * .25 = 14;  MSW = 14 / (16 * 13) = 7/104
    # ICC = (91/40 - 7/104) / (91/40 + 13 * 7/104) = (1148/520) / (1638/520) = 82/117 = 0.700855
    # design effect = 1 + 13 * 82/117 = 91/9 = 10.111111; effective = 14 / (91/9) = 18/13 = 1.384615
    d = dependence.within_row_dependence(package.rows, package.checks, "S5")
    assert (d.scenario, d.rows, d.checks_per_row) == ("S5", 16, 14)
    assert d.msb == pytest.approx(91 / 40) and d.msw == pytest.approx(7 / 104)
    assert d.icc == pytest.approx(82 / 117, rel=1e-12)
    assert d.design_effect == pytest.approx(91 / 9, rel=1e-12)
    assert d.effective_per_row == pytest.approx(18 / 13, rel=1e-12)


def test_dependence_s1_is_undefined_not_zero(package):
    # S1 has two rows (j 2/7, q 7/7): defined; a scenario with no rows is undefined.
    d = dependence.within_row_dependence(package.rows, package.checks, "S9")
    assert d.rows == 0 and math.isnan(d.icc) and d.reasons["icc"]


def test_cells(package):
    t = cells.cell_summary(package.rows, DEFAULT_PARAMS).table
    row = t.filter((t["configuration"] == "acme/alpha-1") & (t["arm"] == "j")
                   & (t["scenario"] == "S5")).row(0, named=True)
    # a1-j 14/14, a2-j 0/14, a3-j 7/14: mean .5, >= .5 twice, full once;
    # carried (8200 + 9500 + 9000)/3 = 8900; fill mean of 8200/9600, 9500/9600, 9000/9600;
    # folds 15, clipped 1 (a2-j), parse failures 2 (a3-j).
    assert (row["rows"], row["mean_recall"], row["rows_partial"], row["rows_full"]) == (3, 0.5, 2, 1)
    assert row["mean_carried_chars"] == pytest.approx(8900.0)
    assert row["mean_fill"] == pytest.approx((8200 + 9500 + 9000) / 3 / 9600)
    assert (row["folds"], row["folds_clipped"], row["parse_failures"]) == (15, 1, 2)
    m = t.filter(t["arm"] == "m").row(0, named=True)
    # m rows declare no allowance: fill is null with 0 contributing rows, never 0.
    assert m["mean_fill"] is None and m["fill_rows"] == 0 and m["rows"] == 2
    no_group = cells.cell_summary(package.rows, DEFAULT_PARAMS, by_execution_group=False)
    assert "execution_group" not in no_group.table.columns
    assert no_group.table.height == 9


def test_two_runs_for_one_configuration_are_rejected(package):
    study = package.study
    runs = runs_frame(study)
    doubled = pl.concat([runs, runs.head(1).with_columns(execution_group=pl.lit("g9"))])
    with pytest.raises(EstimatorError, match="at most one partition run"):
        paired.panel(package.rows, doubled, contrast_of(study),
                     recency_cutoff=study.recency_cutoff, params=DEFAULT_PARAMS)


def test_everything_out_of_window_is_undefined_not_zero(package):
    # A cutoff after every publication date empties the panel: counts 0, statistics NaN
    # with reasons; bounds and families likewise.
    study = package.study
    p = paired.panel(package.rows, runs_frame(study), contrast_of(study),
                     recency_cutoff=datetime.date(2030, 1, 1), params=DEFAULT_PARAMS)
    s = p.summary
    assert s.configurations == 0 and (s.positive, s.negative, s.zero) == (0, 0, 0)
    assert all(math.isnan(getattr(s, f)) for f in ("mean", "median", "q1", "loo_min", "dispersion_hi"))
    assert set(s.reasons) >= {"mean", "median", "q1", "q3", "min", "max", "loo_min", "dispersion_lo"}
    b = bounds.planned_repeat_bounds(package.rows, p)
    assert b.configurations == 0 and math.isnan(b.lo) and b.reasons["lo"]
    f = families.family_weighted(p.frame, 0.05)
    assert f.families == 0 and math.isnan(f.mean) and f.reasons["mean"]


def test_inconsistent_totals_are_rejected(package):
    rows = package.rows.with_columns(
        checks_total=pl.when(pl.col("row_id") == "a1-j").then(15).otherwise(pl.col("checks_total")))
    study = package.study
    with pytest.raises(InconsistentTotalsError, match="checks_total"):
        paired.panel(rows, runs_frame(study), contrast_of(study),
                     recency_cutoff=study.recency_cutoff, params=DEFAULT_PARAMS)
