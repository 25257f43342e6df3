"""Per-cell summaries of valid rows with an outcome (Table 1, the ladder, the ceiling tables).

Methods note. A cell is (scenario, configuration[, execution_group], arm). Over
its valid rows with an outcome: row count, mean exact recall, rows with recall
>= the partial threshold and == 1.0 (compared exactly in integers), means of
the carried/declared characters over rows that record them (with those counts),
the mean fill fraction carried/declared, and sums of folds, clipped folds,
parse failures and finish reasons. Rows are never averaged across cells here:
cross-configuration summaries weight configurations equally elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import at_least, valid_outcome_rows
from analysis.params import Params

WITH_GROUP = ("scenario", "configuration", "execution_group", "arm")
WITHOUT_GROUP = ("scenario", "configuration", "arm")
SUMMED = ("folds", "folds_clipped", "parse_failures", "finish_stop", "finish_length")


@dataclass(frozen=True, slots=True)
class CellTable:
    """Per-cell summaries, one row per cell, sorted by the cell keys."""

    by: tuple[str, ...]
    """Cell key columns."""
    threshold_partial: float
    """Threshold of `rows_partial` (recall >= it)."""
    table: pl.DataFrame
    """Columns: keys, rows, mean_recall, rows_partial, rows_full, carried/declared/fill
    means with their row counts, mean prompt_tokens_est, and the SUMMED columns."""


def cell_summary(rows: pl.DataFrame, params: Params, *, by_execution_group: bool = True,
                 arms: Sequence[str] | None = None, scenario: str | None = None) -> CellTable:
    """Summaries of valid rows with an outcome by (scenario, configuration[, group], arm)."""
    by = WITH_GROUP if by_execution_group else WITHOUT_GROUP
    out = valid_outcome_rows(rows, scenario)
    if arms is not None:
        out = out.filter(pl.col("arm").is_in(list(arms)))
    passed, total = pl.col("checks_passed"), pl.col("checks_total")
    present = [c for c in SUMMED if c in out.columns]
    has = set(out.columns)
    fill = (pl.col("carried_chars").cast(pl.Float64) / pl.col("declared_chars").cast(pl.Float64)
            if {"carried_chars", "declared_chars"} <= has else pl.lit(None, pl.Float64))
    aggs = [
        pl.len().cast(pl.Int64).alias("rows"),
        pl.col("recall").mean().alias("mean_recall"),
        at_least(passed, total, params.threshold_partial).sum().cast(pl.Int64).alias("rows_partial"),
        at_least(passed, total, params.threshold_full).sum().cast(pl.Int64).alias("rows_full"),
        fill.mean().alias("mean_fill"),
        fill.is_not_null().sum().cast(pl.Int64).alias("fill_rows"),
    ]
    for name in ("carried_chars", "declared_chars", "prompt_tokens_est"):
        if name in has:
            aggs += [pl.col(name).cast(pl.Float64).mean().alias(f"mean_{name}"),
                     pl.col(name).is_not_null().sum().cast(pl.Int64).alias(f"{name}_rows")]
    aggs += [pl.col(c).sum().cast(pl.Int64).alias(c) for c in present]
    table = out.group_by(by).agg(aggs).sort(list(by))
    return CellTable(by=by, threshold_partial=params.threshold_partial, table=table)
