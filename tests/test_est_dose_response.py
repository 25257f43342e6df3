"""Dose-response over the load ladder (analysis.estimators.dose_response) against independent oracles.

The hand-made ladder: two rungs, arms j and q, three repeats of one configuration.

    rung A (2 checks per row):  j passes 2, 2, 1   q passes 2, 2, 2
    rung B (4 checks per row):  j passes 0, 1, 0   q passes 1, 0, 0   (+ one invalid q row, passes 4)

By hand: recall A/j = (1 + 1 + 0.5) / 3 = 5/6, A/q = 1, B/j = 1/12, B/q = 1/12. Paired q - j per
repeat: A: 0, 0, +0.5 -> mean 1/6; B: +0.25, -0.25, 0 -> mean 0. Intervals: Wilson at n = rows
(statsmodels' proportion_confint, method "wilson", with count = recall * rows), and the t interval
over the three pair differences (scipy.stats.t). The invalid row never counts.
"""

from __future__ import annotations

import datetime as dt
from types import MappingProxyType

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from analysis.estimators.dose_response import dose_response
from analysis.evidence.model import Configuration, LadderRung, PartitionRun, Study
from analysis.params import DEFAULT_PARAMS

A, B = "g1-d0-c150-f2", "g2-d0-c150-f2"
PASSES = {(A, "j"): [2, 2, 1], (A, "q"): [2, 2, 2], (B, "j"): [0, 1, 0], (B, "q"): [1, 0, 0]}
TOTAL = {A: 2, B: 4}


def _study(ladder: tuple[LadderRung, ...]) -> Study:
    conf = Configuration("m", "fam", dt.date(2026, 1, 1), None, None)
    return Study("ladder", dt.date(2025, 1, 1), "j", "q", A, MappingProxyType({"m": conf}),
                 (PartitionRun("m", "g", 3),), None, "pilot", ladder)


LADDER = (LadderRung(A, A, 1, 0, 150, 2), LadderRung(B, B, 2, 0, 150, 2))


def _rows(extra_invalid: bool = True) -> pl.DataFrame:
    recs = []
    for (rung, arm), passes in PASSES.items():
        for rep, p in enumerate(passes, 1):
            recs.append({"row_id": f"{rung}-{arm}-{rep}", "scenario": rung, "configuration": "m",
                         "execution_group": "g", "repeat": rep, "arm": arm, "valid": True,
                         "checks_total": TOTAL[rung], "checks_passed": p})
    if extra_invalid:
        recs.append({"row_id": "bad", "scenario": B, "configuration": "m", "execution_group": "g", "repeat": 1,
                     "arm": "q", "valid": False, "checks_total": 4, "checks_passed": 4})
    return pl.DataFrame(recs)


def test_recall_per_rung_and_arm_with_wilson_at_rows() -> None:
    d = dose_response(_rows(), _study(LADDER), DEFAULT_PARAMS)
    got = {(r["rung"], r["arm"]): r for r in d.arms.iter_rows(named=True)}
    for key, mean in {(A, "j"): 5 / 6, (A, "q"): 1.0, (B, "j"): 1 / 12, (B, "q"): 1 / 12}.items():
        r = got[key]
        assert r["rows"] == 3 and r["recall"] == pytest.approx(mean)
        lo, hi = proportion_confint(mean * 3, 3, alpha=0.05, method="wilson")
        assert (r["lo"], r["hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert d.rungs.get_column("axis").to_list() == ["base", "graded_per_chunk"] or \
        d.rungs.get_column("axis").to_list() == ["graded_per_chunk", "base"]
    assert d.missing == ()


def test_paired_effect_per_rung_is_the_mean_pair_difference_with_a_t_interval() -> None:
    d = dose_response(_rows(), _study(LADDER), DEFAULT_PARAMS)
    got = {r["rung"]: r for r in d.paired.iter_rows(named=True)}
    for rung, diffs in {A: [0, 0, 0.5], B: [0.25, -0.25, 0]}.items():
        x = np.array(diffs)
        half = stats.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3)
        r = got[rung]
        assert r["pairs"] == 3 and r["configurations"] == 1
        assert r["effect"] == pytest.approx(x.mean())
        assert (r["lo"], r["hi"]) == pytest.approx((x.mean() - half, x.mean() + half))
        assert r["enough_pairs"] is False  # 3 < min_pairs = 4: kept, and said
    d3 = dose_response(_rows(), _study(LADDER), DEFAULT_PARAMS.replace(min_pairs=3))
    assert d3.paired.get_column("enough_pairs").all()


def test_a_declared_rung_without_rows_is_stated_missing() -> None:
    c = LadderRung("g4-d0-c150-f2", "g4-d0-c150-f2", 4, 0, 150, 2)
    d = dose_response(_rows(), _study((*LADDER, c)), DEFAULT_PARAMS)
    assert d.missing == ("g4-d0-c150-f2",)
    assert "g4-d0-c150-f2" in d.reasons["missing"]
    p = d.paired.filter(pl.col("rung") == "g4-d0-c150-f2").row(0, named=True)
    assert p["effect"] is None and "no complete pair" in p["reason"]
    assert "survival" in d.reasons  # no timeline handed in


def test_survival_counts_per_rung_from_the_timeline() -> None:
    facts = pl.DataFrame({"row_id": [f"{A}-j-1", f"{A}-j-1", f"{B}-q-1", "bad", f"{B}-q-2"],
                          "entry_fold": [0, 1, 0, 0, None], "captured": [True, True, False, True, None],
                          "survived": [True, False, None, True, None]})
    d = dose_response(_rows(), _study(LADDER), DEFAULT_PARAMS, facts)
    got = {(r["rung"], r["arm"]): r for r in d.survival.iter_rows(named=True)}
    assert (got[(A, "j")]["facts"], got[(A, "j")]["captured"], got[(A, "j")]["survived"]) == (2, 2, 1)
    assert got[(A, "j")]["survival_share"] == pytest.approx(0.5)
    # B/q: one value read (the invalid row and the never-read value do not count), not captured
    assert (got[(B, "q")]["facts"], got[(B, "q")]["captured"]) == (1, 0)
    assert got[(B, "q")]["survival_share"] is None
    assert got[(A, "q")]["facts"] == 0
