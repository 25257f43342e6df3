"""Builder of the carrier-audit table (paper section 4.10), from analysis.estimators.carrier (computed once:
``ReportContext.estimates.carrier``, what results.json ``carrier_audit`` holds)."""

from __future__ import annotations

from analysis.estimators.secondary_results import CARRIER_AUDIT_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_pct
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, display_frame, empty_table


@table(section="exploratory", reads=(CARRIER_AUDIT_REGISTRATION,))
def carrier(ctx: ReportContext) -> TableSpec:
    """Paper 4.10: audited rows with a carrier-present, answer-missed discrepancy, by arm."""
    title = "Carrier audit: rows where a graded value was in the carrier but missed by the answer"
    cols = ["arm", "audited rows", "rows with a carrier-present, answer-missed value"]
    au = ctx.estimates.carrier.audit
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
