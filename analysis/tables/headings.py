"""Builders of the headings tables (paper section 4.8): recall by headings carried and the
within-cell association.

Methods note: the statistics are analysis.estimators.headings.headings_analysis, computed once
(``ReportContext.estimates.headings``, what results.json ``headings_detail`` holds); this module only
selects, orders and formats them. Headings carried is post-treatment: an association, not a mediation
estimate, and labelled exploratory in the report.
"""

from __future__ import annotations

import polars as pl

from analysis.estimators.secondary_results import HEADINGS_DETAIL_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_general, fmt_num, fmt_signed, stated
from analysis.tables.spec import TableSpec, counted, display_frame, empty_table


@table(section="exploratory", reads=(HEADINGS_DETAIL_REGISTRATION,))
def headings(ctx: ReportContext) -> TableSpec:
    """Paper 4.8: recall by headings carried, single-field schema arms, plus within-cell fits."""
    ep = ctx.params
    title = f"Exploratory: recall by headings carried, single-field schema arms ({', '.join(ep.single_field_arms)})"
    cols = ["headings that arrived", "rows", "mean recall", f"rows ≥ {fmt_general(ep.threshold_partial)}"]
    ha = ctx.estimates.headings
    frame = ha.table_single_field.to_frame()
    if int(frame["rows"].sum()) == 0:
        return empty_table("t_headings", title, cols, "no valid single-field rows record headings carried")
    out = [{cols[0]: str(r["headings"]), "rows": str(r["rows"]),
            "mean recall": fmt_num(r["mean"]) if r["rows"] else "—",
            cols[3]: str(r["rows_at_threshold"])} for r in frame.iter_rows(named=True)]
    w = ha.within_all
    note = (f"Pooled over all arms: {stated('r', ha.pooled.r, fmt_signed(ha.pooled.r))} over "
            f"{counted(ha.pooled.rows, 'row')}. Within (configuration, arm, execution group) cells: "
            f"{counted(w.cells, 'informative cell')}, {counted(w.rows, 'row')}, "
            f"{stated('slope', w.slope, fmt_signed(w.slope) + ' per heading', eq=' ')}, "
            f"{stated('residual r', w.r, fmt_signed(w.r))}. "
            "Headings carried is post-treatment: an association, not a mediation estimate.")
    return TableSpec("t_headings", title, frame, display_frame(out, cols), note=note)


@table(section="exploratory", reads=(HEADINGS_DETAIL_REGISTRATION,))
def headings_within(ctx: ReportContext) -> TableSpec:
    """Paper 4.8: the within-cell slope and residual r over all arms, single-field arms and control."""
    ep = ctx.params
    s = ctx.study
    title = "Exploratory: within-cell association of headings carried and recall"
    cols = ["arms", "informative cells", "rows", "slope per heading", "residual r"]
    ha = ctx.estimates.headings
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
