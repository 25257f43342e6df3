"""Carrier audit: graded values present in the carrier versus answered correctly (paper 4.10).

Population: valid rows of the scenario with an outcome whose checks all have a non-null
`in_carrier` (the *audited* rows). Per row: `carrier` = checks whose value is in the final
carrier, `answered` = checks passed; a *present-missed* check is in the carrier but not
answered, an *absent-answered* check is answered but not in the carrier (guessing or
reconstruction). Direction of a disagreeing row: `carrier_higher` or `answer_higher`.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import require_columns, valid_outcome_rows


def carrier_rows(rows: pl.DataFrame, checks: pl.DataFrame, scenario: str | None) -> pl.DataFrame:
    """One line per audited row: row_id, configuration, arm, carrier, answered, present_missed,
    absent_answered, direction ('equal', 'carrier_higher', 'answer_higher')."""
    require_columns(checks, ("row_id", "passed", "in_carrier"), "checks")
    base = valid_outcome_rows(rows, scenario).select("row_id", "configuration", "arm")
    ic, ps = pl.col("in_carrier"), pl.col("passed")
    per_row = (
        checks.lazy()
        .group_by("row_id")
        .agg(
            ic.null_count().alias("_unaudited"),
            ic.sum().cast(pl.Int64).alias("carrier"),
            ps.sum().cast(pl.Int64).alias("answered"),
            (ic & ~ps).sum().cast(pl.Int64).alias("present_missed"),
            (~ic & ps).sum().cast(pl.Int64).alias("absent_answered"),
        )
        .filter(pl.col("_unaudited") == 0)
        .drop("_unaudited")
        .collect()
    )
    return (
        base.join(per_row, on="row_id", how="inner")
        .with_columns(
            pl.when(pl.col("carrier") == pl.col("answered"))
            .then(pl.lit("equal"))
            .when(pl.col("carrier") > pl.col("answered"))
            .then(pl.lit("carrier_higher"))
            .otherwise(pl.lit("answer_higher"))
            .alias("direction")
        )
        .sort("row_id")
    )


@dataclass(frozen=True, slots=True)
class CarrierAudit:
    """Carrier-presence versus answer counts over the audited rows."""

    audited_rows: int
    """Valid rows with an outcome whose checks all record in_carrier."""
    agree_rows: int
    """Audited rows whose carrier count equals their answered count."""
    carrier_higher_rows: int
    """Rows where more graded values are in the carrier than answered."""
    answer_higher_rows: int
    """Rows where more graded values are answered than present in the carrier."""
    present_missed_rows: int
    """Rows with at least one check in the carrier but not answered."""
    absent_answered_rows: int
    """Rows with at least one check answered although absent from the carrier."""
    per_row: pl.DataFrame
    """carrier_rows(): one line per audited row."""
    per_arm: pl.DataFrame
    """arm, audited_rows, present_missed_rows, share (present_missed / audited), absent_answered_rows."""


def carrier_audit(rows: pl.DataFrame, checks: pl.DataFrame, scenario: str | None) -> CarrierAudit:
    """Audit every row whose checks all have in_carrier (scenario None = all scenarios)."""
    pr = carrier_rows(rows, checks, scenario)
    per_arm = (
        pr.group_by("arm")
        .agg(
            pl.len().cast(pl.Int64).alias("audited_rows"),
            (pl.col("present_missed") > 0).sum().cast(pl.Int64).alias("present_missed_rows"),
            (pl.col("absent_answered") > 0).sum().cast(pl.Int64).alias("absent_answered_rows"),
        )
        .with_columns((pl.col("present_missed_rows") / pl.col("audited_rows")).alias("share"))
        .select("arm", "audited_rows", "present_missed_rows", "share", "absent_answered_rows")
        .sort("arm")
    )
    d = pr["direction"]
    return CarrierAudit(
        audited_rows=pr.height,
        agree_rows=int((d == "equal").sum()),
        carrier_higher_rows=int((d == "carrier_higher").sum()),
        answer_higher_rows=int((d == "answer_higher").sum()),
        present_missed_rows=int((pr["present_missed"] > 0).sum()),
        absent_answered_rows=int((pr["absent_answered"] > 0).sum()),
        per_row=pr,
        per_arm=per_arm,
    )


@dataclass(frozen=True, slots=True)
class CeilingAdherence:
    """Realised carrier length against the declared ceiling, per arm (paper 4.9)."""

    tolerance: float
    """Relative distance |carried - declared| / declared counted as 'at the ceiling'."""
    per_arm: pl.DataFrame
    """arm, rows (valid rows recording both lengths), at_ceiling, above_ceiling, mean_fill,
    finish_stop, finish_length (fold calls summed over the arm's valid rows)."""


def ceiling_adherence(rows: pl.DataFrame, scenario: str | None, tolerance: float = 0.005) -> CeilingAdherence:
    """Rows whose carried length lands within `tolerance` of the declared ceiling, and finish reasons.

    Valid rows of `scenario` (all when None) with carried_chars and a positive declared_chars;
    arms without a declared allowance do not appear.
    """
    require_columns(rows, ("carried_chars", "declared_chars", "finish_stop", "finish_length"), "rows")
    df = rows.filter(pl.col("valid") & pl.col("carried_chars").is_not_null()
                     & pl.col("declared_chars").is_not_null() & (pl.col("declared_chars") > 0))
    if scenario is not None:
        df = df.filter(pl.col("scenario") == scenario)
    ratio = pl.col("carried_chars").cast(pl.Float64) / pl.col("declared_chars").cast(pl.Float64)
    per_arm = (
        df.group_by("arm")
        .agg(
            pl.len().cast(pl.Int64).alias("rows"),
            ((ratio - 1.0).abs() <= tolerance).sum().cast(pl.Int64).alias("at_ceiling"),
            (ratio > 1.0 + tolerance).sum().cast(pl.Int64).alias("above_ceiling"),
            ratio.mean().alias("mean_fill"),
            pl.col("finish_stop").sum().cast(pl.Int64).alias("finish_stop"),
            pl.col("finish_length").sum().cast(pl.Int64).alias("finish_length"),
        )
        .sort("arm")
    )
    return CeilingAdherence(tolerance, per_arm)
