"""Per-arm cells of a package's primary scenario, with repeat identity (the v2 pilot's table data).

Methods note: cells use the same estimators as v1: analysis.estimators.cells.cell_summary (valid
rows with an outcome of the primary scenario, by configuration and arm: mean recall, rows at the
partial threshold, summed folds, parse failures and length-cut folds, mean carried characters of
the final carrier) and analysis.estimators.carrier.carrier_rows (graded values present in the final
carrier, over rows whose checks all record ``in_carrier``). ``distinct_answers`` counts distinct
recall answers of the cell's rows: 1 over several repeats means the repeats are copies of each other.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.estimators.carrier import carrier_rows
from analysis.estimators.cells import cell_summary
from analysis.estimators.common import as_float, valid_outcome_rows

SCHEMA: dict[str, Any] = {
    "configuration": pl.String, "arm": pl.String, "rows": pl.Int64, "valid_rows": pl.Int64,
    "scored_rows": pl.Int64, "checks_passed": pl.Int64, "checks": pl.Int64, "mean_recall": pl.Float64,
    "rows_partial": pl.Int64, "folds": pl.Int64,
    "parse_failures": pl.Int64, "finish_length": pl.Int64, "mean_carried_chars": pl.Float64,
    "carried_chars_rows": pl.Int64, "audited_rows": pl.Int64, "carrier_values": pl.Int64,
    "audited_checks": pl.Int64, "repeats": pl.Int64, "distinct_answers": pl.Int64,
}
"""Columns of pilot_arms(): full precision, one row per (configuration, arm) of the primary scenario."""


def _arm_order(study: Any, arms: list[str]) -> list[str]:
    first = [a for a in (study.control, study.treatment) if a in arms]
    return first + sorted(a for a in arms if a not in first)


def pilot_arms(package: Any, params: Any) -> pl.DataFrame:
    """Per (configuration, arm) of the pilot's primary scenario: the SCHEMA columns (empty frame if none)."""
    s = package.study
    rows = package.rows.filter(pl.col("scenario") == s.scenario)
    cells = cell_summary(rows, params, by_execution_group=False, scenario=s.scenario).table
    if cells.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    keys = ["configuration", "arm"]
    counts = rows.group_by(keys).agg(pl.len().cast(pl.Int64).alias("rows"),
                                     pl.col("valid").fill_null(False).sum().cast(pl.Int64).alias("valid_rows"))
    scored = valid_outcome_rows(rows, s.scenario)
    answer = pl.col("answer").n_unique() if "answer" in scored.columns else pl.lit(None, pl.UInt32)
    ident = scored.group_by(keys).agg(pl.col("repeat").n_unique().cast(pl.Int64).alias("repeats"),
                                      answer.cast(pl.Int64).alias("distinct_answers"),
                                      pl.col("checks_passed").sum().cast(pl.Int64).alias("checks_passed"),
                                      pl.col("checks_total").sum().cast(pl.Int64).alias("checks"))
    total = int(as_float(scored.get_column("checks_total").max() or 0))
    audited = (carrier_rows(rows, package.checks, s.scenario).group_by(keys)
               .agg(pl.len().cast(pl.Int64).alias("audited_rows"),
                    pl.col("carrier").sum().cast(pl.Int64).alias("carrier_values"))
               .with_columns((pl.col("audited_rows") * total).cast(pl.Int64).alias("audited_checks")))
    frame = (cells.rename({"rows": "scored_rows"})
             .join(counts, on=keys, how="left").join(ident, on=keys, how="left")
             .join(audited, on=keys, how="left"))
    for name, dtype in SCHEMA.items():
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype).alias(name))
    order = {a: i for i, a in enumerate(_arm_order(s, frame.get_column("arm").unique().to_list()))}
    frame = frame.with_columns(pl.col("arm").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
    return frame.sort("configuration", "_o").select([pl.col(c).cast(t) for c, t in SCHEMA.items()])
