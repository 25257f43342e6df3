"""The paired panel effect of a contrast and its sensitivity subsets (paper 4.7, docs/RESULTS_CONTRACT.md).

Methods note. The panel is every configuration named in the partition runs,
published on or after the recency cutoff, with at least one complete pair. A
complete pair is a repeat (1..planned_repeats) of that run's (configuration,
execution_group) with a valid control row and a valid treatment row on the
scenario, both with an outcome. A configuration's effect is the mean over its
complete pairs of treatment minus control recall; with one `checks_total` T per
scenario it is the ratio of integers sum(passed_t - passed_c) / (pairs * T), so
its sign is counted exactly. Configurations are then weighted equally: mean,
median and quartiles (linear interpolation, R type 7), range, leave-one-out
range and the t-style dispersion interval mean +/- t(1 - alpha/2, n - 1) sd / sqrt(n).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import polars as pl

from analysis.estimators.common import (
    BLOCK,
    FEWER_THAN_TWO,
    NAN,
    NO_CONFIGURATIONS,
    RUN_COLUMNS,
    Contrast,
    EstimatorError,
    frozen_reasons,
    require_columns,
    scenario_total,
    single_outcomes,
    t_interval,
    valid_outcome_rows,
)
from analysis.params import Params

RUN_KEY = ("configuration", "execution_group")


@dataclass(frozen=True, slots=True)
class ConfigurationEffect:
    """One panel configuration's paired effect and its arm summaries."""

    configuration: str
    """Configuration key from study.toml."""
    execution_group: str
    """Execution group of its partition run; pairs never cross groups."""
    family: str
    """Declared model family."""
    pairs: int
    """Complete pairs (repeats with both arms valid with an outcome)."""
    effect: float
    """Mean over complete pairs of treatment minus control recall."""
    effect_exact: Fraction
    """The same effect as an exact rational."""
    control_rows: int
    """Valid control rows of the run on the scenario with an outcome, paired or not."""
    treatment_rows: int
    """Valid treatment rows of the run on the scenario with an outcome, paired or not."""
    control_mean: float
    """Mean recall of those control rows (NaN when there are none)."""
    treatment_mean: float
    """Mean recall of those treatment rows (NaN when there are none)."""


@dataclass(frozen=True, slots=True)
class PanelSummary:
    """Equal-configuration summary of a set of configuration effects."""

    configurations: int
    """Configurations summarised."""
    mean: float
    """Equal-configuration mean effect."""
    median: float
    """Median effect."""
    q1: float
    """First quartile (linear interpolation, type 7)."""
    q3: float
    """Third quartile (type 7)."""
    min: float
    """Smallest effect."""
    max: float
    """Largest effect."""
    positive: int
    """Effects > 0, counted exactly."""
    negative: int
    """Effects < 0, counted exactly."""
    zero: int
    """Effects == 0, counted exactly."""
    loo_min: float
    """Smallest panel mean with one configuration left out."""
    loo_max: float
    """Largest panel mean with one configuration left out."""
    dispersion_lo: float
    """Lower end of mean -/+ t(1 - alpha/2, n - 1) sd / sqrt(n)."""
    dispersion_hi: float
    """Upper end of that interval."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN, for every undefined field."""


@dataclass(frozen=True, slots=True)
class Panel:
    """The paired panel of one contrast."""

    contrast: Contrast
    """Which arms, on which scenario."""
    recency_cutoff: datetime.date
    """Configurations published on/after this date are in the window."""
    checks_total: int | None
    """The scenario's checks per row (None when it has no outcomes)."""
    effects: tuple[ConfigurationEffect, ...]
    """Per-configuration effects, sorted by configuration."""
    frame: pl.DataFrame
    """The same as a DataFrame (adds diff_sum, denominator, published, planned_repeats)."""
    summary: PanelSummary
    """Equal-configuration summary over the panel."""


def run_outcomes(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast) -> pl.DataFrame:
    """Valid control/treatment rows with an outcome inside the runs' (configuration, group, 1..planned)."""
    require_columns(runs, RUN_COLUMNS, "runs")
    if contrast.control == contrast.treatment:
        raise EstimatorError(f"control and treatment are both {contrast.control!r}; "
                             "a contrast needs two different arms")
    out = valid_outcome_rows(rows, contrast.scenario, [contrast.control, contrast.treatment])
    out = out.join(runs.select(*RUN_KEY, "planned_repeats"), on=RUN_KEY, how="inner")
    out = out.filter((pl.col("repeat") >= 1) & (pl.col("repeat") <= pl.col("planned_repeats")))
    return single_outcomes(out, (*BLOCK, "arm"))


def complete_pairs(run_rows: pl.DataFrame, contrast: Contrast) -> pl.DataFrame:
    """One row per complete pair: BLOCK, control/treatment passed and recall."""
    def arm(code: str, tag: str) -> pl.DataFrame:
        return run_rows.filter(pl.col("arm") == code).select(
            *BLOCK, pl.col("checks_passed").alias(f"{tag}_passed"),
            pl.col("recall").alias(f"{tag}_recall"))
    return arm(contrast.control, "control").join(arm(contrast.treatment, "treatment"),
                                                 on=BLOCK, how="inner")


def _arm_summaries(run_rows: pl.DataFrame, contrast: Contrast) -> pl.DataFrame:
    parts = []
    for code, tag in ((contrast.control, "control"), (contrast.treatment, "treatment")):
        parts.append(run_rows.filter(pl.col("arm") == code).group_by(RUN_KEY).agg(
            pl.len().cast(pl.Int64).alias(f"{tag}_rows"), pl.col("recall").mean().alias(f"{tag}_mean")))
    return parts[0].join(parts[1], on=RUN_KEY, how="full", coalesce=True)


def paired_effects_frame(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast,
                         recency_cutoff: datetime.date) -> tuple[pl.DataFrame, int | None]:
    """Per-configuration effects of the in-window runs with >= 1 complete pair, and T."""
    dup = runs.group_by("configuration").len().filter(pl.col("len") > 1)
    if dup.height:
        raise EstimatorError(
            f"configuration(s) {sorted(dup.get_column('configuration'))} have more than one "
            "[[partition_runs]] entry; keep at most one partition run per configuration")
    window = runs.filter(pl.col("published") >= recency_cutoff)
    run_rows = run_outcomes(rows, window, contrast)
    total = scenario_total(run_rows, contrast.scenario)
    pairs = complete_pairs(run_rows, contrast).group_by(RUN_KEY).agg(
        pl.len().cast(pl.Int64).alias("pairs"),
        (pl.col("treatment_passed") - pl.col("control_passed")).sum().cast(pl.Int64).alias("diff_sum"))
    frame = (window.select(*RUN_COLUMNS).join(pairs, on=RUN_KEY, how="inner")
             .join(_arm_summaries(run_rows, contrast), on=RUN_KEY, how="left")
             .with_columns(pl.col("control_rows", "treatment_rows").fill_null(0),
                           denominator=pl.col("pairs") * (total or 1))
             .with_columns(effect=pl.col("diff_sum").cast(pl.Float64)
                           / pl.col("denominator").cast(pl.Float64))
             .sort("configuration"))
    return frame, total


def summarize(frame: pl.DataFrame, alpha: float) -> PanelSummary:
    """Equal-configuration summary of `frame` (columns effect, diff_sum)."""
    x = frame.get_column("effect").to_numpy().astype(float)
    signs = np.sign(frame.get_column("diff_sum").to_numpy()) if frame.height else np.zeros(0)
    n = int(x.size)
    reasons: dict[str, str] = {}
    if n == 0:
        stats_ = dict.fromkeys(("mean", "median", "q1", "q3", "min", "max"), NAN)
        reasons.update(dict.fromkeys(stats_, NO_CONFIGURATIONS))
    else:
        q1, median, q3 = np.percentile(x, [25.0, 50.0, 75.0])
        stats_ = dict(mean=float(x.mean()), median=float(median), q1=float(q1), q3=float(q3),
                      min=float(x.min()), max=float(x.max()))
    if n >= 2:
        loo = (x.sum() - x) / (n - 1)
        loo_min, loo_max = float(loo.min()), float(loo.max())
    else:
        loo_min = loo_max = NAN
        reasons.update(dict.fromkeys(("loo_min", "loo_max"), FEWER_THAN_TWO if n else NO_CONFIGURATIONS))
    lo, hi, why = t_interval(x, alpha)
    if why:
        reasons.update(dispersion_lo=why, dispersion_hi=why)
    return PanelSummary(
        configurations=n, **stats_, positive=int((signs > 0).sum()),
        negative=int((signs < 0).sum()), zero=int((signs == 0).sum()),
        loo_min=loo_min, loo_max=loo_max, dispersion_lo=lo, dispersion_hi=hi,
        reasons=frozen_reasons(reasons))


def _effect_objects(frame: pl.DataFrame) -> tuple[ConfigurationEffect, ...]:
    cols = frame.select("configuration", "execution_group", "family", "pairs", "effect",
                        "diff_sum", "denominator", "control_rows", "treatment_rows",
                        "control_mean", "treatment_mean").to_dict(as_series=False)
    def nan(v: float | None) -> float:
        return NAN if v is None else float(v)

    return tuple(
        ConfigurationEffect(configuration=c, execution_group=g, family=f, pairs=int(p),
                            effect=float(e), effect_exact=Fraction(int(d), int(den)),
                            control_rows=int(cr), treatment_rows=int(tr),
                            control_mean=nan(cm), treatment_mean=nan(tm))
        for c, g, f, p, e, d, den, cr, tr, cm, tm in zip(*cols.values(), strict=True))


def panel(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast, *,
          recency_cutoff: datetime.date, params: Params) -> Panel:
    """The paired panel of `contrast` over the partition `runs` (see the module note)."""
    frame, total = paired_effects_frame(rows, runs, contrast, recency_cutoff)
    return Panel(contrast=contrast, recency_cutoff=recency_cutoff, checks_total=total,
                 effects=_effect_objects(frame), frame=frame,
                 summary=summarize(frame, params.alpha))


@dataclass(frozen=True, slots=True)
class Subset:
    """A sensitivity population of the panel and its summary."""

    name: str
    """Key of the subset (e.g. min_pairs_4, equal_counts)."""
    rule: str
    """The restriction in words."""
    configurations: tuple[str, ...]
    """Configurations kept."""
    summary: PanelSummary
    """Equal-configuration summary over them."""


def subset(p: Panel, name: str, rule: str, keep: pl.Expr, alpha: float) -> Subset:
    """Restrict the panel to rows of `p.frame` where `keep` holds."""
    kept = p.frame.filter(keep)
    return Subset(name=name, rule=rule, configurations=tuple(kept.get_column("configuration")),
                  summary=summarize(kept, alpha))


def min_pairs_subset(p: Panel, k: int, alpha: float) -> Subset:
    """Configurations with at least `k` complete pairs."""
    return subset(p, f"min_pairs_{k}", f"at least {k} complete pairs", pl.col("pairs") >= k, alpha)


def equal_counts_subset(p: Panel, alpha: float) -> Subset:
    """Configurations whose valid control and treatment row counts are equal."""
    return subset(p, "equal_counts", "valid control rows == valid treatment rows",
                  pl.col("control_rows") == pl.col("treatment_rows"), alpha)


def excluded_subset(p: Panel, names: Sequence[str], alpha: float) -> Subset:
    """The panel without the named configurations."""
    return subset(p, "excluded", f"excluding {', '.join(names) or 'nothing'}",
                  ~pl.col("configuration").is_in(list(names)), alpha)


@dataclass(frozen=True, slots=True)
class EachExcluded:
    """Panel mean and median with each configuration excluded in turn (vectorised)."""

    configurations: tuple[str, ...]
    """The configuration left out, one entry per panel configuration."""
    remaining: int
    """Configurations left after one is excluded."""
    mean: np.ndarray
    """Mean of the remaining effects, aligned with `configurations` (NaN when none remain)."""
    median: np.ndarray
    """Median of the remaining effects (type 7), aligned with `configurations`."""


def each_excluded(p: Panel) -> EachExcluded:
    """Exclude each configuration in turn; the remaining mean and median, without a loop."""
    x = p.frame.get_column("effect").to_numpy().astype(float)
    n = x.size
    names = tuple(p.frame.get_column("configuration"))
    if n < 2:
        return EachExcluded(names, max(n - 1, 0), np.full(n, NAN), np.full(n, NAN))
    mean = (x.sum() - x) / (n - 1)
    order = np.argsort(x, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    s = x[order]
    m = n - 1                                   # remaining size
    pos = (m - 1) / 2.0                         # type-7 median position among the remaining
    lo_i, hi_i = int(np.floor(pos)), int(np.ceil(pos))

    def kth(i: int) -> np.ndarray:             # i-th smallest remaining value, per exclusion
        value: np.ndarray = np.where(i < rank, s[min(i, n - 1)], s[min(i + 1, n - 1)])
        return value

    median = kth(lo_i) + (pos - lo_i) * (kth(hi_i) - kth(lo_i))
    return EachExcluded(names, m, mean, median)
