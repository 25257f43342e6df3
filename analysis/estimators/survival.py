"""Survival of graded values across folds, per arm (ours, not the paper's).

Methods note. Input is a :class:`~analysis.estimators.fact_timeline.FactTimeline` and the rows
(valid rows of the study's scenario are analysed). Per arm:

* **capture rate** — values present after their entry fold / values with an entry fold;
* **one definition of loss** (analysis.estimators.fact_timeline): time to the FIRST absence. A
  captured value is lost at the first fold after entry whose carrier lacks it; it counts as lost
  even when it is back in the final carrier (``reappeared``, a sub-count of ``losses``), and
  ``survived`` counts captured values never lost, so per arm and per cut
  ``captured = losses + survived``. A value absent at its entry fold but present later
  (``appeared_late``, a sub-count of ``not_captured``) is not captured: it is outside the
  Kaplan–Meier risk set, whose time origin is the entry fold;
* **Kaplan–Meier survival** by folds since entry, over captured values: a value first lost at
  fold ``entry + k`` is an event at time ``k``; a value never lost is right-censored at
  ``last - entry`` (lifelines ``KaplanMeierFitter``; the product-limit estimate
  S(k) = prod_{j<=k} (1 - d_j / n_j), oracle-tested against a hand computation);
* **two 95% intervals of S(k)**, both log-log (exponential Greenwood form) at level 1 - alpha,
  which differ in their unit. ``ci_values_*``: lifelines' Greenwood variance, which treats every
  graded value as independent, although the values of one row share its carrier and are lost
  together. ``ci_rows_*``: the ROW is the cluster — the infinitesimal-jackknife (cluster-robust)
  variance of S(k), the sum over rows of the squared sum of the row's values' influence
  ``-S(k) * sum_{j<=k} (dN_i(j) n_j - d_j Y_i(j)) / (n_j (n_j - d_j))`` (R survival's
  ``survfit(..., cluster=row)`` robust variance, without a small-sample factor), so it is as wide
  as the number of rows allows. Where no value has been lost yet (S = 1 at k >= 1) the rows interval is
  the exact no-loss bound [(alpha/2)^(1/R_k), 1], R_k the rows at risk at k (:func:`no_loss_lower`,
  issue 35: a curve without a loss is not certain). Otherwise an interval is not estimable (null bounds,
  with the reason in ``ci_*_reason``: analysis.estimators.estimable) with fewer than two rows at entry,
  at S = 0, at S = 1 for the values interval, or where every row behaved alike: its variance is then
  identically 0 (R ``survfit`` gives NA; lifelines would print [0, 0] or [1, 1]);
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
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
from analysis.estimators.estimable import cluster_boundary, too_few
from analysis.estimators.fact_timeline import FactTimeline
from analysis.params import Params

ZERO_SD = 1e-9
"""A standard deviation of S below this is rounding noise of an identically zero variance (not estimable)."""

ARM_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String(), "rows": pl.Int64(), "facts": pl.Int64(), "entered": pl.Int64(),
    "captured": pl.Int64(), "capture_rate": pl.Float64(), "survived": pl.Int64(),
    "survival_final": pl.Float64(), "losses": pl.Int64(), "reappeared": pl.Int64(), "losses_clipped": pl.Int64(),
    "losses_parse_failed": pl.Int64(), "share_lost_clipped": pl.Float64(),
    "share_lost_parse_failed": pl.Float64(), "not_captured": pl.Int64(),
    "not_captured_clipped": pl.Int64(), "not_captured_parse_failed": pl.Int64(), "appeared_late": pl.Int64(),
}
"""Columns of :attr:`FactSurvival.arms` (one line per arm); captured = losses + survived."""
KM_SCHEMA: dict[str, pl.DataType] = {
    "arm": pl.String(), "folds_since_entry": pl.Int64(), "at_risk": pl.Int64(), "at_risk_rows": pl.Int64(),
    "events": pl.Int64(), "censored": pl.Int64(), "survival": pl.Float64(), "hazard": pl.Float64(),
    "ci_rows_lo": pl.Float64(), "ci_rows_hi": pl.Float64(), "ci_values_lo": pl.Float64(),
    "ci_values_hi": pl.Float64(), "ci_rows_reason": pl.String(), "ci_values_reason": pl.String(),
}
"""Columns of :attr:`FactSurvival.km` (one line per arm and k = 0..max): ``at_risk`` values and
``at_risk_rows`` rows with a value at risk; ``ci_rows_*`` the interval with the row as the cluster,
``ci_values_*`` lifelines' interval with every value independent (module note); ``ci_rows_reason`` and
``ci_values_reason`` say why that interval is not estimable (its bounds are then null), else null."""
CUT_SCHEMA: dict[str, pl.DataType] = {
    "cut": pl.String(), "level": pl.String(), "arm": pl.String(), "facts": pl.Int64(),
    "captured": pl.Int64(), "capture_rate": pl.Float64(), "survived": pl.Int64(),
    "survival_final": pl.Float64(), "losses": pl.Int64(), "reappeared": pl.Int64(),
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
    """:data:`KM_SCHEMA`: Kaplan–Meier survival, hazard and the two 1 - alpha intervals (rows as
    clusters; values as independent) per fold since entry."""
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
        (ev & pl.col("reappeared").fill_null(False)).sum().cast(pl.Int64).alias("reappeared"),
        (ev & pl.col("loss_clipped").fill_null(False)).sum().cast(pl.Int64).alias("losses_clipped"),
        (ev & pl.col("loss_parse_failed").fill_null(False)).sum().cast(pl.Int64).alias("losses_parse_failed"),
        (entered & ~cap).sum().cast(pl.Int64).alias("not_captured"),
        (entered & ~cap & pl.col("entry_clipped").fill_null(False)).sum().cast(pl.Int64)
        .alias("not_captured_clipped"),
        (entered & ~cap & pl.col("entry_parse_failed").fill_null(False)).sum().cast(pl.Int64)
        .alias("not_captured_parse_failed"),
        (entered & ~cap & pl.col("appeared_late").fill_null(False)).sum().cast(pl.Int64).alias("appeared_late"),
    ).with_columns(
        _ratio("captured", "entered").alias("capture_rate"),
        _ratio("survived", "captured").alias("survival_final"),
        _ratio("losses_clipped", "losses").alias("share_lost_clipped"),
        _ratio("losses_parse_failed", "losses").alias("share_lost_parse_failed"),
    )


def _loglog(s: np.ndarray, var: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Log-log interval S^exp(+-z se), se = sd(S) / (S |log S|); [1, 1] at S = 1, [0, 0] at S = 0."""
    lo, hi = s.copy(), s.copy()
    inner = (s > 0) & (s < 1)
    w = s[inner]
    se = np.sqrt(var[inner]) / (w * -np.log(w))
    lo[inner] = w ** np.exp(z * se)
    hi[inner] = w ** np.exp(-z * se)
    return lo, hi


def no_loss_lower(rows: int, alpha: float) -> float:
    """Lower end of the rows interval where no value was lost yet (S(k) = 1, k >= 1): ``(alpha/2)^(1/R)``,
    R the rows at risk at k: the exact (Clopper–Pearson) lower bound for no loss in R
    independent rows, each row counted once however many values it holds (conservative). The log-log
    interval has no width there ([1, 1]); the calibration of issue 35 (data/v2/calibration) found it
    covering 0.30 of a planted S = 0.95."""
    return float((alpha / 2) ** (1 / rows))


def row_cluster_variance(durations: np.ndarray, events: np.ndarray, clusters: np.ndarray,
                         times: np.ndarray, survival: np.ndarray) -> np.ndarray:
    """Infinitesimal-jackknife variance of the Kaplan–Meier S at ``times``, ``clusters`` as the unit.

    ``clusters``: integer codes 0..C-1 (the row of each value). The influence of value i on S(t) is
    ``-S(t) sum_{e_j <= t} (dN_i(e_j) n_j - d_j Y_i(e_j)) / (n_j (n_j - d_j))`` over event times e_j
    with n_j > d_j; a cluster's influence is the sum over its values; the variance is the sum over
    clusters of its square. Dense over clusters x distinct event times only.
    """
    var = np.zeros(len(times))
    ev_times, d = np.unique(durations[events], return_counts=True)
    if ev_times.size == 0:
        return var
    order = np.sort(durations)
    n = (len(durations) - np.searchsorted(order, ev_times, side="left")).astype(float)
    ok = n > d
    denom = np.where(ok, n * (n - d), 1.0)
    n_c = int(clusters.max()) + 1
    m = ev_times.size
    last = np.searchsorted(ev_times, durations, side="right") - 1   # last event time <= duration
    has = last >= 0
    cnt = np.bincount(clusters[has] * m + last[has], minlength=n_c * m).reshape(n_c, m).astype(float)
    at_risk = np.cumsum(cnt[:, ::-1], axis=1)[:, ::-1]                # Y_c(e_j): values with duration >= e_j
    dead = np.bincount(clusters[events] * m + last[events], minlength=n_c * m).reshape(n_c, m).astype(float)
    inc = np.where(ok, (dead * n - d * at_risk) / denom, 0.0)
    s_ev = survival[np.searchsorted(times, ev_times)]
    infl = -s_ev * np.cumsum(inc, axis=1)
    var_ev = (infl ** 2).sum(axis=0)
    idx = np.searchsorted(ev_times, times, side="right") - 1
    var[idx >= 0] = var_ev[idx[idx >= 0]]
    return var


def _cluster_codes(clusters: Sequence[Any] | np.ndarray | None, n: int) -> np.ndarray:
    """Integer codes 0.. of ``clusters`` (compact non-negative integer codes are used as they are)."""
    if clusters is None:
        return np.arange(n)
    arr = np.asarray(clusters)
    if len(arr) != n:
        raise EstimatorError(f"clusters has {len(arr)} entries for {n} durations; give one row per value")
    if arr.dtype.kind in "iu" and arr.min() >= 0 and arr.max() < 4 * n + 1024:
        return arr.astype(np.int64, copy=False)
    return np.unique(arr, return_inverse=True)[1].astype(np.int64)


def kaplan_meier(durations: Sequence[int] | np.ndarray, events: Sequence[bool] | np.ndarray, alpha: float = 0.05,
                 clusters: Sequence[Any] | np.ndarray | None = None) -> pl.DataFrame:
    """Product-limit survival at k = 0..max(durations) (lifelines), with d_k, n_k, the hazard and
    the two intervals: ``clusters`` (the row of each value, any labels or non-negative integer codes;
    None: every value its own cluster) as the unit, and lifelines' with every value independent."""
    schema = {k: v for k, v in KM_SCHEMA.items() if k != "arm"}
    if len(durations) == 0:
        return pl.DataFrame(schema=schema)
    from lifelines import KaplanMeierFitter
    from scipy.stats import norm

    dur = np.asarray(durations, dtype=np.int64)
    ev = np.asarray(events, dtype=bool)
    kmf = KaplanMeierFitter(alpha=alpha)
    kmf.fit(dur, event_observed=ev)
    table = kmf.event_table
    sf = kmf.survival_function_.iloc[:, 0]
    ci = kmf.confidence_interval_survival_function_
    codes = _cluster_codes(clusters, len(dur))
    cluster_last = np.full(int(codes.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(cluster_last, codes, dur)
    times = np.arange(int(dur.max()) + 1)
    rows_at_risk = len(cluster_last) - np.searchsorted(np.sort(cluster_last), times, side="left")
    out: list[dict[str, Any]] = []
    at_risk = len(durations)
    for k in times.tolist():
        if k in table.index:
            d, c, n = int(table.loc[k, "observed"]), int(table.loc[k, "censored"]), int(table.loc[k, "at_risk"])
        else:
            d, c, n = 0, 0, at_risk
        at_risk = n - d - c
        out.append({"folds_since_entry": k, "at_risk": n, "at_risk_rows": int(rows_at_risk[k]), "events": d,
                    "censored": c, "survival": float(sf[sf.index <= k].iloc[-1]),
                    "hazard": (d / n if n and k >= 1 else None),
                    "ci_values_lo": float(ci[ci.index <= k].iloc[-1, 0]),
                    "ci_values_hi": float(ci[ci.index <= k].iloc[-1, 1])})
    surv = np.array([r["survival"] for r in out])
    var = row_cluster_variance(dur, ev, codes, times, surv)
    lo, hi = _loglog(surv, var, float(norm.ppf(1 - alpha / 2)))
    rows0, values0 = int(rows_at_risk[0]), len(durations)
    for r, s_k, a, b, v in zip(out, surv.tolist(), lo.tolist(), hi.tolist(), var.tolist(), strict=True):
        k, rows_k = r["folds_since_entry"], int(rows_at_risk[r["folds_since_entry"]])
        why_rows = too_few(rows0, "row")
        if why_rows is None and s_k >= 1.0 and k >= 1 and rows_k > 0:
            a, b = no_loss_lower(rows_k, alpha), 1.0  # no loss yet: the exact bound, not a zero-width interval
        elif why_rows is None:
            why_rows = cluster_boundary(s_k, rows0) or (
                None if v > ZERO_SD**2 else "every row behaved alike, so the variance with rows as clusters is 0")
        why_values = cluster_boundary(s_k, values0, unit="value")
        r.update(ci_rows_lo=None if why_rows else a, ci_rows_hi=None if why_rows else b, ci_rows_reason=why_rows,
                 ci_values_reason=why_values)
        if why_values:
            r.update(ci_values_lo=None, ci_values_hi=None)
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


def curves_reason(km: pl.DataFrame) -> str | None:
    """Why no survival curve is estimable, in one sentence, or None: a curve (and its interval with rows as
    clusters) needs at least 2 rows with a value captured at entry in some arm (analysis.estimators.estimable).
    None too when no arm has a curve at all (nothing captured: the report says that apart)."""
    if km.height == 0:
        return None
    entry = km.filter(pl.col("folds_since_entry") == 0).sort("arm")
    if entry.get_column("at_risk_rows").max() >= 2:  # type: ignore[operator]
        return None

    def n(x: int, noun: str) -> str:
        return f"{x} {noun}" + ("" if x == 1 else "s")

    parts = [f"arm {arm}: {n(values, 'value')} captured at entry in {n(rows_, 'row')}"
             for arm, values, rows_ in entry.select("arm", "at_risk", "at_risk_rows").iter_rows()]
    return "; ".join(parts) + "; a survival curve needs at least 2 rows with a captured value"


def fact_survival(timeline: FactTimeline, rows: pl.DataFrame, study: Any, params: Params) -> FactSurvival:
    """Capture, Kaplan–Meier survival, hazard, loss sites, paired q-j and cuts (module note)."""
    require_columns(rows, ("row_id", "arm", "scenario", "valid"), "rows")
    keep = rows.filter(pl.col("valid").fill_null(False) & (pl.col("scenario") == study.scenario))
    df = timeline.facts.join(keep.select("row_id", "arm").with_row_index("_row"), on="row_id", how="inner")
    reasons: dict[str, str] = {}
    arms = _counts(df, ["arm"]).sort("arm").select([pl.col(c).cast(t) for c, t in ARM_SCHEMA.items()])
    if df.height == 0:
        reasons["arms"] = "no valid rows of the scenario have a fact timeline"
    kms = []
    for arm in arms.get_column("arm").to_list():
        cap = df.filter((pl.col("arm") == arm) & pl.col("captured").fill_null(False))
        km = kaplan_meier(cap.get_column("duration").to_numpy(), cap.get_column("event").to_numpy(), params.alpha,
                          clusters=cap.get_column("_row").to_numpy())
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
