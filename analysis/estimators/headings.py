"""Exploratory association between rendered headings and recall (paper section 4.8).

Population (docs/RESULTS_CONTRACT.md `headings`): valid rows of the primary scenario with
`headings_carried` recorded and an outcome; optionally restricted to some arms.

* table: rows, mean recall and rows with recall >= threshold per headings count (0..5,
  plus any larger count observed); empty levels have rows 0 and mean NaN.
* pooled r: Pearson's r between headings and recall over the rows.
* within cell: subtract the (configuration, arm, execution_group) cell means of headings and
  recall; informative cells are those whose headings vary; slope = sum(x~ y~) / sum(x~^2) and
  r = Pearson's r of the residuals, both over the rows of informative cells.

Headings carried is post-treatment: these are descriptions, not mediation estimates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import recall_at_least, require_columns, valid_outcome_rows
from analysis.estimators.correlation import pearson
from analysis.params import DEFAULT_PARAMS, Params

CELL = ("configuration", "arm", "execution_group")


def headings_rows(rows: pl.DataFrame, scenario: str, arms: Sequence[str] | None = None) -> pl.DataFrame:
    """Valid rows of `scenario` with headings_carried and an outcome (optionally only `arms`), with recall."""
    require_columns(rows, ("headings_carried", "execution_group"), "rows")
    return valid_outcome_rows(rows, scenario, arms).filter(pl.col("headings_carried").is_not_null())


@dataclass(frozen=True, slots=True)
class HeadingsLevel:
    """One line of the headings table."""

    headings: int
    """Headings carried in the final carrier."""
    rows: int
    """Rows with that count."""
    mean: float
    """Mean recall of those rows (NaN when rows == 0)."""
    rows_at_threshold: int
    """Rows with recall >= the threshold."""


@dataclass(frozen=True, slots=True)
class HeadingsTable:
    """Recall by headings carried."""

    arms: tuple[str, ...] | None
    """Arms included (None = all arms)."""
    threshold: float
    """Recall threshold of rows_at_threshold."""
    levels: tuple[HeadingsLevel, ...]
    """One entry per headings count 0..max(5, observed)."""

    def to_frame(self) -> pl.DataFrame:
        """The table as a DataFrame (headings, rows, mean, rows_at_threshold)."""
        return pl.DataFrame(
            [(lv.headings, lv.rows, lv.mean, lv.rows_at_threshold) for lv in self.levels],
            schema={"headings": pl.Int64, "rows": pl.Int64, "mean": pl.Float64,
                    "rows_at_threshold": pl.Int64},
            orient="row",
        )


def headings_table(
    rows: pl.DataFrame,
    scenario: str,
    arms: Sequence[str] | None = None,
    threshold: float = 0.5,
    max_headings: int = 5,
) -> HeadingsTable:
    """Rows, mean recall and rows at/above `threshold` (exact, in integers) per headings count."""
    df = headings_rows(rows, scenario, arms)
    agg = df.group_by("headings_carried").agg(
        pl.len().alias("rows"),
        pl.col("recall").mean().alias("mean"),
        recall_at_least(threshold).sum().alias("hit"),
    )
    by = {int(r["headings_carried"]): r for r in agg.iter_rows(named=True)}
    top = max([max_headings, *by.keys()])
    levels = []
    for h in range(top + 1):
        r = by.get(h)
        if r is None:
            levels.append(HeadingsLevel(h, 0, math.nan, 0))
        else:
            levels.append(HeadingsLevel(h, int(r["rows"]), float(r["mean"]), int(r["hit"])))
    return HeadingsTable(tuple(arms) if arms is not None else None, threshold, tuple(levels))


@dataclass(frozen=True, slots=True)
class PooledCorrelation:
    """Pearson's r between headings carried and recall over all rows."""

    r: float
    """Pearson's r (NaN when undefined)."""
    rows: int
    """Rows entering r."""
    reason: str | None
    """Why r is undefined, else None."""


def pooled_correlation(rows: pl.DataFrame, scenario: str, arms: Sequence[str] | None = None) -> PooledCorrelation:
    """Pearson's r of headings and recall over the population rows (pools arm and model differences)."""
    df = headings_rows(rows, scenario, arms)
    r, reason = pearson(df["headings_carried"].to_numpy(), df["recall"].to_numpy())
    return PooledCorrelation(r, df.height, reason)


@dataclass(frozen=True, slots=True)
class WithinCell:
    """Headings-recall association after removing (configuration, arm, execution_group) cell means."""

    arms: tuple[str, ...] | None
    """Arms included (None = all arms)."""
    cells: int
    """Informative cells (headings vary within the cell)."""
    rows: int
    """Rows in informative cells."""
    slope: float
    """sum(x~ y~) / sum(x~^2): recall per additional heading within cells (NaN when no informative cell)."""
    r: float
    """Pearson's r of the residuals over informative-cell rows (NaN when undefined)."""
    reason: str | None
    """Why slope or r is undefined, else None."""


def within_cell(rows: pl.DataFrame, scenario: str, arms: Sequence[str] | None = None) -> WithinCell:
    """Within-cell slope and residual r (docs/RESULTS_CONTRACT.md `headings.within_cell`)."""
    df = headings_rows(rows, scenario, arms).with_columns(pl.col("headings_carried").cast(pl.Float64).alias("x"))
    resid = (
        df.with_columns(
            (pl.col("x") - pl.col("x").mean().over(CELL)).alias("xr"),
            # a cell whose recall is constant has residual exactly 0 (the float mean can be off by 1 ulp)
            pl.when(pl.col("recall").n_unique().over(CELL) > 1)
            .then(pl.col("recall") - pl.col("recall").mean().over(CELL))
            .otherwise(0.0)
            .alias("yr"),
            (pl.col("x").n_unique().over(CELL) > 1).alias("informative"),
        )
        .filter(pl.col("informative"))
    )
    arms_t = tuple(arms) if arms is not None else None
    cells = resid.select(pl.struct(CELL).n_unique()).item() if resid.height else 0
    if resid.height == 0:
        return WithinCell(arms_t, 0, 0, math.nan, math.nan, "no informative cell (headings never vary within a cell)")
    sxx = float((resid["xr"] ** 2).sum())
    slope = float((resid["xr"] * resid["yr"]).sum()) / sxx
    r, reason = pearson(resid["xr"].to_numpy(), resid["yr"].to_numpy())
    if reason is not None:
        reason = f"residual r undefined: {reason}"
    return WithinCell(arms_t, int(cells), resid.height, slope, r, reason)


@dataclass(frozen=True, slots=True)
class HeadingsAnalysis:
    """Everything of section 4.8 for one package."""

    table_all: HeadingsTable
    """Headings table over all arms."""
    table_single_field: HeadingsTable
    """Headings table over the single-field schema arms (the paper's table)."""
    pooled: PooledCorrelation
    """Pooled r over all arms (docs/RESULTS_CONTRACT.md headings.pooled_r/rows)."""
    within_all: WithinCell
    """Within-cell slope and r over all arms (docs/RESULTS_CONTRACT.md headings.within_cell)."""
    within_single_field: WithinCell
    """Within-cell over the single-field schema arms."""
    within_control: WithinCell
    """Within-cell over the control arm alone (the paper's 'j alone')."""


def headings_analysis(
    rows: pl.DataFrame,
    scenario: str,
    control: str,
    params: Params = DEFAULT_PARAMS,
) -> HeadingsAnalysis:
    """Tables, pooled r and the three within-cell fits of section 4.8.

    Params used: single_field_arms, threshold_partial (rows >= threshold), headings_max.
    """
    single = params.single_field_arms
    thr, top = params.threshold_partial, params.headings_max
    return HeadingsAnalysis(
        table_all=headings_table(rows, scenario, None, thr, top),
        table_single_field=headings_table(rows, scenario, single, thr, top),
        pooled=pooled_correlation(rows, scenario),
        within_all=within_cell(rows, scenario),
        within_single_field=within_cell(rows, scenario, single),
        within_control=within_cell(rows, scenario, (control,)),
    )
