"""Per-configuration t intervals of the paired effect (issue 34: the forest plot's interval per configuration).

Oracle: the hand-made package's pair differences as its README tabulates them (q − j per repeat with both arms
valid): alpha-1 [0, 1], alpha-2 [−0.5, −0.5], beta-1 [1, 0.5]; each interval is scipy.stats.t.interval at 95 %
over those values, clipped to [−1, 1]. Hypothesis: the interval holds the configuration's effect and stays in
[−1, 1] whatever subset of rows is valid.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.common import contrast_of, runs_frame
from analysis.estimators.configuration_intervals import METHOD, configuration_intervals, in_window
from report_support import handmade


def _intervals(pkg):
    s = pkg.study
    return configuration_intervals(pkg.rows, in_window(runs_frame(s), s.recency_cutoff), contrast_of(s), 0.05)


def _scipy(d: list[float]) -> tuple[float, float]:
    x = np.array(d)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=x.std(ddof=1) / math.sqrt(len(x)))
    return max(-1.0, lo), min(1.0, hi)


def test_intervals_match_scipy_on_the_readme_pairs() -> None:
    pkg, _ = handmade()
    out = _intervals(pkg)
    assert out.method == METHOD and out.level == pytest.approx(0.95)
    got = {r["configuration"]: r for r in out.frame.iter_rows(named=True)}
    for conf, d, effect in (("acme/alpha-1", [0.0, 1.0], 0.5), ("beta/beta-1", [1.0, 0.5], 0.75)):
        r = got[conf]
        assert r["pairs"] == 2 and r["effect"] == pytest.approx(effect) and r["reason"] == ""
        assert (r["lo"], r["hi"]) == pytest.approx(_scipy(d))
    # the same difference twice: no spread, so not estimable (issue 30), never the point [-0.5, -0.5]
    same = got["acme/alpha-2"]
    assert same["effect"] == pytest.approx(-0.5) and math.isnan(same["lo"]) and math.isnan(same["hi"])
    assert "no spread" in same["reason"]


def test_one_pair_gives_no_interval_and_says_why() -> None:
    pkg, _ = handmade()
    rows = pkg.rows.filter(~((pl.col("configuration") == "acme/alpha-1") & (pl.col("repeat") == 2)))
    r = _intervals(dataclasses.replace(pkg, rows=rows)).frame.filter(pl.col("configuration") == "acme/alpha-1").row(
        0, named=True)
    assert r["pairs"] == 1 and math.isnan(r["lo"]) and "fewer than two" in r["reason"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.booleans(), min_size=22, max_size=22))
def test_the_interval_holds_the_effect_and_stays_in_range(keep: list[bool]) -> None:
    pkg, _ = handmade()
    rows = pkg.rows.filter(pl.Series(keep))
    for r in _intervals(dataclasses.replace(pkg, rows=rows)).frame.iter_rows(named=True):
        if not r["reason"]:
            assert -1.0 <= r["lo"] <= r["effect"] + 1e-12 and r["effect"] - 1e-12 <= r["hi"] <= 1.0
