"""Builders of the fill tables (paper section 4.7.1): post-hoc threshold classes and the rescue
separation with and without borderline configurations.

Methods note: the statistics are analysis.estimators.fill's, computed once over the panel's runs
(``ReportContext.estimates.fill``, the same object results.json ``fill`` holds); this module only
selects, orders and formats them. Everything here is exploratory (post-hoc covariate, cut point and rescue rule
in the paper) and is labelled so in the report.
"""

from __future__ import annotations

import polars as pl

from analysis.estimators.fill import FillAnalysis
from analysis.estimators.secondary_results import FILL_REGISTRATION
from analysis.results.core import PANEL_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_general, fmt_pct, fmt_points, fmt_signed, stated
from analysis.tables.spec import TableSpec, display_frame, empty_table


def fill_result(ctx: ReportContext) -> FillAnalysis | None:
    """The fill analysis over the panel (results.json ``fill``, computed once), or None without a panel."""
    if ctx.estimates.panel.frame.height == 0:
        return None
    return ctx.estimates.fill.analysis


def _pcts(fills: tuple[float, ...]) -> str:
    return ", ".join(fmt_pct(f) for f in fills) or "—"


@table(section="exploratory", reads=(PANEL_REGISTRATION, FILL_REGISTRATION))
def threshold_classes(ctx: ReportContext) -> TableSpec:
    """Paper 4.7.1: failing configurations by rescue class, with their fills."""
    ep = ctx.params
    c, t = ctx.study.control, ctx.study.treatment
    title = (f"Exploratory threshold classes: configurations with {c} < {fmt_general(ep.rescue_cutoff)}, "
             f"by whether {t} reaches {fmt_general(ep.rescue_cutoff)}")
    cols = ["original threshold class", "fill of the declared ceiling", "configurations",
            f"crossing {fmt_general(ep.rescue_cutoff)} under {t}"]
    fa = fill_result(ctx)
    if fa is None or fa.rescue.failing == 0:
        return empty_table("t_threshold", title, cols,
                           f"no panel configuration has a {c} mean below {fmt_general(ep.rescue_cutoff)}")
    sep = fa.rescue.separation
    data = pl.DataFrame({
        "class": ["rescued", "not_rescued"],
        "configurations": [len(sep.positive), len(sep.negative)],
        "fills": [list(sep.positive_fills), list(sep.negative_fills)],
        "members": [list(sep.positive), list(sep.negative)]},
        schema={"class": pl.String, "configurations": pl.Int64, "fills": pl.List(pl.Float64),
                "members": pl.List(pl.String)})
    out = [{cols[0]: f"{t} rescues (reaches {fmt_general(ep.rescue_cutoff)})", cols[1]: _pcts(sep.positive_fills),
            cols[2]: str(len(sep.positive)), cols[3]: fmt_count_of(len(sep.positive), len(sep.positive))},
           {cols[0]: f"{t} does not rescue", cols[1]: _pcts(sep.negative_fills),
            cols[2]: str(len(sep.negative)), cols[3]: fmt_count_of(0, len(sep.negative))}]
    corr = fa.failing
    note = (f"Post-hoc rule. Among the {fa.rescue.failing} failing configurations, fill versus paired "
            f"effect: {stated('Pearson r', corr.pearson, fmt_signed(corr.pearson))}, "
            f"{stated('Spearman rho', corr.spearman, fmt_signed(corr.spearman))}; over all {fa.all.n}: "
            f"{stated('Pearson r', fa.all.pearson, fmt_signed(fa.all.pearson))}, "
            f"{stated('Spearman rho', fa.all.spearman, fmt_signed(fa.all.spearman))}.")
    return TableSpec("t_threshold", title, data.with_columns(
        pl.col("fills").list.eval(pl.element().cast(pl.String)).list.join(";"),
        pl.col("members").list.join(";")), display_frame(out, cols), note=note)


@table(section="exploratory", reads=(PANEL_REGISTRATION, FILL_REGISTRATION))
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
            else f"{fmt_points(r.separation.margin)} pts"} for label, _, r in rows]
    names = ", ".join(fa.borderline) or "none"
    return TableSpec("t_borderline", title, data, display_frame(out, cols),
                     note=f"Borderline: control mean within {fmt_general(ep.borderline_margin)} of the cutoff "
                          f"({names}). No p-value is attached to this post-hoc separation.")
