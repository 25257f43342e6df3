"""GRIM oracle tests (hand arithmetic in comments) and properties of the granularity checks."""
from __future__ import annotations

from fractions import Fraction

from audit_support import published_claims  # load_claims(data/published/claims.yaml), once per session
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.reconstruct.granularity import (
    check_means,
    feasible_row_counts,
    grim_totals,
    is_tie,
    rowround_consistent,
)


def test_0947_of_four_rows_is_impossible():
    # 4 rows x 14 checks = 56: 53/56 = 0.946428... -> 0.946 and 54/56 = 0.964285... -> 0.964; nothing prints 0.947.
    assert grim_totals(0.947, 3, 4, 14) == ()


def test_hand_derived_totals():
    assert grim_totals(0.161, 3, 4, 14) == (9,)       # 9/56 = 0.160714 -> 0.161
    assert grim_totals(0.881, 3, 3, 14) == (37,)      # 37/42 = 0.880952 -> 0.881
    assert grim_totals(0.3, 3, 10, 7) == (21,)        # 21/70 = 0.300 (single-chunk scenario, 7 checks)
    assert grim_totals(-0.024, 3, 3, 14, signed=True) == (-1,)  # -1/42 = -0.02381
    assert grim_totals(0.725, 3, 7, 14) == ()         # 71/98 = 0.72449, 72/98 = 0.73469
    assert grim_totals(0.553, 3, 563, 14)[0] == 4355  # 4355/7882 = 0.552525 (first of eight)


def test_ties_are_flagged():
    assert is_tie(1, 8, 0.13, 2)  # 1/8 = 0.125 is exactly half-way between 0.12 and 0.13


def test_row_rounding_explains_0947():
    # rows 14, 14, 14, 11 -> recalls 1, 1, 1, 0.786 (rounded) -> mean 0.9465 -> half-up 0.947.
    assert rowround_consistent(0.947, 3, 53, 4, 14)
    assert not rowround_consistent(0.950, 3, 53, 4, 14)


def test_the_paper_has_exactly_two_grim_failures_with_printed_denominators():
    df = check_means(published_claims())
    bad = sorted(df.filter(~df["consistent"])["id"].to_list())
    assert bad == ["t3.deepseek_v4_flash.q_mean", "t3.gemma_4_26b_a4b_it.j_mean"]


def test_table1_row_counts_by_granularity():
    c = published_claims()
    # minimax: n 0.750 needs an even n, l 0.871 needs n in {5, 10}: 122/140 = 0.8714.
    assert 10 in feasible_row_counts(c, tuple(f"t1.minimax_m3.{a}" for a in "fnklm"))
    assert 7 not in feasible_row_counts(c, tuple(f"t1.minimax_m3.{a}" for a in "fnklm"))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(1, 14), data=st.data())
def test_every_printed_mean_of_an_integer_total_is_found(n, k, data):
    t = data.draw(st.integers(0, n * k))
    v = round(t / (n * k), 3)
    totals = grim_totals(v, 3, n, k)
    assert t in totals
    assert all(abs(Fraction(x, n * k) - Fraction(str(v))) <= Fraction(1, 2000) for x in totals)


def test_spearman_over_tied_fills_hand_case():
    # fills 0.1, 0.1, 0.3 vs effects 1, 2, 3: order a<b gives ranks 1,2,3 (rho 1); b<a gives 2,1,3:
    # rho = 1 - 6 * (1 + 1 + 0) / (3 * 8) = 0.5.
    from analysis.reconstruct.granularity import spearman_reachable
    assert spearman_reachable([0.1, 0.1, 0.3], 2, [1.0, 2.0, 3.0]) == (0.5, 1.0)


def test_spearman_with_tied_effects_ordered_hand_case():
    # fills 0.1, 0.2, 0.3 vs effects 1, 1, 3: average ranks (1.5, 1.5, 3): deviations (-1, 0, 1) and
    # (-.5, -.5, 1): rho = 1.5 / sqrt(2 * 1.5) = 0.866025; ordering the tied effects gives ranks (1, 2, 3),
    # rho 1, or (2, 1, 3), rho 0.5.
    from analysis.reconstruct.granularity import spearman_reachable
    assert spearman_reachable([0.1, 0.2, 0.3], 2, [1.0, 1.0, 3.0]) == (0.866025403784,)
    assert spearman_reachable([0.1, 0.2, 0.3], 2, [1.0, 1.0, 3.0], effect_ties=True) == (0.5, 0.866025403784, 1.0)


def test_all20_fill_spearman_needs_float_tie_breaking_and_fail8_only_fill_orders():
    # Issue 10: +0.589 is reached when granite-4.1-8b's and mistral-small-2603's equal effects (-0.054) are
    # ordered, as float means of per-pair differences order them by their last bit.
    from analysis.reconstruct.granularity import check_fill_ranks
    df = check_fill_ranks(published_claims())
    verdict = dict(zip(df["id"].to_list(), df["consistent"].to_list(), strict=True))
    assert verdict == {"threshold.all20.fill_effect.spearman": True, "threshold.fail8.fill_effect.spearman": True,
                       "threshold.fail8_excl_borderline.fill_effect.spearman": True}
    reason = dict(zip(df["id"].to_list(), df["reason"].to_list(), strict=True))
    assert "tie-breaking of equal effects" in reason["threshold.all20.fill_effect.spearman"]
    assert reason["threshold.fail8.fill_effect.spearman"] == ""
