"""Planned-repeat missingness bounds of the paired panel effect (paper 3.3, 4.7; docs/RESULTS_CONTRACT.md).

Methods note. For every panel configuration and every planned repeat
1..planned_repeats of its partition run, each arm's outcome is its valid row's
recall, or missing (no valid row, or a valid row without an outcome). A missing
outcome ranges over [0, 1]: the worst case (treatment 0, control 1) gives the
repeat's lower difference, the best case (treatment 1, control 0) the upper one;
repeats where neither arm is valid range over [-1, 1]. A configuration's bound
is the mean over its planned repeats; the panel bound is the equal-configuration
mean. Swapping the arms maps [lo, hi] to [-hi, -lo].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import (
    BLOCK,
    NAN,
    NO_CONFIGURATIONS,
    Contrast,
    as_float,
    frozen_reasons,
)
from analysis.estimators.paired import RUN_KEY, Panel, run_outcomes


@dataclass(frozen=True, slots=True)
class PlannedRepeatBounds:
    """Bounds of the equal-configuration panel effect with missing outcomes in [0, 1]."""

    configurations: int
    """Panel configurations bounded."""
    lo: float
    """Lower bound (worst case: missing treatment 0, missing control 1)."""
    hi: float
    """Upper bound (best case: missing treatment 1, missing control 0)."""
    planned_repeats: int
    """Planned repeats summed over the panel configurations."""
    missing_control: int
    """Planned repeats with no control outcome."""
    missing_treatment: int
    """Planned repeats with no treatment outcome."""
    missing_both: int
    """Planned repeats where neither arm has an outcome."""
    per_configuration: pl.DataFrame
    """configuration, execution_group, planned_repeats, lo, hi, missing counts."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""


def repeat_grid(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast) -> pl.DataFrame:
    """One row per planned repeat of `runs`: control and treatment recall (null when missing)."""
    grid = (runs.select(*RUN_KEY, "planned_repeats")
            .with_columns(repeat=pl.int_ranges(1, pl.col("planned_repeats") + 1, dtype=pl.Int64))
            .explode("repeat"))
    found = run_outcomes(rows, runs, contrast)

    def arm(code: str, tag: str) -> pl.DataFrame:
        return found.filter(pl.col("arm") == code).select(*BLOCK, pl.col("recall").alias(tag))
    return (grid.join(arm(contrast.control, "control"), on=BLOCK, how="left")
            .join(arm(contrast.treatment, "treatment"), on=BLOCK, how="left"))


def planned_repeat_bounds(rows: pl.DataFrame, p: Panel) -> PlannedRepeatBounds:
    """Bounds over the planned repeats of the panel's configurations (see the module note)."""
    runs = p.frame.select(*RUN_KEY, "planned_repeats", "family", "published")
    grid = repeat_grid(rows, runs, p.contrast).with_columns(
        lo=pl.col("treatment").fill_null(0.0) - pl.col("control").fill_null(1.0),
        hi=pl.col("treatment").fill_null(1.0) - pl.col("control").fill_null(0.0),
        miss_c=pl.col("control").is_null(), miss_t=pl.col("treatment").is_null())
    per = (grid.group_by(RUN_KEY).agg(
        pl.len().cast(pl.Int64).alias("planned_repeats"), pl.col("lo").mean(), pl.col("hi").mean(),
        pl.col("miss_c").sum().cast(pl.Int64).alias("missing_control"),
        pl.col("miss_t").sum().cast(pl.Int64).alias("missing_treatment"),
        (pl.col("miss_c") & pl.col("miss_t")).sum().cast(pl.Int64).alias("missing_both"))
        .sort("configuration"))
    n = per.height
    reasons = {} if n else {"lo": NO_CONFIGURATIONS, "hi": NO_CONFIGURATIONS}
    total = per.select(pl.col("planned_repeats", "missing_control", "missing_treatment",
                                "missing_both").sum()).row(0) if n else (0, 0, 0, 0)
    return PlannedRepeatBounds(
        configurations=n,
        lo=as_float(per.get_column("lo").mean()) if n else NAN,
        hi=as_float(per.get_column("hi").mean()) if n else NAN,
        planned_repeats=int(total[0]), missing_control=int(total[1]),
        missing_treatment=int(total[2]), missing_both=int(total[3]),
        per_configuration=per, reasons=frozen_reasons(reasons))
