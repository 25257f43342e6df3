"""Failure modes: parse failures, invalid rows, fabrication versus abstention, grader agreement.

Paper sections 4.4 (label-bound vs presence grader), 4.11 (fabrication and abstention) and 6
(parse failures, catch-up invalidations). The abstention markers are data in
`Params.abstention_markers` (case-insensitive literal substrings); the high-frequency
placeholder signature is the data table `PLACEHOLDER_SIGNATURE` below (regexes by category).
Answers are lower-cased and typographic apostrophes folded to ASCII before matching. The
v1 package kept a 400-character answer prefix, so a classification describes what the answer
began by doing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from analysis.estimators.common import (
    as_float,
    recall_at_least,
    recall_expr,
    require_columns,
    valid_outcome_rows,
)
from analysis.evidence.schema import extra_column
from analysis.params import DEFAULT_PARAMS, Params


@dataclass(frozen=True, slots=True)
class Pattern:
    """One entry of a marker table."""

    name: str
    """Short name reported in results."""
    category: str
    """Signature category (stock_port, round_number, documentation_host, canonical_uuid, round_time)."""
    regex: str
    """Rust-regex (polars) pattern, matched against the lower-cased answer."""


# High-frequency placeholder values that replace planted identifiers (paper 4.11).
PLACEHOLDER_SIGNATURE: tuple[Pattern, ...] = tuple(
    Pattern(name, category, regex)
    for name, category, regex in (
        ("stock_port", "stock_port", r"\b(?:443|3000|3306|5000|5432|6379|8000|8080|8443|8888|9000|9090|9200|27017)\b"),
        ("round_number", "round_number", r"\b[1-9]0{2,}\b"),
        ("power_of_two_count", "round_number", r"\b(?:8|16|32|64|128|256|512|1024) (?:shards?|replicas?|nodes?)\b"),
        ("example_domain", "documentation_host", r"\bexample\.(?:com|org|net)\b"),
        ("localhost", "documentation_host", r"\blocalhost\b|\b127\.0\.0\.1\b"),
        ("nil_uuid", "canonical_uuid", r"\b00000000-0000-0000-0000-000000000000\b"),
        ("rfc_example_uuid", "canonical_uuid", r"\b123e4567-e89b-12d3-a456-426614174000\b"),
        ("round_time", "round_time", r"\b(?:[01]\d|2[0-3]):00\b"),
    )
)


def _normalised_answer() -> pl.Expr:
    return pl.col("answer").fill_null("").str.to_lowercase().str.replace_all("\u2019", "'", literal=True)


def _any_match(patterns: Sequence[Pattern]) -> pl.Expr:
    ans = _normalised_answer()
    return pl.any_horizontal([ans.str.contains(p.regex) for p in patterns]) if patterns else pl.lit(False)


def _any_marker(markers: Sequence[str]) -> pl.Expr:
    ans = _normalised_answer()
    folded = [m.lower().replace("\u2019", "'") for m in markers if m]
    return pl.any_horizontal([ans.str.contains(m, literal=True) for m in folded]) if folded else pl.lit(False)


# --------------------------------------------------------------------------- parse failures
@dataclass(frozen=True, slots=True)
class ParseFailureGroup:
    """Parse-failure rows against clean rows for one arm group (or all arms)."""

    group: str
    """Group name ('all' for every arm)."""
    arms: tuple[str, ...] | None
    """Arms of the group (None = all arms)."""
    failure_rows: int
    """Rows of the scenario with parse_failures > 0, valid or not."""
    failure_valid: int
    """Of those, valid rows with an outcome (they enter the aggregates)."""
    failure_invalid: int
    """failure_rows - failure_valid (invalid, or valid without an outcome)."""
    failure_mean: float
    """Mean recall of the valid parse-failure rows (NaN when none)."""
    clean_rows: int
    """Valid rows with an outcome and parse_failures == 0."""
    clean_mean: float
    """Mean recall of the clean rows (NaN when none)."""


def parse_failures(
    rows: pl.DataFrame,
    scenario: str,
    groups: Sequence[tuple[str, Sequence[str]]] = (("single_field_schema", ("j", "p", "t")),),
) -> tuple[ParseFailureGroup, ...]:
    """Parse-failure vs clean rows for every named arm group and for all arms (last entry)."""
    require_columns(rows, ("parse_failures",), "rows")
    scen = rows.filter(pl.col("scenario") == scenario)
    out = []
    for name, arms in [*groups, ("all", None)]:
        sub = scen if arms is None else scen.filter(pl.col("arm").is_in(list(arms)))
        failing = sub.filter(pl.col("parse_failures") > 0)
        ok = valid_outcome_rows(sub, None)
        fv = ok.filter(pl.col("parse_failures") > 0)
        clean = ok.filter(pl.col("parse_failures") == 0)
        out.append(
            ParseFailureGroup(
                group=name,
                arms=tuple(arms) if arms is not None else None,
                failure_rows=failing.height,
                failure_valid=fv.height,
                failure_invalid=failing.height - fv.height,
                failure_mean=as_float(fv["recall"].mean()) if fv.height else math.nan,
                clean_rows=clean.height,
                clean_mean=as_float(clean["recall"].mean()) if clean.height else math.nan,
            )
        )
    return tuple(out)


def invalid_rows(rows: pl.DataFrame, scenario: str | None) -> pl.DataFrame:
    """Invalid rows by reason and arm: invalid_reason, arm, rows, with_outcome, mean_recall (NaN/null when none)."""
    df = rows.filter(~pl.col("valid"))
    if scenario is not None:
        df = df.filter(pl.col("scenario") == scenario)
    return (
        df.with_columns(recall_expr(), pl.col("invalid_reason").fill_null("(none)"))
        .group_by("invalid_reason", "arm")
        .agg(
            pl.len().cast(pl.Int64).alias("rows"),
            pl.col("recall").is_not_null().sum().cast(pl.Int64).alias("with_outcome"),
            pl.col("recall").mean().alias("mean_recall"),
        )
        .sort("invalid_reason", "arm")
    )


# --------------------------------------------------------------------------- fabrication
@dataclass(frozen=True, slots=True)
class FabricationAbstention:
    """Failing rows (recall < threshold) classified by their answer."""

    threshold: float
    """Rows with recall below this fail."""
    failing_rows: int
    """Valid failing rows with an outcome."""
    fabricates: int
    """Failing rows whose non-empty answer contains no abstention marker."""
    abstains: int
    """Failing rows whose answer contains at least one abstention marker."""
    no_answer: int
    """Failing rows with an empty answer (neither class)."""
    placeholder_rows: int
    """Failing rows whose answer matches at least one placeholder pattern."""
    per_arm: pl.DataFrame
    """arm, failing_rows, fabricates, abstains, no_answer, placeholder_rows, placeholder_fabricating."""
    per_row: pl.DataFrame
    """row_id, configuration, arm, recall, class, placeholder, and one boolean column per signature category."""


def fabrication(
    rows: pl.DataFrame,
    scenario: str,
    threshold: float = 0.5,
    markers: Sequence[str] = DEFAULT_PARAMS.abstention_markers,
    signature: Sequence[Pattern] = PLACEHOLDER_SIGNATURE,
) -> FabricationAbstention:
    """Classify every failing row (recall < threshold, exact) as fabricating, abstaining or
    without answer; flag answers matching the placeholder signature."""
    require_columns(rows, ("answer",), "rows")
    cats = sorted({p.category for p in signature})
    df = (
        valid_outcome_rows(rows, scenario)
        .filter(~recall_at_least(threshold))
        .with_columns(
            pl.when(pl.col("answer").fill_null("").str.strip_chars() == "")
            .then(pl.lit("no_answer"))
            .when(_any_marker(markers))
            .then(pl.lit("abstains"))
            .otherwise(pl.lit("fabricates"))
            .alias("class"),
            *[_any_match([p for p in signature if p.category == c]).alias(c) for c in cats],
        )
        .with_columns(pl.any_horizontal([pl.col(c) for c in cats]).alias("placeholder") if cats
                      else pl.lit(False).alias("placeholder"))
    )
    per_row = df.select("row_id", "configuration", "arm", "recall", "class", "placeholder", *cats).sort("row_id")
    per_arm = (
        df.group_by("arm")
        .agg(
            pl.len().cast(pl.Int64).alias("failing_rows"),
            (pl.col("class") == "fabricates").sum().cast(pl.Int64).alias("fabricates"),
            (pl.col("class") == "abstains").sum().cast(pl.Int64).alias("abstains"),
            (pl.col("class") == "no_answer").sum().cast(pl.Int64).alias("no_answer"),
            pl.col("placeholder").sum().cast(pl.Int64).alias("placeholder_rows"),
            (pl.col("placeholder") & (pl.col("class") == "fabricates")).sum().cast(pl.Int64)
            .alias("placeholder_fabricating"),
        )
        .sort("arm")
    )
    cls = df["class"]
    return FabricationAbstention(
        threshold=threshold,
        failing_rows=df.height,
        fabricates=int((cls == "fabricates").sum()),
        abstains=int((cls == "abstains").sum()),
        no_answer=int((cls == "no_answer").sum()),
        placeholder_rows=int(df["placeholder"].sum()),
        per_arm=per_arm,
        per_row=per_row,
    )


# --------------------------------------------------------------------------- grader agreement
@dataclass(frozen=True, slots=True)
class GraderAgreement:
    """Label-bound (`passed`) versus presence (`passed_presence`) grader, per row and per check."""

    rows: int
    """Valid rows with an outcome whose checks all carry a presence verdict."""
    agree_rows: int
    """Rows whose label-bound and presence pass counts are equal (NaN-free count; 0 rows when column absent)."""
    checks: int
    """Checks of those rows."""
    agree_checks: int
    """Checks on which the two graders agree."""
    share_rows: float
    """agree_rows / rows (NaN when undefined)."""
    reason: str | None
    """Why agreement is undefined (no passed_presence column, no graded row), else None."""


def grader_agreement(rows: pl.DataFrame, checks: pl.DataFrame, scenario: str | None) -> GraderAgreement:
    """Agreement of the two graders where checks has a `passed_presence` column (else NaN + reason)."""
    presence = extra_column("passed_presence")  # an extra column of checks.csv, loaded as text
    if presence not in checks.columns:
        return GraderAgreement(0, 0, 0, 0, math.nan, "checks has no passed_presence column")
    pres = pl.col(presence)
    if checks.schema[presence] != pl.Boolean:
        low = pres.cast(pl.String).str.strip_chars().str.to_lowercase()
        pres = pl.when(low == "true").then(True).when(low == "false").then(False).otherwise(None)
    base = valid_outcome_rows(rows, scenario).select("row_id")
    per_row = (
        checks.join(base, on="row_id", how="semi")
        .with_columns(pres.alias("_pres"))
        .group_by("row_id")
        .agg(
            pl.col("_pres").is_null().any().alias("_missing"),
            pl.col("passed").sum().alias("_lb"),
            pl.col("_pres").sum().alias("_pr"),
            pl.len().alias("_n"),
            (pl.col("passed") == pl.col("_pres")).sum().alias("_agree"),
        )
        .filter(~pl.col("_missing"))
    )
    if per_row.height == 0:
        return GraderAgreement(0, 0, 0, 0, math.nan, "no valid row has a presence verdict on every check")
    agree = int((per_row["_lb"] == per_row["_pr"]).sum())
    return GraderAgreement(per_row.height, agree, int(per_row["_n"].sum()), int(per_row["_agree"].sum()),
                           agree / per_row.height, None)


@dataclass(frozen=True, slots=True)
class FailureModes:
    """All failure-mode summaries of one package."""

    parse: tuple[ParseFailureGroup, ...]
    """Parse-failure comparison per arm group, 'all' last."""
    invalid: pl.DataFrame
    """Invalid rows of the scenario by reason and arm."""
    fabrication: FabricationAbstention
    """Fabrication versus abstention among failing rows."""
    graders: GraderAgreement
    """Label-bound versus presence grader agreement."""


def failure_modes(
    rows: pl.DataFrame,
    checks: pl.DataFrame,
    scenario: str,
    params: Params = DEFAULT_PARAMS,
    arm_groups: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> FailureModes:
    """Every failure-mode summary on `scenario`.

    Params used: threshold_partial (failing rows), abstention_markers. `arm_groups` defaults to
    one group 'single_field_schema' = params.single_field_arms.
    """
    groups = arm_groups if arm_groups is not None else (("single_field_schema", params.single_field_arms),)
    return FailureModes(
        parse=parse_failures(rows, scenario, groups),
        invalid=invalid_rows(rows, scenario),
        fabrication=fabrication(rows, scenario, params.threshold_partial, params.abstention_markers),
        graders=grader_agreement(rows, checks, scenario),
    )
