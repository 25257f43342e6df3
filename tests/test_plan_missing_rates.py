"""Per-arm missing-or-invalid rates of the v2 variance components (issue 32: kept apart)."""
from __future__ import annotations

import datetime

import numpy as np
import polars as pl
import pytest

from analysis.estimators.common import Contrast
from analysis.estimators.variance_components import variance_components
from analysis.plan.simulate import study_frames

C = Contrast("j", "q", "S5")


def test_control_and_treatment_missing_rates_are_kept_apart() -> None:
    # Plants: iterate `(contrast.control, contrast.control)` in _arm_missing, or pool both arms'
    # slots into one rate -> the two rates below come out equal.
    # Hand derivation: K = 3 configurations x R = 4 planned repeats = 12 planned slots per arm.
    # Control (j): slot c000/1 is written but invalid -> 1 of 12 missing-or-invalid = 1/12.
    # Treatment (q): slots c001/1..3 have no row at all -> 3 of 12 = 3/12. Both arms of every other
    # slot are valid.
    rows, runs = study_frames(np.zeros((3, 4)), np.ones((3, 4), dtype=bool), 10)
    absent = [f"c001/{r}/q" for r in (1, 2, 3)]
    rows = (rows.filter(~pl.col("row_id").is_in(absent))
            .with_columns(valid=pl.when(pl.col("row_id") == "c000/1/j").then(False).otherwise(pl.col("valid")),
                          checks_passed=pl.when(pl.col("row_id") == "c000/1/j").then(None)
                          .otherwise(pl.col("checks_passed"))))
    vc = variance_components(rows, runs, C, recency_cutoff=datetime.date(2025, 1, 1))
    assert vc.missing_rate() == pytest.approx({"j": 1 / 12, "q": 3 / 12})
    by_arm = {m.arm: m for m in vc.missing}
    assert (by_arm["j"].invalid, by_arm["j"].absent) == (1, 0)
    assert (by_arm["q"].invalid, by_arm["q"].absent) == (0, 3)
