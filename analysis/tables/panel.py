"""Builders of the panel tables (paper section 4.7): Table 3, panel summary, sparse-cell sensitivity,
and the partition runs outside the recency window.

Methods note: every statistic is read from the typed estimates the results stage computed once
(``ctx.estimates``: the paired panel, its subsets, the bounds, family weighting), the objects results.json
serialises (keys documented in docs/RESULTS_KEYS.md), with NaN shown as undefined exactly where results.json
has null; only j fill, which results.json does not carry per configuration, comes from
analysis.estimators.fill over the partition runs, and the paired effects of the out-of-window runs (not
part of the panel, hence not in results.json) come from the panel's own estimator,
analysis.estimators.paired.paired_effects_frame, applied to those runs.
"""

from __future__ import annotations

import datetime
from typing import Any

import polars as pl

from analysis.estimators.common import Contrast, runs_frame
from analysis.estimators.estimable import not_estimable
from analysis.estimators.fill import fill_fractions
from analysis.estimators.paired import Panel, PanelSummary, paired_effects_frame
from analysis.results.core import BOUNDS_REGISTRATION, FAMILIES_REGISTRATION, PANEL_REGISTRATION, SPARSE_REGISTRATION
from analysis.results.inputs import CONTRACT_SPARSE_K
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_int, fmt_num, fmt_pct, fmt_signed
from analysis.tables.spec import (
    TableSpec,
    defined,
    display_frame,
    empty_table,
    if_marked,
)

_EFFECT_SCHEMA = {"configuration": pl.String, "effect": pl.Float64, "pairs": pl.Int64,
                  "control_rows": pl.Int64, "treatment_rows": pl.Int64,
                  "control_mean": pl.Float64, "treatment_mean": pl.Float64}


def panel_effects_rows(panel: Panel) -> pl.DataFrame:
    """The panel's per-configuration effects (``results.panel.effects``), one row per configuration, sorted;
    null where an estimate is undefined (NaN)."""
    rows = [{"configuration": e.configuration, "effect": defined(e.effect), "pairs": e.pairs,
             "control_rows": e.control_rows, "treatment_rows": e.treatment_rows,
             "control_mean": defined(e.control_mean), "treatment_mean": defined(e.treatment_mean)}
            for e in sorted(panel.effects, key=lambda e: e.configuration)]
    return pl.DataFrame(rows, schema=_EFFECT_SCHEMA)


def summary_values(summary: PanelSummary) -> dict[str, Any]:
    """configurations, mean and median of a panel summary as results.json holds them (None: undefined)."""
    return {"configurations": summary.configurations, "mean": defined(summary.mean),
            "median": defined(summary.median)}


def partition_runs_frame(study: Any) -> pl.DataFrame:
    """The study's partition runs as (configuration, execution_group, planned_repeats)."""
    return pl.DataFrame(
        [{"configuration": r.configuration, "execution_group": r.execution_group,
          "planned_repeats": r.planned_repeats} for r in study.partition_runs],
        schema={"configuration": pl.String, "execution_group": pl.String, "planned_repeats": pl.Int64})


def panel_fills(ctx: ReportContext) -> pl.DataFrame:
    """Control-arm fill per configuration over the partition runs (configuration, fill, fill_rows)."""
    study = ctx.study
    return fill_fractions(ctx.rows, arm=study.control, scenario=study.scenario,
                          runs=partition_runs_frame(study))


@table(section="panel", reads=(PANEL_REGISTRATION,))
def table3(ctx: ReportContext) -> TableSpec:
    """Paper Table 3: per-configuration means, complete pairs, paired effect, row counts and fill."""
    s = ctx.study
    c, t = s.control, s.treatment
    title = f"Primary panel: per-configuration paired effect {t}−{c} on {s.scenario}"
    cols = ["model", f"{c} mean", f"{t} mean", "pairs", f"paired {t}−{c}", f"{c} rows", f"{t} rows", f"{c} fill"]
    eff = panel_effects_rows(ctx.estimates.panel)
    if eff.height == 0:
        return empty_table("t3_panel", title, cols, "no configuration in the primary panel")
    frame = eff.join(panel_fills(ctx).select("configuration", "fill"), on="configuration", how="left")
    out = [{"model": r["configuration"], cols[1]: fmt_num(r["control_mean"]),
            cols[2]: fmt_num(r["treatment_mean"]), "pairs": str(r["pairs"]),
            cols[4]: fmt_signed(r["effect"]), cols[5]: str(r["control_rows"]),
            cols[6]: str(r["treatment_rows"]), cols[7]: fmt_pct(r["fill"])}
           for r in frame.iter_rows(named=True)]
    return TableSpec("t3_panel", title, frame, display_frame(out, cols),
                     note=f"Means count every valid row of the arm in the partition run ({c} rows, {t} "
                          "rows are their denominators); pairs: complete within-repeat pairs, whose differences "
                          f"the paired effect averages. {c} fill is the share of the declared ceiling used."
                          + if_marked(out, " “—” marks a value that is not defined."))


@table(section="panel")
def out_of_window(ctx: ReportContext) -> TableSpec:
    """Partition runs published before the recency cutoff: their paired effects, outside the panel.

    The paper excludes its three out-of-window configurations from the panel but keeps them in the
    evidence; a new study whose only model is older than its window (the embedded SmolLM2) has an
    empty panel, and this table is where its paired effect is read.
    """
    s = ctx.study
    c, t = s.control, s.treatment
    title = f"Outside the recency window: paired effect {t}−{c} on {s.scenario} (not in the panel)"
    cols = ["model", "published", f"{c} mean", f"{t} mean", "pairs", f"paired {t}−{c}", f"{c} rows", f"{t} rows"]
    runs = runs_frame(s).filter(pl.col("published") < s.recency_cutoff)
    if runs.height == 0:
        return empty_table("t3_out_of_window", title, cols,
                           "no partition run was published before the recency cutoff")
    if c == t:
        return empty_table("t3_out_of_window", title, cols, "control and treatment are the same arm")
    earliest = runs.get_column("published").min()
    if not isinstance(earliest, datetime.date):
        raise TypeError(f"runs.published holds dates, got {earliest!r}")
    eff, _ = paired_effects_frame(ctx.rows, runs, Contrast(c, t, s.scenario), earliest)
    frame = (runs.select("configuration", "published")
             .join(eff.select("configuration", "pairs", "effect", "control_mean", "treatment_mean",
                              "control_rows", "treatment_rows"), on="configuration", how="left")
             .sort("configuration"))
    out = [{"model": r["configuration"], "published": str(r["published"]),
            cols[2]: fmt_num(r["control_mean"]), cols[3]: fmt_num(r["treatment_mean"]),
            "pairs": fmt_int(r["pairs"] or 0), cols[5]: fmt_signed(r["effect"]),
            cols[6]: fmt_int(r["control_rows"]), cols[7]: fmt_int(r["treatment_rows"])}
           for r in frame.iter_rows(named=True)]
    return TableSpec("t3_out_of_window", title, frame, display_frame(out, cols),
                     note=f"Configurations published before the study's recency cutoff ({s.recency_cutoff}) "
                          "are not in the primary panel; their effects are computed exactly as the panel's "
                          "(complete within-repeat pairs of the partition run) and shown for reference. "
                          "Means and row counts cover configurations with at least one complete pair."
                          + if_marked(out, " “—” marks a value that is not defined."))


@table(section="panel", reads=(PANEL_REGISTRATION,))
def panel_summary(ctx: ReportContext) -> TableSpec:
    """Equal-configuration summary of the panel: centre, spread, signs, leave-one-out, dispersion."""
    title = "Panel summary over configurations (each weighted equally)"
    summary = ctx.estimates.panel.summary
    cols = ["statistic", "value"]
    if not summary.configurations:
        return empty_table("t3_summary", title, cols, "no configuration in the primary panel")
    spec = [
        ("configurations", "configurations", fmt_int),
        ("mean", "mean paired effect", fmt_signed), ("median", "median", fmt_signed),
        ("q1", "first quartile", fmt_signed), ("q3", "third quartile", fmt_signed),
        ("min", "minimum", fmt_signed), ("max", "maximum", fmt_signed),
        ("positive", "positive effects", fmt_int), ("negative", "negative effects", fmt_int),
        ("zero", "zero effects", fmt_int),
        ("loo_min", "leave-one-out mean, lowest", fmt_signed),
        ("loo_max", "leave-one-out mean, highest", fmt_signed),
        ("dispersion_lo", "dispersion interval, low", fmt_signed),
        ("dispersion_hi", "dispersion interval, high", fmt_signed),
    ]
    values = {k: defined(getattr(summary, k)) for k, _, _ in spec}
    data = pl.DataFrame({"key": [k for k, _, _ in spec], "value": [values[k] for k, _, _ in spec]},
                        schema={"key": pl.String, "value": pl.Float64})
    why = summary.reasons
    out = [{"statistic": label, "value": not_estimable(why[k]) if values[k] is None and why.get(k) else f(values[k])}
           for k, label, f in spec]
    return TableSpec("t3_summary", title, data, display_frame(out, cols),
                     note="The dispersion interval is mean ± t(0.975, n−1)·sd/√n over configurations, "
                          "conditional on this panel; it is not a confidence interval for recent models.")


def _without_single_pair(eff: pl.DataFrame) -> dict[str, Any]:
    kept = eff.filter(pl.col("pairs") > 1)["effect"].drop_nulls()
    return {"configurations": kept.len(), "mean": kept.mean() if kept.len() else None,
            "median": kept.median() if kept.len() else None}


@table(section="panel", reads=(PANEL_REGISTRATION, SPARSE_REGISTRATION))
def sparse_cells(ctx: ReportContext) -> TableSpec:
    """Paper sparse-cell table: panel mean and median under the sparse-cell restrictions."""
    title = "Sparse-cell sensitivity: equal-configuration paired mean by population"
    cols = ["population", "configurations", "equal-configuration paired mean", "median"]
    if not ctx.estimates.panel.summary.configurations:
        return empty_table("t_sparse", title, cols, "no configuration in the primary panel")
    k = CONTRACT_SPARSE_K  # the subset results.json's sparse block carries (docs/RESULTS_CONTRACT.md)
    rows = [("at least one complete pair", "panel", summary_values(ctx.estimates.panel.summary))]
    rows.append((f"at least {k} complete pairs", f"min_pairs_{k}",
                 summary_values(ctx.estimates.sparse_contract.summary)))
    rows.append(("equal valid-arm counts", "equal_counts", summary_values(ctx.estimates.equal_counts.summary)))
    rows.append(("excluding single-pair configurations", "exclude_single_pair",
                 _without_single_pair(panel_effects_rows(ctx.estimates.panel))))
    data = pl.DataFrame(
        [{"population": key, "configurations": int(d.get("configurations") or 0),
          "mean": d.get("mean"), "median": d.get("median")} for _, key, d in rows],
        schema={"population": pl.String, "configurations": pl.Int64, "mean": pl.Float64,
                "median": pl.Float64})
    none_left = not_estimable("no configuration remains")
    out = [{"population": label, "configurations": str(int(d.get("configurations") or 0)),
            cols[2]: none_left if d.get("mean") is None else fmt_signed(d.get("mean")),
            "median": none_left if d.get("median") is None else fmt_signed(d.get("median"))}
           for label, _, d in rows]
    return TableSpec("t_sparse", title, data, display_frame(out, cols),
                     note=if_marked(out, "A population without a configuration has no mean or median (not "
                                         "estimable).", mark=none_left))


@table(section="panel", reads=(BOUNDS_REGISTRATION, FAMILIES_REGISTRATION))
def sensitivity(ctx: ReportContext) -> TableSpec:
    """Planned-repeat bounds and family weighting (paper section 4.7)."""
    title = "Missingness bounds and family-weighted sensitivity"
    cols = ["analysis", "value"]
    b, f = ctx.estimates.bounds, ctx.estimates.families
    if not b.configurations:  # the bounds and the family weighting are of the panel's configurations
        return empty_table("t_sensitivity", title, cols, "no configuration in the primary panel")
    spec = [("bounds.lo", "planned-repeat bound, worst case", defined(b.lo), fmt_signed),
            ("bounds.hi", "planned-repeat bound, best case", defined(b.hi), fmt_signed),
            ("families.families", "families with a panel configuration", f.families, fmt_int),
            ("families.mean", "family-weighted mean", defined(f.mean), fmt_signed),
            ("families.lofo_min", "leave-one-family-out mean, lowest", defined(f.lofo_min), fmt_signed),
            ("families.lofo_max", "leave-one-family-out mean, highest", defined(f.lofo_max), fmt_signed),
            ("families.dispersion_lo", "family dispersion interval, low", defined(f.dispersion_lo), fmt_signed),
            ("families.dispersion_hi", "family dispersion interval, high", defined(f.dispersion_hi), fmt_signed)]
    data = pl.DataFrame({"key": [k for k, *_ in spec],
                         "value": [None if v is None else float(v) for _, _, v, _ in spec]},
                        schema={"key": pl.String, "value": pl.Float64})
    why = {f"families.{k}": r for k, r in f.reasons.items()}
    out = [{"analysis": label, "value": not_estimable(why[k]) if v is None and why.get(k) else fmt(v)}
           for k, label, v, fmt in spec]
    return TableSpec("t_sensitivity", title, data, display_frame(out, cols),
                     note="Bounds set every missing planned-repeat outcome to its worst and best case "
                          "within [0, 1]; family figures weight families equally.")
