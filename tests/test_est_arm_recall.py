"""Per-arm recall with its Clopper–Pearson interval (analysis.estimators.arm_recall) against independent
oracles: R's binom.test, the Beta quantiles of scipy (the estimator's engine, scipy's binomtest, finds the
bounds by root-finding on the binomial tails instead) and the closed form of the bounds at 0 and n successes."""

from __future__ import annotations

import polars as pl
import pytest
from scipy import stats

from analysis.estimators.arm_recall import NO_CHECKS, arm_recall


def _rows() -> pl.DataFrame:
    # arm j: two valid S5 rows (3/5, 4/5) -> 7 of 10; an invalid row and an S1 row are not counted.
    # arm m: one valid S5 row, 0 of 5. Arm q is declared but has no row.
    data = [("r1", "S5", "j", True, 5, 3), ("r2", "S5", "j", True, 5, 4), ("r3", "S5", "j", False, 5, 5),
            ("r4", "S1", "j", True, 5, 5), ("r5", "S5", "m", True, 5, 0), ("r6", "S5", "m", True, 5, None)]
    return pl.DataFrame(
        {"row_id": [d[0] for d in data], "scenario": [d[1] for d in data], "configuration": ["c"] * len(data),
         "execution_group": ["g"] * len(data), "repeat": list(range(len(data))), "arm": [d[2] for d in data],
         "valid": [d[3] for d in data], "checks_total": [d[4] for d in data],
         "checks_passed": [d[5] for d in data]},
        schema_overrides={"checks_passed": pl.Int64})


def test_counts_follow_the_validity_rule_and_the_declared_arm_order() -> None:
    out = arm_recall(_rows(), "S5", ("m", "j", "q"), 0.05)
    assert [(a.arm, a.rows, a.passed, a.checks) for a in out.arms] == [("m", 1, 0, 5), ("j", 2, 7, 10),
                                                                        ("q", 0, 0, 0)]
    assert out.scenario == "S5" and out.nominal == pytest.approx(0.95)
    q = out.arms[2]
    assert q.recall is None and q.lo is None and q.hi is None and q.reason == NO_CHECKS
    assert [a.arm for a in arm_recall(_rows(), "S5", None, 0.05).arms] == ["j", "m"]  # undeclared: sorted


def test_the_interval_is_clopper_pearson() -> None:
    j = arm_recall(_rows(), "S5", ("j",), 0.05).arms[0]
    # R 4.3: binom.test(7, 10)$conf.int -> 0.3475471 0.9332605
    assert j.recall == pytest.approx(0.7)
    assert (j.lo, j.hi) == pytest.approx((0.3475471, 0.9332605), abs=1e-7)
    # the Beta quantiles B(alpha/2; x, n - x + 1) and B(1 - alpha/2; x + 1, n - x), at alpha = 0.10
    j90 = arm_recall(_rows(), "S5", ("j",), 0.10).arms[0]
    assert (j90.lo, j90.hi) == pytest.approx((stats.beta.ppf(0.05, 7, 4), stats.beta.ppf(0.95, 8, 3)), rel=1e-9)


def test_no_success_and_all_successes_have_closed_form_bounds() -> None:
    # x = 0 of n: [0, 1 - (alpha/2)^(1/n)]; x = n: [(alpha/2)^(1/n), 1] (solve the Beta tail at its edge)
    m = arm_recall(_rows(), "S5", ("m",), 0.05).arms[0]
    assert m.recall == 0.0 and m.lo == pytest.approx(0.0, abs=1e-12) and m.hi == pytest.approx(1 - 0.025 ** (1 / 5))
    full = _rows().with_columns(checks_passed=pl.col("checks_total")).filter(pl.col("arm") == "m")
    mm = arm_recall(full, "S5", ("m",), 0.05).arms[0]
    assert (mm.passed, mm.checks) == (10, 10)
    assert mm.lo == pytest.approx(0.025 ** (1 / 10)) and mm.hi == pytest.approx(1.0)
