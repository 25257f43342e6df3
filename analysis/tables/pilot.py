"""The v2 pilot beside v1: per-arm recall, fold failures, the final carrier and repeat identity.

Methods note: the pilot package (data/v2/pilot, loaded through analysis.evidence.load_package,
lock verified first) arrives in ``ReportContext.extras["v2_pilot"]``. The cells are
analysis.estimators.arm_cells.pilot_arms (the same estimators as v1; see its methods note).
"""

from __future__ import annotations

from analysis.estimators.arm_cells import pilot_arms
from analysis.tables.context import ReportContext
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, display_frame, empty_table, fmt_count_of, fmt_mean_n

PILOT_KEY = "v2_pilot"
"""Name of the pilot package in ReportContext.extras."""


def v2_pilot(ctx: ReportContext) -> TableSpec:
    """The v2 pilot per arm: rows, recall, fold failures, final carrier and repeat identity."""
    title = "The v2 pilot per arm: recall, fold failures, the final carrier and repeat identity"
    cols = ["configuration", "arm", "rows (valid)", "mean recall", "rows ≥ threshold",
            "folds with a parse failure", "folds cut at the length budget", "final carrier chars",
            "graded values in the final carrier", "distinct answers over repeats"]
    package = (ctx.extras or {}).get(PILOT_KEY)
    if package is None:
        return empty_table("t_v2_pilot", title, cols, "no v2 pilot package (data/v2/pilot) beside this evidence")
    data = pilot_arms(package, ctx.params)
    if data.height == 0:
        return empty_table("t_v2_pilot", title, cols,
                           f"the v2 pilot has no valid row with an outcome on {package.study.scenario}")
    thr = float(getattr(ctx.params, "threshold_partial", 0.5))
    cols[4] = f"rows ≥ {thr:g}"
    out = []
    for r in data.iter_rows(named=True):
        out.append({
            "configuration": r["configuration"], "arm": arm_label(r["arm"]),
            "rows (valid)": f"{r['rows']} ({r['valid_rows']})",
            "mean recall": fmt_mean_n(r["mean_recall"], r["scored_rows"]),
            cols[4]: fmt_count_of(r["rows_partial"], r["scored_rows"]),
            cols[5]: fmt_count_of(r["parse_failures"], r["folds"]),
            cols[6]: fmt_count_of(r["finish_length"], r["folds"]),
            cols[7]: fmt_mean_n(r["mean_carried_chars"], r["carried_chars_rows"], 0),
            cols[8]: "—" if r["audited_rows"] is None else fmt_count_of(r["carrier_values"], r["audited_checks"]),
            cols[9]: "—" if r["distinct_answers"] is None else f"{r['distinct_answers']} of {r['repeats']}",
        })
    s = package.study
    return TableSpec("t_v2_pilot", title, data, display_frame(out, cols),
                     note=f"Scenario {s.scenario}, valid rows with an outcome (n); the same estimators as v1 "
                          "(cell summaries, carrier audit). Fold counts are over those rows' folds; graded "
                          "values are checks whose value appears in the final carrier, over rows whose checks "
                          "record it. Distinct answers: different recall answers among the arm's repeats "
                          "(1 means every repeat returned the same text).")
