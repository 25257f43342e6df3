"""The figure arm_recall on the hand-made package: the dots and bars drawn, read back from the axes, against
a hand count of tests/fixtures/handmade/rows.csv (csv module) and scipy's Beta quantiles (the estimator
root-finds on the binomial tails with scipy's binomtest); and the empty case."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from analysis.figures.arm_recall import arm_recall
from report_support import context, handmade

ROWS = Path(__file__).resolve().parent / "fixtures" / "handmade" / "rows.csv"


def _hand_count() -> dict[str, tuple[int, int]]:
    """arm -> (checks passed, graded checks) over the valid S5 rows with an outcome."""
    out: dict[str, tuple[int, int]] = {}
    with ROWS.open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if r["scenario"] == "S5" and r["valid"] == "true" and r["checks_passed"] != "":
                k, m = out.get(r["arm"], (0, 0))
                out[r["arm"]] = (k + int(r["checks_passed"]), m + int(r["checks_total"]))
    return out


def test_the_drawn_dots_and_intervals_are_the_hand_counts() -> None:
    spec = arm_recall(context())
    assert spec.name == "arm_recall" and not spec.empty_reason
    ax = spec.figure.axes[0]
    arms = list(handmade()[0].study.arms or sorted(_hand_count()))
    hand = [_hand_count()[a] for a in arms]
    dots = ax.lines[0]
    np.testing.assert_allclose(dots.get_xdata(), [k / m for k, m in hand])
    segments = ax.collections[0].get_segments()
    lo = [0.0 if k == 0 else stats.beta.ppf(0.025, k, m - k + 1) for k, m in hand]
    hi = [1.0 if k == m else stats.beta.ppf(0.975, k + 1, m - k) for k, m in hand]
    np.testing.assert_allclose([s[0][0] for s in segments], lo, rtol=1e-9)
    np.testing.assert_allclose([s[1][0] for s in segments], hi, rtol=1e-9)
    # the first arm is on top, each dot on its arm's bar
    assert [s[0][1] for s in segments] == list(dots.get_ydata()) == list(range(len(arms)))[::-1]
    assert [t.get_text().split(" ")[0] for t in ax.get_yticklabels()] == arms
    assert "95%" in ax.get_xlabel() and "95%" in spec.alt


def test_no_graded_check_draws_the_reason() -> None:
    pkg, res = handmade()
    spec = arm_recall(context(dataclasses.replace(pkg, rows=pkg.rows.head(0)), res))
    assert spec.empty_reason == "no valid row with graded checks on the primary scenario"
    assert any("Not in this evidence" in t.get_text() for t in spec.figure.axes[0].texts)


@pytest.mark.parametrize("alpha", [0.1])
def test_the_level_follows_the_params(alpha: float) -> None:
    from analysis.params import DEFAULT_PARAMS

    pkg, res = handmade()
    spec = arm_recall(context(pkg, res, dataclasses.replace(DEFAULT_PARAMS, alpha=alpha)))
    assert "90%" in spec.figure.axes[0].get_xlabel()
