"""Headings figure: recall by headings carried and the within-cell residual plot.

Methods note: headings levels come from analysis.estimators.headings; the residuals subtract the
(configuration, arm, execution group) cell means exactly as
analysis.estimators.headings.within_cell does (a test checks the slope agrees with results.json).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis.estimators.common import as_float
from analysis.estimators.headings import CELL, headings_rows
from analysis.estimators.secondary_results import HEADINGS_DETAIL_REGISTRATION
from analysis.figures.common import FigureSpec, arm_key, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.formatting import fmt_signed


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
    return _slope(_residuals(ctx))


def _slope(r: pl.DataFrame) -> float:
    sxx = float((r["xr"] ** 2).sum())
    return float((r["xr"] * r["yr"]).sum()) / sxx if sxx else float("nan")


@figure(section="exploratory", reads=(HEADINGS_DETAIL_REGISTRATION,))
def headings(ctx: ReportContext) -> FigureSpec:
    """Recall by headings carried (single-field arms) and the within-cell residual scatter."""
    title = "Recall and rendered headings (exploratory, post-treatment association)"
    with style():
        ha = ctx.estimates.headings
        levels = ha.table_single_field.to_frame()
        if int(levels["rows"].sum()) == 0:
            return FigureSpec("headings", title, empty_figure(title, "no row records headings carried"),
                              "No row records headings carried.", "no row records headings carried")
        fig, (ax1, ax2) = new_figure(2, height=3.4)
        have = levels.filter(pl.col("rows") > 0)
        ax1.bar(have["headings"], have["mean"], color=OKABE_ITO["blue"], width=0.7)
        for h, m, n in zip(have["headings"], have["mean"], have["rows"], strict=True):
            ax1.annotate(f"n={n}", (h, m), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7.5)
        ax1.set_xticks(levels["headings"].to_list())
        ax1.set_ylim(0, 1.12)
        ax1.set_xlabel("headings carried in the final carrier\n" + arm_key(*ctx.params.single_field_arms, sep="\n"))
        ax1.set_ylabel("mean exact recall")
        ax1.set_title(f"Single-field arms ({', '.join(ctx.params.single_field_arms)})")
        ax1.grid(axis="y")
        res = _residuals(ctx)
        if res.height:
            ax2.scatter(res["xr"], res["yr"], s=12, color=OKABE_ITO["vermillion"], alpha=0.7)
            slope = _slope(res)
            xs = np.array([as_float(res["xr"].min()), as_float(res["xr"].max())])
            ax2.plot(xs, slope * xs, color=OKABE_ITO["black"], lw=1.2, label=f"slope {fmt_signed(slope)} per heading")
            fig.legend(loc="outside lower center")  # outside: a residual may lie anywhere in the panel
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
