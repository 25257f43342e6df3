"""Fill figure: control-arm fill versus paired effect, coloured by the post-hoc threshold class.

Methods note: fill and classes come from analysis.estimators.fill (via the fill tables'
fill_result); exploratory, as in the paper's section 4.7.1.
"""

from __future__ import annotations

import polars as pl

from analysis.estimators.secondary_results import FILL_REGISTRATION
from analysis.figures.common import FigureSpec, arm_key, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.results.core import PANEL_REGISTRATION
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.fill import fill_result
from analysis.tables.formatting import fmt_general


@figure(section="exploratory", reads=(PANEL_REGISTRATION, FILL_REGISTRATION))
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
        cut_text = fmt_general(cut)
        f = fa.fills.with_columns(
            pl.when(pl.col("control_mean") >= cut).then(pl.lit(f"{s.control} ≥ {cut_text} (not failing)"))
            .when(pl.col("treatment_mean") >= thr).then(pl.lit(f"{s.control} < {cut_text}, {s.treatment} rescues"))
            .otherwise(pl.lit(f"{s.control} < {cut_text}, {s.treatment} does not rescue")).alias("cls"))
        colours = [OKABE_ITO["grey"], OKABE_ITO["blue"], OKABE_ITO["vermillion"]]
        markers = ["o", "s", "^"]
        fig, (ax,) = new_figure(height=3.8)
        classes = [f"{s.control} ≥ {cut_text} (not failing)", f"{s.control} < {cut_text}, {s.treatment} rescues",
                   f"{s.control} < {cut_text}, {s.treatment} does not rescue"]
        for cls, col, mk in zip(classes, colours, markers, strict=True):
            d = f.filter(pl.col("cls") == cls)
            if d.height:
                ax.scatter(d["fill"], d["effect"], color=col, marker=mk, s=30, label=f"{cls} ({d.height})",
                           zorder=3)
        for r in f.filter(pl.col("configuration").is_in(list(fa.borderline))).iter_rows(named=True):
            ax.scatter([r["fill"]], [r["effect"]], facecolors="none", edgecolors=OKABE_ITO["black"], s=90,
                       zorder=4, label="borderline (control within margin of cutoff)")
        ax.axhline(0, color=OKABE_ITO["grey"], lw=0.8)
        ax.set_xlabel(f"fill: share of the declared {s.control} ceiling carried\n{arm_key(s.control, s.treatment)}")
        ax.set_ylabel(f"paired effect ({s.treatment} minus {s.control})")
        ax.set_title(title)
        ax.grid(axis="both")
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))
        fig.legend(uniq.values(), uniq.keys(), loc="outside lower center", ncol=2)  # never over a point
    return FigureSpec("fill_effect", title, fig,
                      "Scatter of control-arm fill against the paired effect per configuration, coloured "
                      "by the post-hoc rescue class; borderline configurations circled.")
