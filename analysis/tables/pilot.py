"""The v2 pilot beside v1: per-arm recall, fold failures, the final carrier and repeat identity.

Methods note: the pilot package (data/v2/pilot, loaded through analysis.evidence.load_package,
lock verified first) arrives in ``ReportContext.extras["v2_pilot"]``; its estimates in
``ReportContext.estimates.pilot_inputs``. The cells are analysis.estimators.arm_cells.pilot_arms (the
same estimators as v1; see its methods note), computed once for results.json's ``v2_pilot`` and these tables.
"""

from __future__ import annotations

from typing import Any

from analysis.results.pilot import V2_PILOT_REGISTRATION
from analysis.tables.context import PILOT_KEY, ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_general, fmt_mean_n
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, display_frame, empty_table

__all__ = ["FOLD_COLUMNS", "PILOT_KEY", "v2_pilot", "v2_pilot_folds"]


def _pilot_arms(ctx: ReportContext, name: str, title: str, cols: list[str]) -> TableSpec | tuple[Any, Any]:
    """The pilot's per-arm cells and its package, or the empty table saying why there are none."""
    pilot = ctx.estimates.pilot_inputs
    if pilot is None:
        return empty_table(name, title, cols, "no v2 pilot package (data/v2/pilot) beside this evidence")
    package, data = pilot.package, pilot.pilot_arms
    if data.height == 0:
        return empty_table(name, title, cols,
                           f"the v2 pilot has no valid row with an outcome on {package.study.scenario}")
    return package, data


@table(section="pilot", reads=(V2_PILOT_REGISTRATION,))
def v2_pilot(ctx: ReportContext) -> TableSpec:
    """The v2 pilot per arm: rows, recall and repeat identity (its folds and carrier: v2_pilot_folds).

    Split from the fold columns so that each table fits a page's text column (issue 23)."""
    title = "The v2 pilot per arm: rows, recall and repeat identity"
    thr = float(getattr(ctx.params, "threshold_partial", 0.5))
    cols = ["model", "arm", "rows (valid)", "mean recall", f"rows ≥ {fmt_general(thr)}", "distinct answers"]
    got = _pilot_arms(ctx, "t_v2_pilot", title, cols)
    if isinstance(got, TableSpec):
        return got
    package, data = got
    out = [{"model": r["configuration"], "arm": arm_label(r["arm"]),
            "rows (valid)": f"{r['rows']} ({r['valid_rows']})",
            "mean recall": fmt_mean_n(r["mean_recall"], r["scored_rows"]),
            cols[4]: fmt_count_of(r["rows_partial"], r["scored_rows"]),
            cols[5]: "—" if r["distinct_answers"] is None else f"{r['distinct_answers']} of {r['repeats']}"}
           for r in data.iter_rows(named=True)]
    return TableSpec("t_v2_pilot", title, data, display_frame(out, cols),
                     note=f"Scenario {package.study.scenario}, valid rows with an outcome (n); the same estimators "
                          "as v1 (cell summaries). Distinct answers: different recall answers over the arm's "
                          "repeats (1 means every repeat returned the same text). Folds and the final carrier "
                          "per arm are in the next table.")


FOLD_COLUMNS = ("configuration", "arm", "folds", "parse_failures", "finish_length", "mean_carried_chars",
                "carried_chars_rows", "audited_rows", "carrier_values", "audited_checks")
"""The data columns of v2_pilot_folds (its CSV)."""


@table(section="pilot", reads=(V2_PILOT_REGISTRATION,))
def v2_pilot_folds(ctx: ReportContext) -> TableSpec:
    """The v2 pilot per arm: fold failures, length cuts and what the final carrier holds."""
    title = "The v2 pilot per arm: fold failures and the final carrier"
    cols = ["model", "arm", "unparsed folds", "folds cut", "final carrier chars", "values kept"]
    got = _pilot_arms(ctx, "t_v2_pilot_folds", title, cols)
    if isinstance(got, TableSpec):
        return got
    _, data = got
    out = [{"model": r["configuration"], "arm": arm_label(r["arm"]),
            cols[2]: fmt_count_of(r["parse_failures"], r["folds"]),
            cols[3]: fmt_count_of(r["finish_length"], r["folds"]),
            cols[4]: fmt_mean_n(r["mean_carried_chars"], r["carried_chars_rows"], 0),
            cols[5]: "—" if r["audited_rows"] is None else fmt_count_of(r["carrier_values"], r["audited_checks"])}
           for r in data.iter_rows(named=True)]
    return TableSpec("t_v2_pilot_folds", title, data.select(FOLD_COLUMNS), display_frame(out, cols),
                     note="Fold counts are over the folds of the valid rows with an outcome: unparsed folds are "
                          "folds with a parse failure, folds cut those cut at the length budget. Values kept are "
                          "graded values (checks) whose value appears in the final carrier, over rows whose checks "
                          "record it (the carrier audit).")
