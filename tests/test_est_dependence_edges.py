"""ICC clamp and flag (issue 10): the ICC floor and negative ICCs give no effective-n, with a reason."""
from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.estimators.dependence import DEFF_TOLERANCE, CheckCountError, icc_oneway, within_row_dependence
from est_handmade_support import rows_frame


def test_every_row_passes_seven_of_fourteen():
    # s_i = 7 for all n rows, k = 14: p_i = 1/2 = grand mean, so MSB = 0.
    # MSW = sum s_i (1 - p_i) / (n (k - 1)) = n * 7 * 1/2 / (13 n) = 7/26.
    # ICC = (0 - 7/26) / (0 + 13 * 7/26) = -1/13 (the floor -1/(k-1)); design effect = 1 - 13/13 = 0,
    # which floating point leaves as ~1.1e-16: clamped to 0, and the effective-n is undefined.
    r = icc_oneway(np.full(20, 7), 14)
    assert r.msb == 0.0 and r.msw == pytest.approx(7 / 26)
    assert r.icc == pytest.approx(-1 / 13, rel=1e-12)
    assert r.design_effect == 0.0
    assert math.isnan(r.effective_per_group)
    assert "clamped to 0" in r.reasons["effective_per_group"]


def test_a_negative_icc_gives_no_effective_n_and_says_why():
    # Rows 6, 8, 6, 8 of k = 14: p_i = 3/7, 4/7, grand 1/2.
    # MSB = 14 * 4 * (1/14)^2 / 3 = 2/21 = 0.095238; MSW = (6*8/14 + 8*6/14) * 2 / (4 * 13) = (96/14)/26 = 0.263736
    # ICC = (2/21 - 24/91) / (2/21 + 13 * 24/91) = (-46/273) / (962/273) = -46/962 = -0.047817
    # design effect = 1 - 13 * 46/962 = 0.378378 > 0, so 14 / deff = 37.0 would exceed k = 14: not reported.
    r = icc_oneway(np.array([6, 8, 6, 8]), 14)
    assert r.icc == pytest.approx(-46 / 962, rel=1e-12)
    assert r.design_effect == pytest.approx(1 - 13 * 46 / 962, rel=1e-12)
    assert math.isnan(r.effective_per_group)
    assert "negative" in r.reasons["effective_per_group"]


def test_a_positive_icc_keeps_its_effective_n():
    # Rows 14, 0: p = 1, 0; grand 1/2; MSB = 14 * (1/4 + 1/4) / 1 = 7; MSW = 0; ICC = 1; deff = 14; eff = 1.
    r = icc_oneway(np.array([14, 0]), 14)
    assert (r.icc, r.design_effect, r.effective_per_group) == (1.0, 14.0, 1.0)
    assert "effective_per_group" not in r.reasons


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 14), min_size=2, max_size=30))
def test_effective_n_never_exceeds_k_and_is_never_huge(s):
    r = icc_oneway(np.array(s), 14)
    if math.isnan(r.effective_per_group):
        assert "effective_per_group" in r.reasons
    else:
        assert 1.0 - 1e-9 <= r.effective_per_group <= 14.0 + 1e-9
    assert math.isnan(r.design_effect) or r.design_effect == 0.0 or r.design_effect > DEFF_TOLERANCE


# ---------------------------------------------------------------------------- checks vs rows counts
# Mistake caught: row_check_counts no longer comparing checks.csv's passed count (or its check count)
# with rows.csv, so within_row_dependence silently computes an ICC from counts that disagree. The
# loader rejects such packages, so the frames are built here directly (the estimator is public and
# must defend itself). Rows r0, r1 of k = 3 checks; rows.csv says r0 passed 2, r1 passed 1.
def _dependence_frames(passed_r0: list[bool], passed_r1: list[bool]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = rows_frame([{"configuration": "c", "arm": "j", "checks_total": 3, "checks_passed": 2},
                       {"configuration": "c", "arm": "j", "checks_total": 3, "checks_passed": 1}])
    ids = ["r0"] * len(passed_r0) + ["r1"] * len(passed_r1)
    checks = pl.DataFrame({"row_id": ids, "check": [f"c{i}" for i in range(len(ids))],
                           "passed": passed_r0 + passed_r1})
    return rows, checks


def test_dependence_accepts_agreeing_counts() -> None:
    # Control: the counts agree (r0: 2 of 3, r1: 1 of 3). By hand: p = (2/3, 1/3), grand 1/2,
    # MSB = 3 * 2 * (1/6)^2 / 1 = 1/6; MSW = (2 * 1/3 + 1 * 2/3) / (2 * 2) = 1/3;
    # ICC = (1/6 - 1/3) / (1/6 + 2/3) = -1/5.
    rows, checks = _dependence_frames([True, True, False], [True, False, False])
    d = within_row_dependence(rows, checks, "S5")
    assert (d.rows, d.checks_per_row) == (2, 3)
    assert d.icc == pytest.approx(-0.2, rel=1e-12)


def test_dependence_refuses_passed_counts_that_disagree() -> None:
    # checks.csv has 3 checks for r0 (as rows.csv says) but only 1 passed, not 2.
    rows, checks = _dependence_frames([True, False, False], [True, False, False])
    with pytest.raises(CheckCountError, match=r"'r0': 3 checks / 1 passed there, rows\.csv says 3 / 2"):
        within_row_dependence(rows, checks, "S5")


def test_dependence_refuses_check_counts_that_disagree() -> None:
    # checks.csv has only 2 checks for r1 (rows.csv: 3), with the right passed count 1.
    rows, checks = _dependence_frames([True, True, False], [True, False])
    with pytest.raises(CheckCountError, match=r"'r1': 2 checks / 1 passed there, rows\.csv says 3 / 1"):
        within_row_dependence(rows, checks, "S5")

