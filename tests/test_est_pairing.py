"""Issue 19, finding 5: the pooled panel McNemar over re-pairings of rows inside each run (ours)."""
from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from analysis.estimators.pairing import pairing_range
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from support.paths import REPO as ROOT


def _rows(runs: dict[str, tuple[list[int], list[int]]]) -> pl.DataFrame:
    recs = []
    for cfg, (j, q) in runs.items():
        for arm, passed in (("j", j), ("q", q)):
            for rep, x in enumerate(passed, start=1):
                recs.append({"row_id": f"{cfg}/{arm}/{rep}", "scenario": "S5", "configuration": cfg,
                             "execution_group": "g", "repeat": rep, "arm": arm, "valid": True,
                             "checks_total": 14, "checks_passed": x})
    return pl.DataFrame(recs)


# Run A: j passes 14, 14, 14, 0 and q passes 14, 0, 0, 0 (shipped pairing: j-only 2, both 1, neither 1).
# Run B: j 0, 0 and q 14, 0 in shipped order, i.e. c = 1, neither = 1.
RUNS = {"A": ([14, 14, 14, 0], [14, 0, 0, 0]), "B": ([0, 0], [14, 0])}


def _pr(seed: int = 1, draws: int = 4000):
    rows = _rows(RUNS)
    runs = pl.DataFrame({"configuration": ["A", "B"], "execution_group": ["g", "g"]})
    return pairing_range(rows, "j", "q", scenario="S5", threshold=0.5, runs=runs,
                         rng=np.random.default_rng(seed), draws=draws)


def test_hand_derived_pairings_and_statsmodels_p():
    pr = _pr()
    # A: n 4, s_j 3, s_q 1. sorted both = min = 1 -> b 2, c 0; reversed both = max(0, 3 + 1 - 4) = 0 -> b 3, c 1.
    # B: n 2, s_j 0, s_q 1: every pairing gives b 0, c 1, neither 1.
    assert (pr.shipped.b, pr.shipped.c, pr.shipped.both, pr.shipped.neither) == (2, 1, 1, 2)
    assert (pr.sorted.b, pr.sorted.c, pr.sorted.both, pr.sorted.neither) == (2, 1, 1, 2)
    assert (pr.reversed.b, pr.reversed.c, pr.reversed.both, pr.reversed.neither) == (3, 2, 0, 1)
    for k in (pr.sorted, pr.reversed):  # oracle: statsmodels' exact McNemar on the 2x2 table
        table = [[k.both, k.b], [k.c, k.neither]]
        assert k.p_value == pytest.approx(sm_mcnemar(table, exact=True).pvalue)
    assert pr.pairs == 6 and pr.runs == 2 and pr.p_lo <= pr.shipped.p_value <= pr.p_hi


def test_random_pairing_matches_the_enumeration_of_every_permutation():
    # Oracle: all 4! pairings of run A are equally likely; E[both] = 3 * 1 / 4 = 0.75 -> E[b] = 2.25 (+0 from B).
    j, q = RUNS["A"]
    both = [sum(a >= 7 and q[i] >= 7 for a, i in zip(j, perm, strict=True))
            for perm in itertools.permutations(range(4))]
    expected_b = 3 - float(np.mean(both))
    pr = _pr(draws=20000)
    assert expected_b == 2.25 and pr.random_b_mean == pytest.approx(expected_b, abs=0.03)
    assert pr.random_c_mean == pytest.approx(1 - float(np.mean(both)) + 1, abs=0.03)


def test_deterministic_for_a_seed():
    a, b = _pr(seed=7), _pr(seed=7)
    assert a == b


def test_v1_panel_mcnemar_depends_on_the_pairing():
    from analysis.results import build_results
    res = build_results(load_package(ROOT / "data" / "v1"), DEFAULT_PARAMS)
    mp = res["mcnemar_pairing"]
    shipped = res["mcnemar"]["partial"]["complete"]
    assert (mp["shipped"]["b"], mp["shipped"]["c"]) == (shipped["b"], shipped["c"]) == (11, 13)
    assert (mp["sorted"]["b"], mp["sorted"]["c"]) == (11, 13)  # the reconstruction pairs best with best
    assert (mp["reversed"]["b"], mp["reversed"]["c"]) == (20, 22)
    assert mp["random_b_mean"] == pytest.approx(15.5, abs=0.2) and mp["random_c_mean"] == pytest.approx(17.5, abs=0.2)
    assert mp["pairs"] == 98 and round(mp["p_lo"], 4) == 0.8388 and mp["p_hi"] > mp["p_lo"]


def test_v1_full_recall_mcnemar_carries_its_pairing_range_labelled_as_ours():
    # mcnemar.full pools the same within-run pairs at recall == 1, so its p depends on the pairing too.
    from analysis.results import build_results
    from analysis.results.registry import RESULTS_BLOCKS
    res = build_results(load_package(ROOT / "data" / "v1"), DEFAULT_PARAMS)
    mp, full = res["mcnemar_pairing_full"], res["mcnemar"]["full"]["complete"]
    assert (mp["shipped"]["b"], mp["shipped"]["c"], mp["pairs"]) == (full["b"], full["c"], full["pairs"]) == (11, 8, 98)
    # per run, best with worst keeps max(0, s1 + s2 - n) pairs concordant-successful: more discordance than shipped
    assert mp["reversed"]["b"] + mp["reversed"]["c"] > full["b"] + full["c"]
    assert mp["p_lo"] <= full["p_value"] <= mp["p_hi"] and mp["p_hi"] > mp["p_lo"]
    meaning = next(b for b in RESULTS_BLOCKS if b.key == "mcnemar_pairing_full").doc
    assert "ours" in meaning and "full-recall" in meaning


def test_each_distinct_random_pairing_count_is_summed_once(monkeypatch):
    # CPU (issue 21): the exact p of a (b, c) repeated across draws is computed once per call; the values are
    # pinned by the tests above (hand derivation, statsmodels, the enumeration of every permutation).
    from analysis.estimators import pairing

    calls = []
    real = pairing.exact_p

    def counting(b, c):
        calls.append((b, c))
        return real(b, c)

    monkeypatch.setattr(pairing, "exact_p", counting)
    r = _pr(seed=3, draws=4000)
    random_calls = calls[3:]  # shipped, sorted, reversed first
    assert len(random_calls) == len(set(random_calls)) < 4000
    assert r.draws == 4000 and r.random_p_lo <= r.random_p_median <= r.random_p_hi
