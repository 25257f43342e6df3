"""Recall figure: the row-level distribution of exact recall on the primary scenario."""

from __future__ import annotations

import numpy as np

from analysis.estimators.common import valid_outcome_rows
from analysis.figures.common import FigureSpec, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext


@figure(section="panel")
def recall_distribution(ctx: ReportContext) -> FigureSpec:
    """Histogram of row-level exact recall on the primary scenario: rows land near 0 or 1."""
    s = ctx.study
    title = f"Row-level exact recall on {s.scenario}"
    with style():
        rows = valid_outcome_rows(ctx.rows, scenario=s.scenario)
        if rows.height == 0:
            return FigureSpec("recall_rows", title, empty_figure(title, "no valid row with an outcome"),
                              "No valid row with an outcome.", "no valid row with an outcome")
        k = int(rows["checks_total"].max())  # type: ignore[arg-type]
        counts = rows.group_by("checks_passed").len().sort("checks_passed")
        full = dict(zip(counts["checks_passed"].to_list(), counts["len"].to_list(), strict=True))
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
