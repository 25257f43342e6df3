"""The table t_arm_recall on the hand-made package against a hand count of tests/fixtures/handmade/rows.csv
(read with the csv module, not the estimators' polars filter) and the Beta quantiles of scipy (the estimator
root-finds on the binomial tails with scipy's binomtest)."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from analysis.tables.arm_recall import arm_recall
from report_support import context, handmade

ROWS = Path(__file__).resolve().parent / "fixtures" / "handmade" / "rows.csv"


def _hand_count() -> dict[str, tuple[int, int, int]]:
    """arm -> (valid S5 rows with an outcome, checks passed, graded checks)."""
    out: dict[str, tuple[int, int, int]] = {}
    with ROWS.open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if r["scenario"] == "S5" and r["valid"] == "true" and r["checks_passed"] != "":
                n, k, m = out.get(r["arm"], (0, 0, 0))
                out[r["arm"]] = (n + 1, k + int(r["checks_passed"]), m + int(r["checks_total"]))
    return out


def test_rows_and_intervals_are_the_hand_counts() -> None:
    spec = arm_recall(context())
    hand = _hand_count()
    assert spec.name == "t_arm_recall" and not spec.is_empty
    assert spec.data.get_column("arm").to_list() == list(handmade()[0].study.arms or sorted(hand))
    for r in spec.data.iter_rows(named=True):
        n, k, m = hand[r["arm"]]
        assert (r["rows"], r["passed"], r["checks"]) == (n, k, m)
        assert r["recall"] == pytest.approx(k / m)
        lo = 0.0 if k == 0 else stats.beta.ppf(0.025, k, m - k + 1)
        hi = 1.0 if k == m else stats.beta.ppf(0.975, k + 1, m - k)
        assert (r["lo"], r["hi"]) == pytest.approx((lo, hi), rel=1e-9)
    j = spec.display.row(by_predicate=pl.col("arm").str.starts_with("j"), named=True)
    n, k, m = hand["j"]
    assert j["checks passed"] == f"{k}/{m}" and j["95% interval"].startswith("[")


def test_no_graded_check_gives_an_empty_table_with_its_reason() -> None:
    pkg, res = handmade()
    spec = arm_recall(context(dataclasses.replace(pkg, rows=pkg.rows.head(0)), res))
    assert spec.is_empty and "no valid row with graded checks" in spec.empty_reason
