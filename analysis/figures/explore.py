"""Exploratory figures: fill versus paired effect with threshold classes, recall by headings and
the within-cell residual plot, and the row-level recall distribution.

Methods note: fill and classes come from analysis.estimators.fill (via the tables' fill_result);
headings levels from analysis.estimators.headings; the residuals subtract the
(configuration, arm, execution group) cell means exactly as
analysis.estimators.headings.within_cell does (a test checks the slope agrees with results.json).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.estimators.common import as_float
from analysis.estimators.headings import CELL, headings_analysis, headings_rows
from analysis.figures.common import FigureSpec, empty_figure, new_figure, style
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext, scored_rows
from analysis.tables.explore import fill_result


def fill_vs_effect(ctx: ReportContext) -> FigureSpec:
    """Control fill against the paired effect, coloured by the post-hoc threshold class."""
    s = ctx.study
    title = f"Fill of the {s.control} field versus paired effect (exploratory)"
    with style():
        fa = fill_result(ctx)
        if fa is None or fa.fills.height == 0:
            return FigureSpec("fill_effect", title, empty_figure(title, "no panel configuration with a fill"),
                              "No panel configuration with a fill.", "no panel configuration with a fill")
        cut = fa.cutoff
        thr = fa.rescue.rescue_threshold
        f = fa.fills.with_columns(
            pl.when(pl.col("control_mean") >= cut).then(pl.lit(f"{s.control} ≥ {cut:g} (not failing)"))
            .when(pl.col("treatment_mean") >= thr).then(pl.lit(f"{s.control} < {cut:g}, {s.treatment} rescues"))
            .otherwise(pl.lit(f"{s.control} < {cut:g}, {s.treatment} does not rescue")).alias("cls"))
        colours = [OKABE_ITO["grey"], OKABE_ITO["blue"], OKABE_ITO["vermillion"]]
        markers = ["o", "s", "^"]
        fig, (ax,) = new_figure(height=3.8)
        classes = [f"{s.control} ≥ {cut:g} (not failing)", f"{s.control} < {cut:g}, {s.treatment} rescues",
                   f"{s.control} < {cut:g}, {s.treatment} does not rescue"]
        for cls, col, mk in zip(classes, colours, markers):
            d = f.filter(pl.col("cls") == cls)
            if d.height:
                ax.scatter(d["fill"], d["effect"], color=col, marker=mk, s=30, label=f"{cls} ({d.height})",
                           zorder=3)
        for r in f.filter(pl.col("configuration").is_in(list(fa.borderline))).iter_rows(named=True):
            ax.scatter([r["fill"]], [r["effect"]], facecolors="none", edgecolors=OKABE_ITO["black"], s=90,
                       zorder=4, label="borderline (control within margin of cutoff)")
        ax.axhline(0, color=OKABE_ITO["grey"], lw=0.8)
        ax.set_xlabel(f"fill: share of the declared {s.control} ceiling carried")
        ax.set_ylabel(f"paired effect ({s.treatment} minus {s.control})")
        ax.set_title(title)
        ax.grid(axis="both")
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles))
        ax.legend(uniq.values(), uniq.keys(), loc="best")
    return FigureSpec("fill_effect", title, fig,
                      "Scatter of control-arm fill against the paired effect per configuration, coloured "
                      "by the post-hoc rescue class; borderline configurations circled.")


def _residuals(ctx: ReportContext) -> pl.DataFrame:
    df = headings_rows(ctx.rows, ctx.study.scenario).with_columns(
        pl.col("headings_carried").cast(pl.Float64).alias("x"))
    return df.with_columns(
        (pl.col("x") - pl.col("x").mean().over(CELL)).alias("xr"),
        (pl.col("recall") - pl.col("recall").mean().over(CELL)).alias("yr"),
        (pl.col("x").n_unique().over(CELL) > 1).alias("informative"),
    ).filter(pl.col("informative")).sort("row_id")


def residual_slope(ctx: ReportContext) -> float:
    """Slope Σx̃ỹ/Σx̃² of the plotted residuals (equals results.json headings.within_cell.slope)."""
    r = _residuals(ctx)
    sxx = float((r["xr"] ** 2).sum())
    return float((r["xr"] * r["yr"]).sum()) / sxx if sxx else float("nan")


def headings(ctx: ReportContext) -> FigureSpec:
    """Recall by headings carried (single-field arms) and the within-cell residual scatter."""
    s = ctx.study
    title = "Recall and rendered headings (exploratory, post-treatment association)"
    with style():
        ha = headings_analysis(ctx.rows, s.scenario, s.control, ctx.params)
        levels = ha.table_single_field.to_frame()
        if int(levels["rows"].sum()) == 0:
            return FigureSpec("headings", title, empty_figure(title, "no row records headings carried"),
                              "No row records headings carried.", "no row records headings carried")
        fig, (ax1, ax2) = new_figure(2, height=3.4)
        have = levels.filter(pl.col("rows") > 0)
        ax1.bar(have["headings"], have["mean"], color=OKABE_ITO["blue"], width=0.7)
        for h, m, n in zip(have["headings"], have["mean"], have["rows"]):
            ax1.annotate(f"n={n}", (h, m), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7.5)
        ax1.set_xticks(levels["headings"].to_list())
        ax1.set_ylim(0, 1.12)
        ax1.set_xlabel("headings carried in the final carrier")
        ax1.set_ylabel("mean exact recall")
        ax1.set_title(f"Single-field arms ({', '.join(ctx.params.single_field_arms)})")
        ax1.grid(axis="y")
        res = _residuals(ctx)
        if res.height:
            ax2.scatter(res["xr"], res["yr"], s=12, color=OKABE_ITO["vermillion"], alpha=0.7)
            slope = residual_slope(ctx)
            xs = np.array([as_float(res["xr"].min()), as_float(res["xr"].max())])
            ax2.plot(xs, slope * xs, color=OKABE_ITO["black"], lw=1.2, label=f"slope {slope:+.3f} per heading")
            ax2.legend(loc="lower right")
        else:
            ax2.text(0.5, 0.5, "no informative cell", ha="center", transform=ax2.transAxes)
        ax2.axhline(0, color=OKABE_ITO["grey"], lw=0.8)
        ax2.set_xlabel("headings minus cell mean")
        ax2.set_ylabel("recall minus cell mean")
        ax2.set_title(f"Within cells, all arms ({ha.within_all.cells} cells, {ha.within_all.rows} rows)")
        ax2.grid(axis="both")
    return FigureSpec("headings", title, fig,
                      "Left: bar chart of mean recall by number of headings carried, with row counts. "
                      "Right: scatter of within-cell residuals of headings and recall with the fitted slope.")


def recall_distribution(ctx: ReportContext) -> FigureSpec:
    """Histogram of row-level exact recall on the primary scenario: rows land near 0 or 1."""
    s = ctx.study
    title = f"Row-level exact recall on {s.scenario}"
    with style():
        rows = scored_rows(ctx.rows, scenario=s.scenario)
        if rows.height == 0:
            return FigureSpec("recall_rows", title, empty_figure(title, "no valid row with an outcome"),
                              "No valid row with an outcome.", "no valid row with an outcome")
        k = int(rows["checks_total"].max())  # type: ignore[arg-type]
        counts = rows.group_by("checks_passed").len().sort("checks_passed")
        full = dict(zip(counts["checks_passed"].to_list(), counts["len"].to_list()))
        xs = np.arange(k + 1)
        ys = np.array([full.get(i, 0) for i in xs])
        fig, (ax,) = new_figure(height=3.0)
        ax.bar(xs, ys, color=OKABE_ITO["blue"], width=0.8)
        ax.set_xticks(xs, [f"{i}" for i in xs])
        ax.set_xlabel(f"checks passed out of {k} (exact recall = passed / {k})")
        ax.set_ylabel("valid rows")
        ax.set_title(f"{title} ({rows.height} valid rows, all arms)")
        ax.grid(axis="y")
    return FigureSpec("recall_rows", title, fig,
                      "Bar chart of the number of valid rows by checks passed; mass at the two ends shows "
                      "that rows are effectively binary.")
