"""Within-row dependence of the binary checks: one-way ICC(1) and design effect (paper 4).

Methods note. Groups are the valid rows of one scenario with an outcome; each
has k binary checks (checks.csv `passed`). With s_i checks passed in row i,
p_i = s_i / k and grand mean p over all n*k checks:
  MSB = k * sum_i (p_i - p)^2 / (n - 1)
  MSW = sum_i s_i (1 - p_i) / (n (k - 1))      (sum_j (y_ij - p_i)^2 = k p_i (1 - p_i))
  ICC(1) = (MSB - MSW) / (MSB + (k - 1) MSW)
design effect = 1 + (k - 1) ICC and effective observations per row = k / design effect.
Undefined (NaN with a reason): fewer than two rows, fewer than two checks a row,
or zero variance (every check of every row has the same value).
Clamp and flag: a design effect at or below DEFF_TOLERANCE (the ICC floor -1/(k-1), where
floating point leaves e.g. 1.1e-16 when every row passes half its checks) is clamped to 0 and
the effective-n is NaN with a reason; a negative ICC (checks within a row less alike than across
rows) would give more than k effective observations per row, so the effective-n is NaN with a
reason there too (the design-effect correction assumes ICC >= 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.estimators.common import (
    NAN,
    ZERO_VARIANCE,
    EstimatorError,
    frozen_reasons,
    require_columns,
    scenario_total,
    valid_outcome_rows,
)

DEFF_TOLERANCE = 1e-9
"""A design effect at or below this is the ICC floor up to rounding: clamped to 0, effective-n undefined."""
NEGATIVE_ICC = ("ICC is negative (checks within a row are less alike than across rows): k / design effect "
                "would exceed the k checks a row has, so effective observations per row are not reported")
DEFF_AT_FLOOR = ("design effect at or below {tol:g} (ICC at its floor -1/(k-1), e.g. every row passes half "
                 "its checks): clamped to 0, effective observations per row undefined")


class CheckCountError(EstimatorError):
    """A row's checks in checks.csv do not match its checks_total / checks_passed."""


@dataclass(frozen=True, slots=True)
class OneWayICC:
    """One-way random-effects ICC(1) of equal-size groups of binary outcomes."""

    groups: int
    """Number of groups (rows)."""
    k: int
    """Observations per group (checks per row)."""
    msb: float
    """Between-group mean square."""
    msw: float
    """Within-group mean square."""
    icc: float
    """(MSB - MSW) / (MSB + (k - 1) MSW)."""
    design_effect: float
    """1 + (k - 1) ICC."""
    effective_per_group: float
    """k / design effect."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""


@dataclass(frozen=True, slots=True)
class WithinRowDependence:
    """The docs/RESULTS_CONTRACT.md `dependence` block of one scenario."""

    scenario: str
    """Scenario whose rows are the groups."""
    rows: int
    """Valid rows of the scenario with an outcome."""
    checks_per_row: int
    """Binary checks per row (k)."""
    icc: float
    """One-way ICC(1) of the checks with rows as groups."""
    design_effect: float
    """1 + (k - 1) ICC."""
    effective_per_row: float
    """k / design effect: independent observations one row is worth."""
    msb: float
    """Between-row mean square."""
    msw: float
    """Within-row mean square."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""


def icc_oneway(successes: np.ndarray, k: int) -> OneWayICC:
    """ICC(1) from per-group success counts of k binary observations each (vectorised)."""
    s = np.asarray(successes, dtype=float)
    n = int(s.size)
    reasons: dict[str, str] = {}
    if n < 2 or k < 2:
        why = "fewer than two rows" if n < 2 else "fewer than two checks a row"
        reasons.update(dict.fromkeys(("msb", "msw", "icc", "design_effect", "effective_per_group"), why))
        return OneWayICC(n, k, NAN, NAN, NAN, NAN, NAN, frozen_reasons(reasons))
    p_i = s / k
    grand = s.sum() / (n * k)
    msb = float(k * np.square(p_i - grand).sum() / (n - 1))
    msw = float((s * (1.0 - p_i)).sum() / (n * (k - 1)))
    denom = msb + (k - 1) * msw
    if denom <= 0.0:
        reasons.update(dict.fromkeys(("icc", "design_effect", "effective_per_group"), ZERO_VARIANCE))
        return OneWayICC(n, k, msb, msw, NAN, NAN, NAN, frozen_reasons(reasons))
    icc = (msb - msw) / denom
    deff = 1.0 + (k - 1) * icc
    if deff <= DEFF_TOLERANCE:  # the ICC floor -1/(k-1), up to floating-point noise
        deff = 0.0
        reasons["effective_per_group"] = DEFF_AT_FLOOR.format(tol=DEFF_TOLERANCE)
        eff = NAN
    elif icc < 0.0:
        reasons["effective_per_group"] = NEGATIVE_ICC
        eff = NAN
    else:
        eff = k / deff
    return OneWayICC(n, k, msb, msw, icc, deff, eff, frozen_reasons(reasons))


def row_check_counts(rows: pl.DataFrame, checks: pl.DataFrame, scenario: str) -> pl.DataFrame:
    """row_id, checks (count), passed (sum) for the valid outcome rows of `scenario`."""
    require_columns(checks, ("row_id", "passed"), "checks")
    base = valid_outcome_rows(rows, scenario).select("row_id", "checks_total", "checks_passed")
    counts = (checks.join(base.select("row_id"), on="row_id", how="semi").group_by("row_id")
              .agg(pl.len().cast(pl.Int64).alias("checks"),
                   pl.col("passed").fill_null(False).sum().cast(pl.Int64).alias("passed")))
    joined = base.join(counts, on="row_id", how="left").with_columns(
        pl.col("checks", "passed").fill_null(0))
    bad = joined.filter((pl.col("checks") != pl.col("checks_total"))
                        | (pl.col("passed") != pl.col("checks_passed")))
    if bad.height:
        r = bad.row(0, named=True)
        raise CheckCountError(
            f"{bad.height} row(s) of scenario {scenario!r} disagree with checks.csv, e.g. row "
            f"{r['row_id']!r}: {r['checks']} checks / {r['passed']} passed there, rows.csv says "
            f"{r['checks_total']} / {r['checks_passed']}; regenerate checks.csv for those rows")
    return joined


def within_row_dependence(rows: pl.DataFrame, checks: pl.DataFrame,
                          scenario: str) -> WithinRowDependence:
    """ICC(1), design effect and effective observations per row for `scenario`."""
    counts = row_check_counts(rows, checks, scenario)
    k = scenario_total(counts, scenario) or 0
    est = icc_oneway(counts.get_column("passed").to_numpy(), k)
    reasons = {("effective_per_row" if f == "effective_per_group" else f): why
               for f, why in est.reasons.items()}
    return WithinRowDependence(scenario=scenario, rows=counts.height, checks_per_row=k,
                               icc=est.icc, design_effect=est.design_effect,
                               effective_per_row=est.effective_per_group, msb=est.msb,
                               msw=est.msw, reasons=frozen_reasons(reasons))
