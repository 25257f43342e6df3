"""Builders of the cell tables: row validity, every cell mean with its row count, the deeper-repeat
runs (paper 4.7.1) and design-effect-aware Wilson intervals of the primary cells (ours, read from
results.json ``beyond_paper.design_effect_intervals``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.estimators.common import valid_outcome_rows
from analysis.estimators.estimable import not_estimable
from analysis.estimators.secondary_results import BEYOND_PAPER_REGISTRATION
from analysis.tables.context import ReportContext, cell_stats
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_general, fmt_interval, fmt_mean_n, fmt_num, fmt_pct, stated
from analysis.tables.panel import partition_runs_frame
from analysis.tables.spec import TableSpec, display_frame, empty_table


@table(section="exploratory")
def deeper_repeats(ctx: ReportContext) -> TableSpec:
    """Paper 4.7.1: partition runs planned deeper than the usual depth, per arm."""
    s = ctx.study
    title = "Deeper repeats: partition runs planned with more repeats than the usual depth"
    cols = ["model", "arm", "n", "mean", f"rows ≥ {fmt_general(ctx.threshold)}", "fill", "headings carried"]
    runs = partition_runs_frame(s)
    if runs.height == 0:
        return empty_table("t_deep", title, cols, "no partition runs")
    usual = int(runs["planned_repeats"].median())  # type: ignore[arg-type]
    deep = runs.filter(pl.col("planned_repeats") > usual)
    if deep.height == 0:
        return empty_table("t_deep", title, cols, f"every partition run is planned at {usual} repeats")
    rows = valid_outcome_rows(ctx.rows, scenario=s.scenario, arms=[s.control, s.treatment]).join(
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


@table(section="exploratory")
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


@table(section=None)
def recall_cells(ctx: ReportContext) -> TableSpec:
    """Per-cell denominators of every (scenario, configuration, execution group, arm) mean."""
    title = "Every cell mean with its row count (all scenarios)"
    cols = ["scenario", "model", "execution group", "arm", "recall", f"rows ≥ {fmt_general(ctx.threshold)}"]
    rows = valid_outcome_rows(ctx.rows)
    if rows.height == 0:
        return empty_table("t_cells", title, cols, "no valid row with an outcome")
    frame = cell_stats(rows, ["scenario", "configuration", "execution_group", "arm"], ctx.threshold)
    out = [{"scenario": r["scenario"], "model": r["configuration"],
            "execution group": r["execution_group"], "arm": r["arm"],
            "recall": fmt_mean_n(r["mean"], r["rows"]), cols[5]: str(r["rows_at_threshold"])}
           for r in frame.iter_rows(named=True)]
    return TableSpec("t_cells", title, frame, display_frame(out, cols))


def _effective_n(x: float | None) -> str:
    return "not estimable" if x is None else fmt_num(x, 1)


def _cell_interval(r: dict[str, Any], design_reason: str | None) -> str:
    """``[lo, hi]``, or why it is not estimable (the design effect's reason), never ``[—, —]``."""
    if r.get("lo") is not None and r.get("hi") is not None:
        return fmt_interval(r['lo'], r['hi'])
    return not_estimable(f"no design effect ({design_reason})" if design_reason else "no design effect")


@table(section="beyond", reads=(BEYOND_PAPER_REGISTRATION,))
def cell_intervals(ctx: ReportContext) -> TableSpec:
    """Design-effect-aware Wilson intervals of the control and treatment cells of the primary scenario."""
    s = ctx.study
    title = (f"Beyond the paper: {s.control} and {s.treatment} cell means with design-effect-aware "
             "intervals (ours)")
    cols = ["model", "execution group", "arm", "recall", "n", "effective n", "interval"]
    d = ctx.estimates.block_value(BEYOND_PAPER_REGISTRATION).get("design_effect_intervals") or {}
    cells = [c for c in d.get("cells") or [] if c.get("arm") in (s.control, s.treatment)]
    if not cells:
        return empty_table("t_beyond_cells", title, cols, "no control or treatment cell with a valid row")
    data = pl.DataFrame(cells).sort("configuration", "execution_group", "arm")
    out = [{"model": r["configuration"], "execution group": r["execution_group"], "arm": r["arm"],
            "recall": fmt_num(r["mean"]), "n": str(r["rows"]), "effective n": _effective_n(r["effective_n"]),
            "interval": _cell_interval(r, d.get("reason"))} for r in data.iter_rows(named=True)]
    one_group = data.group_by("configuration").agg(pl.col("execution_group").n_unique().alias("k"))["k"].max() == 1
    if one_group:  # the group names nothing the model does not: said once in the note, not in a column
        cols = [c for c in cols if c != "execution group"]
    k, deff = d.get("checks_per_row"), d.get("design_effect")
    if isinstance(k, (int, float)) and isinstance(deff, (int, float)) and deff > 0:
        # one factor for every cell: the column would repeat n times a constant, so the note states the factor
        cols = [c for c in cols if c != "effective n"]
        scale = f"effective n = n × {fmt_num(k, 0)} checks / design effect = {fmt_num(k / deff, 2)} n"
    else:
        scale = "effective n: n × checks per row / design effect"
    return TableSpec("t_beyond_cells", title, data, display_frame(out, cols),
                     note=("Each model's cells come from one execution group. " if one_group else "")
                     + f"n: valid rows of the cell; {scale}. "
                     + f"{d.get('method', '')}; "
                          f"{stated('design effect', d.get('design_effect'), fmt_num(d.get('design_effect')))}, "
                          "from the within-row dependence of the checks. Ours, not the paper's.")
