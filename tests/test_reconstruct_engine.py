"""The integer solver: oracle cases from Table 3 (hand arithmetic) and split/selection invariants."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.reconstruct.engine import ReconstructionError, distribute, pick_subset, solve_paired


def test_tencent_hy3_row_of_table3():
    # j 0.881 over 3 rows -> 37/42; q 0.661 over 4 rows -> 37/56 = 0.6607; effect -0.024 over 3 pairs -> -1/42.
    # paired q = 37 - 1 = 36, so the unpaired 4th q row holds 37 - 36 = 1 check.
    s = solve_paired((0.881, 3), (0.661, 3), (-0.024, 3), 3, 4, 3, 14)
    assert (s.control.total, s.treatment.total, s.diff.total) == (37, 37, -1)
    assert (s.control_unpaired, s.treatment_unpaired) == (0, 1)


def test_mimo_v25_single_pair():
    # j 0/28 over 2 rows, q 13/14 over 1 row, one pair of effect 13/14 = 0.929: the unpaired j row is 0.
    s = solve_paired((0.0, 3), (0.929, 3), (0.929, 3), 2, 1, 1, 14)
    assert (s.control.total, s.treatment.total, s.diff.total, s.control_unpaired) == (0, 13, 13, 0)


def test_grim_failure_is_replaced_by_the_forced_total_and_flagged():
    # deepseek-v4-flash: j 9/56, effect 44/56 -> q must be 53/56 = 0.9464, printed 0.947 (GRIM failure).
    s = solve_paired((0.161, 3), (0.947, 3), (0.786, 3), 4, 4, 4, 14)
    assert s.treatment.total == 53 and not s.treatment.consistent and s.control.consistent


def test_impossible_structure_is_rejected():
    with pytest.raises(ReconstructionError, match="at least that many rows"):
        solve_paired((0.5, 3), (0.5, 3), (0.0, 3), 2, 2, 3, 14)


def test_near_binary_split_examples():
    assert distribute(37, 4, 14) == [14, 14, 9, 0]
    # granite j, heading-less rows: 33 checks, 4 rows at >= 7 -> [12, 7, 7, 7, 0 x 6]
    assert distribute(33, 10, 14, ge_half=4) == [12, 7, 7, 7, 0, 0, 0, 0, 0, 0]
    with pytest.raises(ReconstructionError):
        distribute(10, 4, 14, ge_half=2)  # two rows at >= 7 need at least 14 checks


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 15), k=st.integers(1, 14), data=st.data())
def test_split_invariants(n, k, data):
    total = data.draw(st.integers(0, n * k))
    rows = distribute(total, n, k)
    assert sum(rows) == total and len(rows) == n and all(0 <= r <= k for r in rows)
    assert sum(1 for r in rows if 0 < r < k) <= 1  # near-binary: at most one partial row
    half = -(-k // 2)
    g = data.draw(st.integers(0, n))
    if g * half <= total <= g * k + (n - g) * (half - 1):
        rows = distribute(total, n, k, ge_half=g)
        assert sum(rows) == total and sum(1 for r in rows if r >= half) == g


@settings(max_examples=60, deadline=None)
@given(vals=st.lists(st.integers(0, 14), min_size=1, max_size=25), data=st.data())
def test_pick_subset_finds_a_planted_subset(vals, data):
    idx = data.draw(st.sets(st.integers(0, len(vals) - 1)))
    chosen = pick_subset(vals, len(idx), sum(vals[i] for i in idx))
    assert len(chosen) == len(idx) and sum(vals[i] for i in chosen) == sum(vals[i] for i in idx)


def test_icc_window_is_the_intersection_of_the_printed_icc_and_design_effect():
    # ICC 0.750 -> [0.7495, 0.7505]; design effect 10.745 = 1 + 13 ICC -> ICC in [9.7445/13, 9.7455/13]
    # = [0.749577, 0.749654]; the intersection is the latter.
    from audit_support import published_claims  # load_claims(data/published/claims.yaml), once per session

    from analysis.reconstruct.icc_fit import window
    lo, hi = window(published_claims())
    assert abs(lo - 9.7445 / 13) < 1e-12 and abs(hi - 9.7455 / 13) < 1e-12
