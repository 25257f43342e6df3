"""Builders of the exploratory tables (paper sections 4.7.1 to 4.8, 4.10): threshold, borderline,
deeper repeats, headings and carrier audit.

Methods note: the statistics come from analysis.estimators.{fill,headings,carrier}; this module
only selects, orders and formats them. Everything here is exploratory (post-hoc covariate,
cut point and rescue rule in the paper) and is labelled so in the report.
"""

from __future__ import annotations

import polars as pl

from analysis.estimators.carrier import carrier_audit
from analysis.estimators.fill import FillAnalysis, effects_frame as fill_effects_frame, fill_analysis
from analysis.estimators.headings import headings_analysis
from analysis.tables.context import ReportContext, cell_stats, scored_rows
from analysis.tables.labels import arm_label
from analysis.tables.panel import effects_frame, panel_fills, partition_runs_frame
from analysis.tables.spec import (
    TableSpec,
    display_frame,
    empty_table,
    fmt_count_of,
    fmt_mean_n,
    fmt_num,
    fmt_pct,
    fmt_signed,
)


def fill_result(ctx: ReportContext) -> FillAnalysis | None:
    """analysis.estimators.fill.fill_analysis over the panel, or None without a panel."""
    eff = effects_frame(ctx.results).drop_nulls(["effect", "control_mean", "treatment_mean"])
    if eff.height == 0:
        return None
    frame = fill_effects_frame(eff["configuration"], eff["effect"], eff["control_mean"],
                               eff["treatment_mean"], eff["pairs"])
    return fill_analysis(frame, panel_fills(ctx), ctx.params)


def _pcts(fills: tuple[float, ...]) -> str:
    return ", ".join(fmt_pct(f) for f in fills) or "—"


def threshold_classes(ctx: ReportContext) -> TableSpec:
    """Paper 4.7.1: failing configurations by rescue class, with their fills."""
    ep = ctx.params
    c, t = ctx.study.control, ctx.study.treatment
    title = (f"Exploratory threshold classes: configurations with {c} < {ep.rescue_cutoff:g}, "
             f"by whether {t} reaches {ep.rescue_cutoff:g}")
    cols = ["original threshold class", "fill of the declared ceiling", "configurations",
            f"crossing {ep.rescue_cutoff:g} under {t}"]
    fa = fill_result(ctx)
    if fa is None or fa.rescue.failing == 0:
        return empty_table("t_threshold", title, cols,
                           f"no panel configuration has a {c} mean below {ep.rescue_cutoff:g}")
    sep = fa.rescue.separation
    data = pl.DataFrame({
        "class": ["rescued", "not_rescued"],
        "configurations": [len(sep.positive), len(sep.negative)],
        "fills": [list(sep.positive_fills), list(sep.negative_fills)],
        "members": [list(sep.positive), list(sep.negative)]},
        schema={"class": pl.String, "configurations": pl.Int64, "fills": pl.List(pl.Float64),
                "members": pl.List(pl.String)})
    out = [{cols[0]: f"{t} rescues (reaches {ep.rescue_cutoff:g})", cols[1]: _pcts(sep.positive_fills),
            cols[2]: str(len(sep.positive)), cols[3]: fmt_count_of(len(sep.positive), len(sep.positive))},
           {cols[0]: f"{t} does not rescue", cols[1]: _pcts(sep.negative_fills),
            cols[2]: str(len(sep.negative)), cols[3]: fmt_count_of(0, len(sep.negative))}]
    corr = fa.failing
    note = (f"Post-hoc rule. Among the {fa.rescue.failing} failing configurations, fill versus paired "
            f"effect: Pearson r = {fmt_signed(corr.pearson)}, Spearman rho = {fmt_signed(corr.spearman)}; "
            f"over all {fa.all.n}: {fmt_signed(fa.all.pearson)} and {fmt_signed(fa.all.spearman)}.")
    return TableSpec("t_threshold", title, data.with_columns(
        pl.col("fills").list.eval(pl.element().cast(pl.String)).list.join(";"),
        pl.col("members").list.join(";")), display_frame(out, cols), note=note)


def borderline(ctx: ReportContext) -> TableSpec:
    """Paper 4.7.1: the fill margin of the rescue separation, with and without borderline models."""
    ep = ctx.params
    title = "Exploratory rescue separation with and without the borderline configurations"
    cols = ["classification", "rescued fills", "non-rescued fills", "margin"]
    fa = fill_result(ctx)
    if fa is None or fa.rescue.failing == 0:
        return empty_table("t_borderline", title, cols, "no failing configuration in the panel")
    rows = [("all models", "all", fa.rescue)]
    if fa.borderline:
        rows.append(("excluding borderline models", "excluding_borderline", fa.rescue_excl_borderline))
    data = pl.DataFrame(
        [{"classification": key, "rescued": len(r.separation.positive), "not_rescued": len(r.separation.negative),
          "margin": r.separation.margin} for _, key, r in rows],
        schema={"classification": pl.String, "rescued": pl.Int64, "not_rescued": pl.Int64,
                "margin": pl.Float64})
    out = [{"classification": label, "rescued fills": _pcts(r.separation.positive_fills),
            "non-rescued fills": _pcts(r.separation.negative_fills),
            "margin": "—" if r.separation.margin != r.separation.margin
            else f"{100 * r.separation.margin:.0f} pts"} for label, _, r in rows]
    names = ", ".join(fa.borderline) or "none"
    return TableSpec("t_borderline", title, data, display_frame(out, cols),
                     note=f"Borderline: control mean within {ep.borderline_margin:g} of the cutoff "
                          f"({names}). No p-value is attached to this post-hoc separation.")


def deeper_repeats(ctx: ReportContext) -> TableSpec:
    """Paper 4.7.1: partition runs planned deeper than the usual depth, per arm."""
    s = ctx.study
    title = "Deeper repeats: partition runs planned with more repeats than the usual depth"
    cols = ["model", "arm", "n", "mean", f"rows ≥ {ctx.threshold:g}", "fill", "headings carried"]
    runs = partition_runs_frame(s)
    if runs.height == 0:
        return empty_table("t_deep", title, cols, "no partition runs")
    usual = int(runs["planned_repeats"].median())  # type: ignore[arg-type]
    deep = runs.filter(pl.col("planned_repeats") > usual)
    if deep.height == 0:
        return empty_table("t_deep", title, cols, f"every partition run is planned at {usual} repeats")
    rows = scored_rows(ctx.rows, scenario=s.scenario, arms=[s.control, s.treatment]).join(
        deep, on=["configuration", "execution_group"], how="semi")
    fill = (pl.col("carried_chars").cast(pl.Float64) / pl.col("declared_chars").cast(pl.Float64))
    frame = rows.group_by("configuration", "arm").agg(
        pl.len().alias("rows"), pl.col("recall").mean().alias("mean"),
        (pl.col("recall") >= ctx.threshold).sum().cast(pl.Int64).alias("rows_at_threshold"),
        fill.mean().alias("fill"),
        pl.col("headings_carried").drop_nulls().value_counts(sort=True).alias("headings")
    ).sort("configuration", "arm")
    out = []
    for r in frame.iter_rows(named=True):
        hs = sorted((int(v["headings_carried"]), int(v["count"])) for v in r["headings"])
        text = (f"{hs[0][0]} on all {hs[0][1]}" if len(hs) == 1
                else ", ".join(f"{h} on {n} rows" if i == 0 else f"{h} on {n}" for i, (h, n) in enumerate(hs)))
        out.append({"model": r["configuration"], "arm": r["arm"], "n": str(r["rows"]),
                    "mean": fmt_num(r["mean"]), cols[4]: str(r["rows_at_threshold"]),
                    "fill": fmt_pct(r["fill"]), "headings carried": text or "not recorded"})
    data = frame.with_columns(pl.col("headings").list.eval(
        pl.format("{}:{}", pl.element().struct.field("headings_carried"),
                  pl.element().struct.field("count"))).list.join(";"))
    return TableSpec("t_deep", title, data, display_frame(out, cols),
                     note=f"Usual depth is the median planned repeats of the partition runs ({usual}).")


def headings(ctx: ReportContext) -> TableSpec:
    """Paper 4.8: recall by headings carried, single-field schema arms, plus within-cell fits."""
    ep = ctx.params
    s = ctx.study
    title = f"Exploratory: recall by headings carried, single-field schema arms ({', '.join(ep.single_field_arms)})"
    cols = ["headings that arrived", "rows", "mean recall", f"rows ≥ {ep.threshold_partial:g}"]
    ha = headings_analysis(ctx.rows, s.scenario, s.control, ep)
    frame = ha.table_single_field.to_frame()
    if int(frame["rows"].sum()) == 0:
        return empty_table("t_headings", title, cols, "no valid single-field rows record headings carried")
    out = [{cols[0]: str(r["headings"]), "rows": str(r["rows"]),
            "mean recall": fmt_num(r["mean"]) if r["rows"] else "—",
            cols[3]: str(r["rows_at_threshold"])} for r in frame.iter_rows(named=True)]
    w = ha.within_all
    note = (f"Pooled over all arms: r = {fmt_signed(ha.pooled.r)} over {ha.pooled.rows} rows. "
            f"Within (configuration, arm, execution group) cells: {w.cells} informative cells, "
            f"{w.rows} rows, slope {fmt_signed(w.slope)} per heading, residual r = {fmt_signed(w.r)}. "
            "Headings carried is post-treatment: an association, not a mediation estimate.")
    return TableSpec("t_headings", title, frame, display_frame(out, cols), note=note)


def headings_within(ctx: ReportContext) -> TableSpec:
    """Paper 4.8: the within-cell slope and residual r over all arms, single-field arms and control."""
    ep = ctx.params
    s = ctx.study
    title = "Exploratory: within-cell association of headings carried and recall"
    cols = ["arms", "informative cells", "rows", "slope per heading", "residual r"]
    ha = headings_analysis(ctx.rows, s.scenario, s.control, ep)
    fits = [("all arms", ha.within_all), (f"single-field ({', '.join(ep.single_field_arms)})",
                                           ha.within_single_field), (f"{s.control} alone", ha.within_control)]
    if all(w.cells == 0 for _, w in fits):
        return empty_table("t_headings_within", title, cols, "headings never vary within a cell")
    data = pl.DataFrame([{"arms": k, "cells": w.cells, "rows": w.rows, "slope": w.slope, "r": w.r}
                         for k, w in fits],
                        schema={"arms": pl.String, "cells": pl.Int64, "rows": pl.Int64,
                                "slope": pl.Float64, "r": pl.Float64})
    out = [{"arms": k, "informative cells": str(w.cells), "rows": str(w.rows),
            "slope per heading": fmt_signed(w.slope), "residual r": fmt_signed(w.r)} for k, w in fits]
    return TableSpec("t_headings_within", title, data, display_frame(out, cols),
                     note="Cell means of headings and recall removed in every (configuration, arm, "
                          "execution group) cell; informative cells are those whose headings vary.")


def carrier(ctx: ReportContext) -> TableSpec:
    """Paper 4.10: audited rows with a carrier-present, answer-missed discrepancy, by arm."""
    title = "Carrier audit: rows where a graded value was in the carrier but missed by the answer"
    cols = ["arm", "audited rows", "rows with a carrier-present, answer-missed value"]
    au = carrier_audit(ctx.rows, ctx.package.checks, ctx.study.scenario)
    if au.audited_rows == 0:
        return empty_table("t_carrier", title, cols, "no row has every check audited for carrier presence")
    frame = au.per_arm.sort(["audited_rows", "arm"], descending=[True, False])
    out = [{"arm": arm_label(r["arm"]), "audited rows": str(r["audited_rows"]),
            cols[2]: f"{r['present_missed_rows']} ({fmt_pct(r['share'], 1)})"}
           for r in frame.iter_rows(named=True)]
    note = (f"{au.audited_rows} audited rows; carrier and answer counts agree on {au.agree_rows}; the "
            f"carrier count is higher on {au.carrier_higher_rows} and the answer count on "
            f"{au.answer_higher_rows}. Row frequencies, not the share of facts lost.")
    return TableSpec("t_carrier", title, frame, display_frame(out, cols), note=note)


def validity(ctx: ReportContext) -> TableSpec:
    """Validity summary: rows, valid rows and invalid reasons per scenario and arm."""
    title = "Validity: rows, valid rows and invalid reasons by scenario and arm"
    cols = ["scenario", "arm", "rows", "valid", "invalid reasons"]
    r = ctx.rows
    if r.height == 0:
        return empty_table("t_validity", title, cols, "no rows")
    frame = r.group_by("scenario", "arm").agg(
        pl.len().alias("rows"), pl.col("valid").sum().cast(pl.Int64).alias("valid"),
        pl.col("invalid_reason").drop_nulls().value_counts(sort=True).alias("reasons"),
    ).sort("scenario", "arm")
    out = []
    for row in frame.iter_rows(named=True):
        rs = sorted((v["invalid_reason"], int(v["count"])) for v in row["reasons"])
        out.append({"scenario": row["scenario"], "arm": row["arm"], "rows": str(row["rows"]),
                    "valid": fmt_count_of(row["valid"], row["rows"]),
                    "invalid reasons": ", ".join(f"{k} {n}" for k, n in rs) or "none"})
    data = frame.with_columns(pl.col("reasons").list.eval(
        pl.format("{}:{}", pl.element().struct.field("invalid_reason"),
                  pl.element().struct.field("count"))).list.join(";"))
    return TableSpec("t_validity", title, data, display_frame(out, cols),
                     note="Only valid rows enter any aggregate; infrastructure retries leave the failed "
                          "attempt as an invalid row.")


def recall_cells(ctx: ReportContext) -> TableSpec:
    """Per-cell denominators of every (scenario, configuration, execution group, arm) mean."""
    title = "Every cell mean with its row count (all scenarios)"
    cols = ["scenario", "configuration", "execution group", "arm", "recall", f"rows ≥ {ctx.threshold:g}"]
    rows = scored_rows(ctx.rows)
    if rows.height == 0:
        return empty_table("t_cells", title, cols, "no valid row with an outcome")
    frame = cell_stats(rows, ["scenario", "configuration", "execution_group", "arm"], ctx.threshold)
    out = [{"scenario": r["scenario"], "configuration": r["configuration"],
            "execution group": r["execution_group"], "arm": r["arm"],
            "recall": fmt_mean_n(r["mean"], r["rows"]), cols[5]: str(r["rows_at_threshold"])}
           for r in frame.iter_rows(named=True)]
    return TableSpec("t_cells", title, frame, display_frame(out, cols))
