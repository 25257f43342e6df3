"""Variance components of the primary estimand (issue 13): tau2, sigma2_within, ICC, missingness.

Methods note. The population is the paired panel of the primary contrast (paper 4.7,
analysis.estimators.paired): in-window partition runs with at least one complete pair. For
configuration i with n_i complete pairs the paired repeat differences are
d_ij = (passed_t - passed_c) / T (T = checks_total), modelled as d_ij = mu + a_i + e_ij with
Var(a_i) = tau2 (between-configuration variance of true effects) and Var(e_ij) = sigma2_within
(within-configuration variance of one paired repeat difference). Estimator: the one-way ANOVA
method of moments (Henderson I) for unbalanced groups, N = sum n_i, K configurations,
  MSW = sum_ij (d_ij - dbar_i)^2 / (N - K)                      -> sigma2_within
  MSB = sum_i n_i (dbar_i - dbar)^2 / (K - 1),  dbar = pair-weighted grand mean
  n0  = (N - sum n_i^2 / N) / (K - 1)
  tau2 = max(0, (MSB - MSW) / n0)                               (truncated at 0)
For a balanced panel with a positive untruncated value this equals the REML estimate of a
random-intercept model (checked against statsmodels MixedLM in the tests). Undefined (NaN with
a reason): sigma2_within when N - K < 1 (no configuration has two pairs), tau2 when K < 2 or
sigma2_within is undefined. The check-level ICC is analysis.estimators.dependence (rows as
groups). The per-arm missing rate is over the planned slots (repeats 1..planned_repeats) of the
panel runs: 1 - (valid rows with an outcome) / planned, split into invalid rows and absent rows.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis.estimators.common import (
    NAN,
    RUN_COLUMNS,
    Contrast,
    frozen_reasons,
    require_columns,
    scenario_total,
)
from analysis.estimators.dependence import within_row_dependence
from analysis.estimators.paired import RUN_KEY, complete_pairs, run_outcomes

METHOD = ("one-way ANOVA method of moments (Henderson I) on paired repeat differences, "
          "tau2 truncated at 0")


@dataclass(frozen=True, slots=True)
class ArmMissing:
    """Planned-outcome completeness of one arm over the panel runs."""

    arm: str
    """Arm code."""
    planned: int
    """Planned slots: sum over panel runs of planned_repeats."""
    with_outcome: int
    """Valid rows with an outcome among those slots."""
    invalid: int
    """Slots with a row that is invalid or has no outcome (and no valid row)."""
    absent: int
    """Slots with no row at all."""
    rate: float
    """(planned - with_outcome) / planned: the missing-or-invalid rate (NaN when planned is 0)."""


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """Components driving the precision of the equal-configuration paired mean."""

    contrast: Contrast
    """Treatment minus control, on the scenario."""
    checks_total: int | None
    """T, the scenario's checks per row (None when no outcomes)."""
    configurations: int
    """K: panel configurations (>= 1 complete pair)."""
    pairs: int
    """N: complete pairs over the panel."""
    pairs_per_configuration: tuple[int, ...]
    """n_i, sorted by configuration."""
    within_df: int
    """N - K, the degrees of freedom of sigma2_within."""
    grand_mean: float
    """Pair-weighted mean difference (dbar)."""
    panel_mean: float
    """Equal-configuration mean of the configuration means (the primary estimate)."""
    msb: float
    """Between-configuration mean square."""
    msw: float
    """Within-configuration mean square (= sigma2_within)."""
    n0: float
    """Effective pairs per configuration (N - sum n_i^2 / N) / (K - 1)."""
    tau2_untruncated: float
    """(MSB - MSW) / n0 before truncation."""
    tau2: float
    """Between-configuration variance of true effects, truncated at 0."""
    tau2_truncated: bool
    """True when the untruncated value was negative and tau2 was set to 0."""
    sigma2_within: float
    """Within-configuration variance of one paired repeat difference."""
    icc: float
    """Check-level ICC(1) of the scenario (rows as groups); NaN without checks."""
    design_effect: float
    """1 + (T - 1) ICC."""
    icc_rows: int
    """Rows the ICC was computed over."""
    missing: tuple[ArmMissing, ...]
    """Per-arm missing-or-invalid planned outcomes (control first)."""
    method: str
    """The estimator in words."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""

    def missing_rate(self) -> dict[str, float]:
        """Arm code -> missing-or-invalid rate."""
        return {m.arm: m.rate for m in self.missing}


def _arm_missing(rows: pl.DataFrame, window: pl.DataFrame, contrast: Contrast,
                 run_rows: pl.DataFrame) -> tuple[ArmMissing, ...]:
    planned = int(window.get_column("planned_repeats").sum()) if window.height else 0
    scen = (rows.filter(pl.col("scenario") == contrast.scenario)
            .join(window.select(*RUN_KEY, "planned_repeats"), on=RUN_KEY, how="inner")
            .filter((pl.col("repeat") >= 1) & (pl.col("repeat") <= pl.col("planned_repeats"))))
    out = []
    for arm in (contrast.control, contrast.treatment):
        ok = run_rows.filter(pl.col("arm") == arm).height
        slots_with_row = scen.filter(pl.col("arm") == arm).select(*RUN_KEY, "repeat").unique().height
        out.append(ArmMissing(arm=arm, planned=planned, with_outcome=ok, invalid=slots_with_row - ok,
                              absent=planned - slots_with_row,
                              rate=(planned - ok) / planned if planned else NAN))
    return tuple(out)


def anova_components(groups: list[np.ndarray]) -> dict[str, Any]:
    """Henderson I on a list of per-configuration difference arrays (see the module note)."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    k = len(groups)
    n_i = np.array([g.size for g in groups], dtype=float)
    n = float(n_i.sum())
    reasons: dict[str, str] = {}
    means = np.array([g.mean() for g in groups]) if k else np.zeros(0)
    grand = float(np.concatenate(groups).mean()) if k else NAN
    df_w = int(n - k)
    if df_w >= 1:
        msw = float(sum(np.square(g - g.mean()).sum() for g in groups) / df_w)
    else:
        msw = NAN
        reasons["msw"] = reasons["sigma2_within"] = (
            "no configuration has two complete pairs: within-configuration variance is undefined"
            if k else "no configurations in this population")
    if k >= 2:
        msb = float((n_i * np.square(means - grand)).sum() / (k - 1))
        n0 = float((n - np.square(n_i).sum() / n) / (k - 1))
    else:
        msb = n0 = NAN
        why = "fewer than two configurations: between-configuration variance is undefined"
        reasons.update(msb=why, n0=why)
    if k >= 2 and df_w >= 1:
        raw = (msb - msw) / n0
        tau2, truncated = max(0.0, raw), raw < 0
    else:
        raw = tau2 = NAN
        truncated = False
        why = reasons.get("msb") or reasons["msw"]
        reasons.update(tau2=why, tau2_untruncated=why)
    return dict(configurations=k, pairs=int(n), within_df=max(df_w, 0), grand_mean=grand,
                panel_mean=float(means.mean()) if k else NAN, msb=msb, msw=msw, n0=n0,
                tau2_untruncated=raw, tau2=tau2, tau2_truncated=truncated, sigma2_within=msw,
                reasons=reasons)


def _panel_differences(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast,
                       recency_cutoff: datetime.date
                       ) -> tuple[pl.DataFrame, pl.DataFrame, int | None, pl.DataFrame]:
    require_columns(runs, RUN_COLUMNS, "runs")
    window = runs.filter(pl.col("published") >= recency_cutoff)
    run_rows = run_outcomes(rows, window, contrast)
    total = scenario_total(run_rows, contrast.scenario)
    pairs = complete_pairs(run_rows, contrast).with_columns(
        d=(pl.col("treatment_passed") - pl.col("control_passed")).cast(pl.Float64) / float(total or 1))
    per = pairs.group_by("configuration").agg(pl.col("d")).sort("configuration")
    return window, run_rows, total, per


def difference_groups(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast, *,
                      recency_cutoff: datetime.date) -> dict[str, np.ndarray]:
    """Configuration -> its paired repeat differences (recall scale), for the panel."""
    _, _, _, per = _panel_differences(rows, runs, contrast, recency_cutoff)
    return {c: np.asarray(v, dtype=float) for c, v in zip(per.get_column("configuration").to_list(),
                                                            per.get_column("d").to_list(), strict=True)}


def variance_components(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast, *,
                        recency_cutoff: datetime.date, checks: pl.DataFrame | None = None
                        ) -> VarianceComponents:
    """tau2, sigma2_within, check-level ICC and per-arm missingness of the paired panel."""
    window, run_rows, total, per = _panel_differences(rows, runs, contrast, recency_cutoff)
    groups = [np.asarray(v, dtype=float) for v in per.get_column("d").to_list()]
    comp = anova_components(groups)
    reasons = dict(comp.pop("reasons"))
    panel_keys = per.get_column("configuration")
    panel_runs = window.filter(pl.col("configuration").is_in(panel_keys.to_list()))
    missing = _arm_missing(rows, panel_runs, contrast, run_rows)
    for m in missing:
        if m.planned == 0:
            reasons[f"missing_rate.{m.arm}"] = "no planned slots in the panel"
    icc = deff = NAN
    icc_rows = 0
    if checks is None:
        reasons.update(icc="no checks table given", design_effect="no checks table given")
    else:
        dep = within_row_dependence(rows, checks, contrast.scenario)
        icc, deff, icc_rows = dep.icc, dep.design_effect, dep.rows
        for f in ("icc", "design_effect"):
            if f in dep.reasons:
                reasons[f] = dep.reasons[f]
    return VarianceComponents(
        contrast=contrast, checks_total=total,
        pairs_per_configuration=tuple(int(g.size) for g in groups),
        icc=icc, design_effect=deff, icc_rows=icc_rows, missing=missing, method=METHOD,
        reasons=frozen_reasons(reasons), **comp)
