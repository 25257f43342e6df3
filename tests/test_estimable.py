"""Estimability (analysis/estimators/estimable.py): an interval, test or variance that is undefined or
identically zero on the data is "not estimable" with a reason, never a number or a zero-width interval.

Oracles: R refuses each of these (issue 30's re-derivation): ``t.test(c(0, 0, 0))`` stops with "data are
essentially constant"; ``mcnemar.test`` / ``binom.test`` have nothing to test without a discordant pair
(statsmodels' exact McNemar returns p = 1 there, a number the data do not support); ``survfit(Surv(t, e) ~ 1,
cluster = row)`` gives NA standard errors where S = 1 or S = 0 and with one cluster. By hand: the
cluster-robust variance of S is a sum over clusters of squared influences that sum to 0, so one cluster, or
clusters with equal influence, give exactly 0.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.estimators import estimable, exact
from analysis.estimators.common import t_interval
from analysis.estimators.hodges_lehmann import hodges_lehmann
from analysis.estimators.survival import kaplan_meier


def test_t_interval_of_constant_values_is_not_estimable() -> None:
    lo, hi, why = t_interval(np.zeros(3), 0.05)  # the load ladder's "+0.00 [+0.00, +0.00]"
    assert math.isnan(lo) and math.isnan(hi)
    assert why is not None and "no spread" in why and "all 3 values are equal" in why
    lo, hi, why = t_interval(np.array([0.0, 0.5, 0.0]), 0.05)
    assert why is None and lo < 0 < hi


def test_t_interval_matches_the_closed_form_for_two_degrees_of_freedom() -> None:
    # Oracle by hand (not scipy, the engine): for df = 2 the t quantile has the closed form
    # t_p = (2p - 1) / sqrt(2 p (1 - p)), so t_0.975 = 0.95 / sqrt(0.04875) = 4.3026527...
    # (R: qt(0.975, 2) = 4.302653). Values 0, 0.5, 0: mean 1/6, sd sqrt(1/12), se = sd / sqrt(3) = 1/6,
    # so R's t.test(c(0, 0.5, 0))$conf.int is 1/6 -/+ t_0.975 / 6 = [-0.5504421, 0.8837755].
    half = 0.95 / math.sqrt(2 * 0.975 * 0.025) / 6
    lo, hi, why = t_interval(np.array([0.0, 0.5, 0.0]), 0.05)
    assert why is None
    assert (lo, hi) == pytest.approx((1 / 6 - half, 1 / 6 + half), rel=1e-12)
    assert (lo, hi) == pytest.approx((-0.5504421, 0.8837755), abs=1e-7)


@settings(max_examples=50, deadline=None)
@given(st.floats(-1, 1, allow_nan=False), st.integers(2, 30))
def test_t_interval_never_has_zero_width(value: float, n: int) -> None:
    lo, hi, why = t_interval(np.full(n, value), 0.05)
    assert why is not None and math.isnan(lo) and math.isnan(hi)


def test_mcnemar_without_a_discordant_pair_is_not_estimable() -> None:
    r = exact.counts(np.array([False, False, True]), np.array([False, False, True]))  # the pilot's 0 + 0
    assert (r.b, r.c, r.both, r.neither) == (0, 0, 1, 2)
    assert math.isnan(r.p_value) and math.isnan(r.mid_p)
    assert r.reason is not None and "no discordant pair" in r.reason
    one = exact.counts(np.array([True, False]), np.array([False, False]))
    assert one.reason is None and one.p_value == 1.0  # b = 1, c = 0: 2 * 1/2, a defined test


def test_survival_interval_at_s_one_and_with_one_row_is_not_estimable() -> None:
    km = kaplan_meier([3, 3, 3, 3], [False] * 4, 0.05, clusters=["a", "a", "b", "b"])  # nothing lost: S = 1
    entry, last = km.row(0, named=True), km.row(-1, named=True)
    assert last["survival"] == 1.0
    # at entry the rows interval is not estimable; after it, no loss yet gives the exact no-loss bound
    # [(alpha/2)^(1/2), 1] over the 2 rows at risk (issue 35), which has width
    assert entry["ci_rows_lo"] is None and "S = 1" in entry["ci_rows_reason"]
    assert last["ci_rows_lo"] == pytest.approx(0.025 ** 0.5) and last["ci_rows_hi"] == 1.0
    assert last["ci_values_lo"] is None and "S = 1" in last["ci_values_reason"]
    lost = kaplan_meier([1, 1], [True, True], 0.05, clusters=["a", "b"]).row(-1, named=True)  # S = 0
    assert lost["survival"] == 0.0 and lost["ci_rows_lo"] is None and "S = 0" in lost["ci_rows_reason"]
    one_row = kaplan_meier([1, 3, 3], [True, False, False], 0.05, clusters=["a", "a", "a"]).row(-1, named=True)
    assert 0 < one_row["survival"] < 1
    assert one_row["ci_rows_lo"] is None and "1 row: it needs at least 2 rows" in one_row["ci_rows_reason"]
    assert one_row["ci_values_lo"] is not None  # three values: Greenwood has a variance


def test_survival_intervals_never_have_zero_width() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(1, 12))
        km = kaplan_meier(rng.integers(0, 4, n), rng.random(n) < 0.5, 0.05, clusters=rng.integers(0, 3, n))
        for r in km.iter_rows(named=True):
            for side in ("rows", "values"):
                lo, hi = r[f"ci_{side}_lo"], r[f"ci_{side}_hi"]
                assert (lo is None) == (r[f"ci_{side}_reason"] is not None)
                assert lo is None or hi > lo


def test_hodges_lehmann_uses_the_rule() -> None:
    r = hodges_lehmann([0.1, 0.1, 0.1, 0.1], 0.05)
    assert r.lo is None and r.reason is not None


def test_reason_phrases() -> None:
    assert estimable.not_estimable("x") == "not estimable: x"
    assert estimable.too_few(1, "configuration") == "1 configuration: it needs at least 2 configurations"
    assert estimable.too_few(0, "row") == "no rows: it needs at least 2 rows"
    assert estimable.too_few(2, "row") is None
    assert estimable.zero_width(0.2, 0.2, 3, "pair") is not None and estimable.zero_width(0.1, 0.2, 3) is None


def test_dose_response_rung_with_constant_differences_has_no_interval() -> None:
    import datetime as dt
    from types import MappingProxyType

    from analysis.estimators.dose_response import dose_response
    from analysis.evidence.model import Configuration, LadderRung, PartitionRun, Study
    from analysis.params import DEFAULT_PARAMS

    rung = "g1-d0-c150-f2"
    conf = Configuration("m", "fam", dt.date(2026, 1, 1), None, None)
    study = Study("ladder", dt.date(2025, 1, 1), "j", "q", rung, MappingProxyType({"m": conf}),
                  (PartitionRun("m", "g", 3),), None, "pilot", (LadderRung(rung, rung, 1, 0, 150, 2),))
    rows = pl.DataFrame([{"row_id": f"{arm}{rep}", "scenario": rung, "configuration": "m", "execution_group": "g",
                          "repeat": rep, "arm": arm, "valid": True, "checks_total": 2, "checks_passed": 0}
                         for arm in ("j", "q") for rep in (1, 2, 3)])  # recall 0 on every row
    p = dose_response(rows, study, DEFAULT_PARAMS).paired.row(0, named=True)
    assert p["effect"] == 0.0 and p["lo"] is None and p["hi"] is None
    assert "no spread" in p["reason"]


def test_exact_p_alone_is_unchanged() -> None:
    assert exact.exact_p(0, 0) == (1.0, 1.0)  # the pairing ranges still read it; counts() is what says why


def test_no_survival_curve_from_one_row_per_arm() -> None:
    """One row per arm: a curve and its row-cluster interval need at least 2 rows with a captured value, so
    the curves table and figure are left out and one sentence says why (issue 30)."""
    from analysis.estimators.survival import curves_reason

    one = pl.concat([kaplan_meier([1], [True], 0.05).with_columns(arm=pl.lit("j")),
                     kaplan_meier([2], [False], 0.05).with_columns(arm=pl.lit("q"))])
    why = curves_reason(one)
    assert why == ("arm j: 1 value captured at entry in 1 row; arm q: 1 value captured at entry in 1 row; "
                   "a survival curve needs at least 2 rows with a captured value")
    two = kaplan_meier([1, 2, 2], [True, False, False], 0.05, clusters=["a", "b", "b"]).with_columns(arm=pl.lit("m"))
    assert curves_reason(pl.concat([one, two])) is None  # arm m has 2 rows: the curves are estimable


def test_pairing_range_without_any_discordant_pair_is_not_estimable() -> None:
    """Every row succeeds under both arms: no pairing has a discordant pair, so there is no p to range over
    (it used to report p = 1 for every pairing)."""
    from analysis.estimators.pairing import pairing_range

    rows = pl.DataFrame([{"row_id": f"{arm}{rep}", "scenario": "S5", "configuration": "m", "execution_group": "g",
                          "repeat": rep, "arm": arm, "valid": True, "checks_total": 14, "checks_passed": 14}
                         for arm in ("j", "q") for rep in (1, 2, 3)])
    runs = pl.DataFrame({"configuration": ["m"], "execution_group": ["g"]})
    r = pairing_range(rows, "j", "q", scenario="S5", threshold=0.5, runs=runs, rng=np.random.default_rng(1),
                      draws=20)
    assert r.pairs == 3 and r.shipped.both == 3 and "no discordant pair" in (r.shipped.reason or "")
    assert math.isnan(r.shipped.p_value) and math.isnan(r.p_lo) and math.isnan(r.p_hi)
    assert "no discordant pair" in (r.reason or "")


def test_dose_response_table_cell_says_why_the_interval_is_missing() -> None:
    from analysis.tables.dose_response import _paired

    cell = _paired({"effect": 0.0, "lo": None, "hi": None, "pairs": 3, "enough_pairs": False,
                    "reason": "interval: all 3 values are equal (+0.000), so they have no spread"}, 4)
    assert cell.startswith("+0.00 (interval not estimable: all 3 values are equal")
    assert "[+0.00, +0.00]" not in cell
