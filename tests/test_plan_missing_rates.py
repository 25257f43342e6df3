"""Per-arm missing-or-invalid rates of the v2 variance components (issue 32: kept apart)."""
from __future__ import annotations

import datetime
import datetime as dt

import numpy as np
import polars as pl
import pytest

from analysis.estimators.variance_components import variance_components
from analysis.params import DEFAULT_PLAN_PARAMS
from analysis.plan.design import simulate_grid
from analysis.plan.simulate import study_frames
from support.plan_components import C
from support.plan_components import planned_components as _components


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




# ------------------------------------------------------------------------------ missingness
def test_the_treatment_arms_missingness_is_its_own() -> None:
    # Plants: simulate_grid building SimModel with `miss.get(comps.contrast.control)` for the treatment too,
    # or _mask drawing the treatment's rows with `model.missing_control` -> no row ever missing here, so the
    # mean panel size stayed 2 instead of 2 x 0.1; _arm_missing counting `contrast.control` rows for both
    # arms -> q's rate 0 instead of 3/8.
    # (1) the estimator: K = 2, R = 4, three treatment rows invalid (study_frames writes a non-present
    #     repeat as an invalid treatment row) -> j 0/8 missing, q 3/8.
    present = np.array([[True, False, True, True], [False, True, False, True]])
    rows, runs = study_frames(np.zeros((2, 4)), present, 14)
    comps = variance_components(rows, runs, C, recency_cutoff=dt.date(2025, 1, 1))
    assert comps.missing_rate() == {"j": 0.0, "q": pytest.approx(3 / 8)}
    # (2) the simulation: control never missing, treatment missing with probability 0.9; K = 2, R = 1, so a
    #     configuration is in the panel with probability 0.1 and the mean panel size is 2 x 0.1 = 0.2
    #     (sd of the mean over 4000 studies: sqrt(2 x 0.1 x 0.9 / 4000) = 0.0067; the bound is 7.5 sd).
    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(2,), repeats=(1,), effects=(0.0,), sims=4000)
    grid, _ = simulate_grid(_components(0.0, 0.9), [], plan, np.random.Generator(np.random.PCG64(5)),
                            resampling=False, signflip=False)
    assert grid["panel_configurations_mean"][0] == pytest.approx(0.2, abs=0.05)
    # and the other way round (control 0.9, treatment 0): the same 0.2, each arm with its own rate
    grid, _ = simulate_grid(_components(0.9, 0.0), [], plan, np.random.Generator(np.random.PCG64(6)),
                            resampling=False, signflip=False)
    assert grid["panel_configurations_mean"][0] == pytest.approx(0.2, abs=0.05)

