"""Exact paired McNemar: the paper's examples, exact-rational and statsmodels cross-checks, the hand-made package.

The engine is scipy (binomtest for p, binom's cdf and pmf for the mid-p), so the oracles here are not scipy:
the paper's hand values, and the binomial tails summed in exact rationals (sum of C(n, i) / 2^n, Python's
math.comb and fractions) in _exact_tails.
"""

from __future__ import annotations

import math
from fractions import Fraction

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from analysis.estimators import exact
from est_handmade_support import rows_frame
from est_loader_support import ROWS_SCHEMA, load_handmade


def block_rows(blocks: list[tuple[str, int | None, int | None]], first: str, second: str,
               total: int = 14) -> pl.DataFrame:
    """Rows for blocks (configuration, first passed, second passed); None = no valid row."""
    recs = []
    for i, (config, a, b) in enumerate(blocks):
        for arm, passed in ((first, a), (second, b)):
            if passed is not None:
                recs.append({"row_id": f"{i}-{arm}", "scenario": "S5", "configuration": config,
                             "execution_group": "g", "repeat": i + 1, "arm": arm, "valid": True,
                             "checks_total": total, "checks_passed": passed})
    return pl.DataFrame(recs, schema={k: ROWS_SCHEMA[k] for k in recs[0]})


def test_paper_43_q_versus_m_full_recall():
    # Paper 4.3: q full on 1 of 10, m on 8 of 10; seven pairs full only under m, one under
    # both, two under neither -> b (only q) = 0, c (only m) = 7: p = 2 * 0.5^7 = 0.015625.
    blocks = [("c", 13, 14)] * 7 + [("c", 14, 14)] + [("c", 3, 10)] * 2
    r = exact.paired_mcnemar(block_rows(blocks, "q", "m"), "q", "m", scenario="S5", threshold=1.0)
    c = r.complete
    assert (c.b, c.c, c.both, c.neither) == (0, 7, 1, 2)
    assert c.p_value == 0.015625
    # mid-p: 2 * P(X <= 0) - P(X = 0) = 1/128.
    assert c.mid_p == pytest.approx(1 / 128, rel=1e-12)  # scipy's binom pmf, float


def test_paper_45_j_versus_t_with_missing_partner():
    # Paper 4.5: 15 complete blocks: 5 cross 0.5 only under j, 1 only under t, 2 under both,
    # 7 under neither -> p = 2 * P(Bin(6, .5) <= 1) = 2 * 7/64 = 0.21875.
    # One further t row below 0.5 has no valid j partner:
    #   missing j as failure -> (fail, fail) is concordant: b = 5, c = 1, p stays 0.21875;
    #   missing j as success -> (success, fail) is discordant for j: b = 6, c = 1,
    #   p = 2 * P(Bin(7, .5) <= 1) = 2 * 8/128 = 0.125.
    blocks = ([("c", 10, 2)] * 5 + [("c", 1, 9)] + [("c", 7, 8)] * 2 + [("c", 0, 3)] * 7
              + [("c", None, 4)])
    r = exact.paired_mcnemar(block_rows(blocks, "j", "t"), "j", "t", scenario="S5", threshold=0.5)
    assert (r.complete.b, r.complete.c, r.complete.both, r.complete.neither) == (5, 1, 2, 7)
    assert r.complete.p_value == pytest.approx(0.21875, abs=0)
    assert (r.missing_as_failure.b, r.missing_as_failure.c, r.missing_as_failure.neither) == (5, 1, 8)
    assert r.missing_as_failure.p_value == 0.21875
    assert (r.missing_as_success.b, r.missing_as_success.c) == (6, 1)
    assert r.missing_as_success.p_value == 0.125
    assert (r.first_only, r.second_only) == (0, 1)


def test_arms_swap_the_signed_counts():
    blocks = [("c", 10, 2)] * 5 + [("c", 1, 9)]
    rows = block_rows(blocks, "j", "t")
    a = exact.paired_mcnemar(rows, "j", "t", scenario="S5", threshold=0.5).complete
    b = exact.paired_mcnemar(rows, "t", "j", scenario="S5", threshold=0.5).complete
    assert (a.b, a.c) == (b.c, b.b) == (5, 1) and a.p_value == b.p_value


def test_handmade_j_versus_q():
    # Blocks on S5 with j and q: a1 (14, 14), a2 (0, 14), a3 (7, -), b1 (7, 0), b2 (14, 7),
    # c1 (0, 14), c2 (-, 14) (c2-j invalid), c3 (7, 14); b3 has neither.
    # >= .5: complete b = 1 (b1), c = 2 (a2, c1), both 3 (a1, b2, c3): p = 2 * 4/8 -> 1,
    #   mid-p = 1 - P(X = 1) = 1 - 3/8 = 0.625. Missing as failure adds a3 to b and c2 to c.
    pk = load_handmade()
    r = exact.paired_mcnemar(pk.rows, "j", "q", scenario="S5", threshold=0.5)
    assert (r.complete.b, r.complete.c, r.complete.both, r.complete.neither) == (1, 2, 3, 0)
    assert r.complete.p_value == 1.0 and r.complete.mid_p == pytest.approx(0.625, rel=1e-12)
    assert (r.missing_as_failure.b, r.missing_as_failure.c) == (2, 3)
    assert (r.missing_as_success.b, r.missing_as_success.c, r.missing_as_success.both) == (1, 2, 5)
    # == 1.0: complete b = 1 (b2: j 14, q 7), c = 3 (a2, c1, c3), both 1 (a1), neither 1
    # (b1: j 7, q 0): p = 2 * P(Bin(4, .5) <= 1) = 2 * 5/16 = 0.625.
    f = exact.paired_mcnemar(pk.rows, "j", "q", scenario="S5", threshold=1.0).complete
    assert (f.b, f.c, f.both, f.neither, f.p_value) == (1, 3, 1, 1, 0.625)


def test_no_blocks_is_undefined_not_zero():
    pk = load_handmade()
    r = exact.paired_mcnemar(pk.rows, "j", "q", scenario="S9", threshold=0.5)
    assert r.complete.pairs == 0 and math.isnan(r.complete.p_value) and r.complete.reason


def test_same_arm_is_rejected():
    with pytest.raises(exact.EstimatorError, match="two different arms"):
        exact.paired_mcnemar(load_handmade().rows, "j", "j", scenario="S5", threshold=0.5)


def _exact_tails(b: int, c: int) -> tuple[float, float]:
    """Oracle: p = min(1, 2 P(X <= m)), mid-p = min(1, 2 P(X <= m) - P(X = m)), X ~ Bin(b + c, 1/2), in exact
    rationals (then rounded once to float)."""
    n, m = b + c, min(b, c)
    pmf = Fraction(math.comb(n, m), 2**n)
    cdf = Fraction(sum(math.comb(n, i) for i in range(m + 1)), 2**n)
    return float(min(1, 2 * cdf)), float(min(1, 2 * cdf - pmf))


@settings(max_examples=150, deadline=None)
@given(b=st.integers(0, 60), c=st.integers(0, 60), both=st.integers(0, 20), neither=st.integers(0, 20))
def test_p_matches_exact_rationals_and_statsmodels(b, c, both, neither):
    p, mid = exact.exact_p(b, c)
    sm = sm_mcnemar([[both, b], [c, neither]], exact=True)
    assert p == pytest.approx(sm.pvalue, rel=1e-12, abs=1e-15)
    if b + c:
        want_p, want_mid = _exact_tails(b, c)
        assert p == pytest.approx(want_p, rel=1e-12)
        assert mid == pytest.approx(want_mid, rel=1e-12, abs=1e-15)
        # A second form of the mid-p: 2 * (P(X < m) + P(X = m) / 2), capped at 1.
        m, n = min(b, c), b + c
        ref = min(1.0, 2 * (stats.binom.cdf(m - 1, n, 0.5) + 0.5 * stats.binom.pmf(m, n, 0.5)))
        assert mid == pytest.approx(ref, rel=1e-12, abs=1e-15)


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
@settings(max_examples=30, deadline=None)
@given(b=st.integers(2001, 4000), c=st.integers(1500, 4000))
def test_large_counts_match_exact_rationals(b, c):
    p, _ = exact.exact_p(b, c)
    assert p == pytest.approx(_exact_tails(b, c)[0], rel=1e-9, abs=1e-300)


def _mcnemar_rows(blocks: list[tuple[int | None, int | None]]) -> pl.DataFrame:
    """One block (repeat) per tuple: (j checks passed, q checks passed) of 14; None = no row."""
    recs = []
    for rep, pair in enumerate(blocks, start=1):
        for arm, passed in zip(("j", "q"), pair, strict=True):
            if passed is not None:
                recs.append({"row_id": f"{rep}-{arm}", "configuration": "c", "repeat": rep, "arm": arm,
                             "checks_passed": passed})
    return rows_frame(recs)


# ---------------------------------------------------------------------------- mid-p McNemar
@pytest.mark.parametrize("b", range(13))
@pytest.mark.parametrize("c", range(13))
def test_exact_p_and_mid_p_match_exact_rationals(b: int, c: int) -> None:
    # Oracle (not scipy, the engine): the binomial tails in exact rationals, sum of C(n, i) / 2^n over
    # i <= m = min(b, c): p = min(1, 2 P(X <= m)), mid-p = min(1, 2 P(X < m) + P(X = m)) (Fagerland,
    # Lydersen & Laake 2013). The first test (test_est_exact) checks one hand value, b = 0, c = 7.
    n, m = b + c, min(b, c)
    p, mid = exact.exact_p(b, c)
    if n == 0:
        assert (p, mid) == (1.0, 1.0)
        return
    below = Fraction(sum(math.comb(n, i) for i in range(m)), 2**n)
    at = Fraction(math.comb(n, m), 2**n)
    want_p, want_mid = float(min(1, 2 * (below + at))), float(min(1, 2 * below + at))
    assert p == pytest.approx(want_p, rel=1e-12, abs=1e-15)
    assert mid == pytest.approx(want_mid, rel=1e-12, abs=1e-15)
    assert mid <= p


def test_mid_p_through_paired_mcnemar_by_hand() -> None:
    # Three j-only successes and one q-only success (threshold 0.5 = 7 of 14): b = 3, c = 1.
    # n = 4, m = 1: P(X <= 1) = (1 + 4)/16 = 5/16, P(X = 1) = 4/16.
    # p = 2 * 5/16 = 0.625; mid-p = 10/16 - 4/16 = 6/16 = 0.375.
    r = exact.paired_mcnemar(_mcnemar_rows([(14, 0), (7, 6), (10, 3), (0, 14)]), "j", "q",
                             scenario="S5", threshold=0.5)
    assert (r.complete.b, r.complete.c) == (3, 1)
    assert (r.complete.p_value, r.complete.mid_p) == (0.625, 0.375)


# ---------------------------------------------------------------------------- missing-as-success McNemar
def test_missing_as_success_by_hand() -> None:
    # Oracle: the block table below, counted by hand (threshold 0.5: >= 7 of 14 succeeds).
    #   block  j     q     complete   missing as failure   missing as success
    #   1      14    14    both       both                 both
    #   2      14    -     -          b  (q -> fail)       both (q -> success)
    #   3      14    -     -          b                    both
    #   4      0     -     -          neither              c  (j fails, q -> success)
    #   5      -     0     -          neither              b  (j -> success, q fails)
    #   6      -     14    -          c  (j -> fail)       both
    #   7      0     14    c          c                    c
    # complete: b 0, c 1, both 1 (pairs 2). as failure: b 2, c 2, both 1, neither 2 (pairs 7).
    # as success: b 1, c 2, both 4, neither 0 (pairs 7); n = 3, m = 1: p = 2 * 4/8 = 1.0,
    # mid-p = 1.0 - 3/8 = 0.625.
    rows = _mcnemar_rows([(14, 14), (14, None), (14, None), (0, None), (None, 0), (None, 14), (0, 14)])
    r = exact.paired_mcnemar(rows, "j", "q", scenario="S5", threshold=0.5)
    s, f, c = r.missing_as_success, r.missing_as_failure, r.complete
    assert (c.b, c.c, c.both, c.neither, c.pairs) == (0, 1, 1, 0, 2)
    assert (f.b, f.c, f.both, f.neither, f.pairs) == (2, 2, 1, 2, 7)
    assert (s.b, s.c, s.both, s.neither, s.pairs) == (1, 2, 4, 0, 7)
    assert s.p_value == 1.0 and s.mid_p == pytest.approx(0.625, rel=1e-12)  # scipy's binom, float
    assert (r.first_only, r.second_only) == (3, 2)  # j only: 2, 3, 4; q only: 5, 6

