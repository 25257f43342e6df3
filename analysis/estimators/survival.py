"""Survival of graded values across folds, per arm (ours, not the paper's).

Methods note. Input is a :class:`~analysis.estimators.fact_timeline.FactTimeline` and the rows
(valid rows of the study's scenario are analysed). Per arm:

* **capture rate** — values present after their entry fold / values with an entry fold;
* **Kaplan–Meier survival** by folds since entry, over captured values: a value lost at fold
  ``entry + k`` is an event at time ``k``; a value still present after the last fold is
  right-censored at ``last - entry`` (lifelines ``KaplanMeierFitter``; the product-limit
  estimate S(k) = prod_{j<=k} (1 - d_j / n_j), oracle-tested against a hand computation);
* **hazard per fold** — d_k / n_k, losses at k over values at risk at k (k >= 1);
* **where losses happen** — share of losses at folds clipped at the carry cap and at folds
  whose reply did not parse (a fold can be both), and the same for values not captured at
  their entry fold.

Paired treatment versus control (the study's contrast, paper q versus j) within repeat
blocks: per row, the count of captured values and of values surviving to the final carrier
replace ``checks_passed`` (``checks_total`` = the row's values with an entry fold), and the
primary panel's estimator (analysis.estimators.paired.panel) is run unchanged, so pairs,
windows and equal-configuration weighting are the primary panel's. Cuts: by the fixture's
value class and by the entry fold's distance from the last fold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.estimators import paired
from analysis.estimators.common import (
    NAN,
    Contrast,
    EstimatorError,
    contrast_of,
    frozen_reasons,
    require_columns,
    runs_frame,
)
from analysis.estimators.fact_timeline import FactTimeline
from analysis.params import Params

ARM_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String(), "rows": pl.Int64(), "facts": pl.Int64(), "entered": pl.Int64(),
    "captured": pl.Int64(), "capture_rate": pl.Float64(), "survived": pl.Int64(),
    "survival_final": pl.Float64(), "losses": pl.Int64(), "losses_clipped": pl.Int64(),
    "losses_parse_failed": pl.Int64(), "share_lost_clipped": pl.Float64(),
    "share_lost_parse_failed": pl.Float64(), "not_captured": pl.Int64(),
    "not_captured_clipped": pl.Int64(), "not_captured_parse_failed": pl.Int64(),
}
"""Columns of :attr:`FactSurvival.arms` (one line per arm)."""
KM_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String(), "folds_since_entry": pl.Int64(), "at_risk": pl.Int64(), "events": pl.Int64(),
    "censored": pl.Int64(), "survival": pl.Float64(), "hazard": pl.Float64(),
    "ci_lo": pl.Float64(), "ci_hi": pl.Float64(),
}
"""Columns of :attr:`FactSurvival.km` (one line per arm and k = 0..max)."""
CUT_SCHEMA: dict[str, pl.DataType] = {
    "cut": pl.String(), "level": pl.String(), "arm": pl.String(), "facts": pl.Int64(),
    "captured": pl.Int64(), "capture_rate": pl.Float64(), "survived": pl.Int64(),
    "survival_final": pl.Float64(),
}
"""Columns of :attr:`FactSurvival.cuts` (``cut`` is ``value_class`` or ``distance``)."""


@dataclass(frozen=True)
class PairedFacts:
    """Treatment minus control within repeat blocks, in values per row."""

    outcome: str
    """``captured`` or ``survived``."""
    configurations: int
    """Panel configurations with at least one complete pair."""
    pairs: int
    """Complete pairs over those configurations."""
    mean: float
    """Equal-configuration mean of the per-configuration mean difference (values per row)."""
    mean_share: float
    """The same as a share of the row's values (the panel effect)."""
    effects: Mapping[str, Mapping[str, Any]]
    """Per configuration: pairs, effect (values per row), effect_share."""
    reason: str | None
    """Why the comparison is undefined, else None."""


@dataclass(frozen=True)
class FactSurvival:
    """Survival of graded values per arm (see the module note)."""

    arms: pl.DataFrame
    """:data:`ARM_SCHEMA`."""
    km: pl.DataFrame
    """:data:`KM_SCHEMA`: Kaplan–Meier survival, hazard and 95% interval per fold since entry."""
    cuts: pl.DataFrame
    """:data:`CUT_SCHEMA`."""
    paired: Mapping[str, PairedFacts]
    """``captured`` and ``survived`` treatment-minus-control comparisons."""
    contrast: Contrast
    """The contrast of the paired comparisons."""
    rows: int
    """Valid rows of the scenario with a timeline."""
    reasons: Mapping[str, str]
    """Field -> why it is undefined."""


def _ratio(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num).cast(pl.Float64) / pl.col(den)).otherwise(None)


def _counts(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    entered = pl.col("entry_fold").is_not_null()
    cap = pl.col("captured").fill_null(False)
    ev = pl.col("event").fill_null(False)
    return df.group_by(by).agg(
        pl.col("row_id").n_unique().cast(pl.Int64).alias("rows"),
        pl.len().cast(pl.Int64).alias("facts"),
        entered.sum().cast(pl.Int64).alias("entered"),
        cap.sum().cast(pl.Int64).alias("captured"),
        (cap & pl.col("survived").fill_null(False)).sum().cast(pl.Int64).alias("survived"),
        ev.sum().cast(pl.Int64).alias("losses"),
        (ev & pl.col("loss_clipped").fill_null(False)).sum().cast(pl.Int64).alias("losses_clipped"),
        (ev & pl.col("loss_parse_failed").fill_null(False)).sum().cast(pl.Int64).alias("losses_parse_failed"),
        (entered & ~cap).sum().cast(pl.Int64).alias("not_captured"),
        (entered & ~cap & pl.col("entry_clipped").fill_null(False)).sum().cast(pl.Int64)
        .alias("not_captured_clipped"),
        (entered & ~cap & pl.col("entry_parse_failed").fill_null(False)).sum().cast(pl.Int64)
        .alias("not_captured_parse_failed"),
    ).with_columns(
        _ratio("captured", "entered").alias("capture_rate"),
        _ratio("survived", "captured").alias("survival_final"),
        _ratio("losses_clipped", "losses").alias("share_lost_clipped"),
        _ratio("losses_parse_failed", "losses").alias("share_lost_parse_failed"),
    )


def kaplan_meier(durations: list[int], events: list[bool], alpha: float = 0.05) -> pl.DataFrame:
    """Product-limit survival at k = 0..max(durations) (lifelines), with d_k, n_k and the hazard."""
    schema = {k: v for k, v in KM_SCHEMA.items() if k != "arm"}
    if not durations:
        return pl.DataFrame(schema=schema)
    from lifelines import KaplanMeierFitter

    kmf = KaplanMeierFitter(alpha=alpha)
    kmf.fit(durations, event_observed=events)
    table = kmf.event_table
    sf = kmf.survival_function_.iloc[:, 0]
    ci = kmf.confidence_interval_survival_function_
    out = []
    at_risk = len(durations)
    for k in range(int(max(durations)) + 1):
        if k in table.index:
            d, c, n = int(table.loc[k, "observed"]), int(table.loc[k, "censored"]), int(table.loc[k, "at_risk"])
        else:
            d, c, n = 0, 0, at_risk
        at_risk = n - d - c
        s = float(sf[sf.index <= k].iloc[-1])
        lo = float(ci[ci.index <= k].iloc[-1, 0])
        hi = float(ci[ci.index <= k].iloc[-1, 1])
        out.append({"folds_since_entry": k, "at_risk": n, "events": d, "censored": c, "survival": s,
                    "hazard": (d / n if n and k >= 1 else None), "ci_lo": lo, "ci_hi": hi})
    return pl.DataFrame(out, schema=schema)


def _paired(per_row: pl.DataFrame, rows: pl.DataFrame, study: Any, outcome: str,
            params: Params) -> PairedFacts:
    contrast = contrast_of(study)
    sub = rows.join(per_row.select("row_id", pl.col(outcome).alias("_passed"), pl.col("entered").alias("_total")),
                    on="row_id", how="inner").filter(pl.col("_total") > 0)
    sub = sub.with_columns(pl.col("_passed").alias("checks_passed"), pl.col("_total").alias("checks_total"))
    try:
        p = paired.panel(sub, runs_frame(study), contrast, recency_cutoff=study.recency_cutoff, params=params)
    except EstimatorError as exc:
        return PairedFacts(outcome, 0, 0, NAN, NAN, {}, str(exc))
    total = p.checks_total or 0
    effects = {e.configuration: {"pairs": e.pairs, "effect": e.effect * total, "effect_share": e.effect}
               for e in p.effects}
    reason = p.summary.reasons.get("mean")
    return PairedFacts(outcome, p.summary.configurations, sum(e.pairs for e in p.effects),
                       p.summary.mean * total if total else NAN, p.summary.mean, effects, reason)


def fact_survival(timeline: FactTimeline, rows: pl.DataFrame, study: Any, params: Params) -> FactSurvival:
    """Capture, Kaplan–Meier survival, hazard, loss sites, paired q-j and cuts (module note)."""
    require_columns(rows, ("row_id", "arm", "scenario", "valid"), "rows")
    keep = rows.filter(pl.col("valid").fill_null(False) & (pl.col("scenario") == study.scenario))
    df = timeline.facts.join(keep.select("row_id", "arm"), on="row_id", how="inner")
    reasons: dict[str, str] = {}
    arms = _counts(df, ["arm"]).sort("arm").select([pl.col(c).cast(t) for c, t in ARM_SCHEMA.items()])
    if df.height == 0:
        reasons["arms"] = "no valid rows of the scenario have a fact timeline"
    kms = []
    for arm in arms.get_column("arm").to_list():
        cap = df.filter((pl.col("arm") == arm) & pl.col("captured").fill_null(False))
        km = kaplan_meier(cap.get_column("duration").to_list(), cap.get_column("event").to_list(), params.alpha)
        if km.height == 0:
            reasons[f"km.{arm}"] = "no value was captured at its entry fold, so no survival curve is defined"
        kms.append(km.with_columns(pl.lit(arm).alias("arm")))
    km_frame = (pl.concat(kms, how="diagonal") if kms else pl.DataFrame(schema=KM_SCHEMA))
    km_frame = km_frame.select([pl.col(c).cast(t) for c, t in KM_SCHEMA.items()])
    cut_parts = []
    for cut, expr in (("value_class", pl.col("value_class")), ("distance", pl.col("distance").cast(pl.String))):
        part = _counts(df.filter(pl.col("entry_fold").is_not_null()).with_columns(expr.alias("level")),
                       ["level", "arm"])
        cut_parts.append(part.with_columns(pl.lit(cut).alias("cut")))
    cuts = (pl.concat(cut_parts, how="diagonal").select([pl.col(c).cast(t) for c, t in CUT_SCHEMA.items()])
            .sort("cut", "level", "arm"))
    per_row = _counts(df, ["row_id"])
    pairs = {o: _paired(per_row, keep, study, o, params) for o in ("captured", "survived")}
    return FactSurvival(arms=arms, km=km_frame, cuts=cuts, paired=pairs, contrast=contrast_of(study),
                        rows=df.get_column("row_id").n_unique(), reasons=frozen_reasons(reasons))
