"""Recall per arm with its Clopper–Pearson interval (ours): one row per arm of the results block ``arm_recall``
(analysis.estimators.arm_recall, whose methods note says how it is computed).

Methods note. Rows are the arms of the primary scenario in the study's arm order. Columns: the valid rows
with an outcome, the graded checks passed over the graded checks of those rows, the pooled check recall, and
its exact binomial (Clopper–Pearson) interval at the analysis level, which treats an arm's checks as
independent. An arm without a graded check prints a dash and its reason in the note. The CSV keeps every
value at full precision (``passed``, ``checks``, ``recall``, ``lo``, ``hi``).
"""

from __future__ import annotations

import polars as pl

from analysis.estimators.arm_recall import ARM_RECALL_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_int, fmt_num, fmt_pct
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, display_frame, empty_table

NAME = "t_arm_recall"
TITLE = "Recall per arm with its exact binomial interval"
DATA_COLUMNS = ("arm", "rows", "passed", "checks", "recall", "lo", "hi")
"""The CSV's columns."""


@table(section="beyond", reads=(ARM_RECALL_REGISTRATION,))
def arm_recall(ctx: ReportContext) -> TableSpec:
    """Pooled check recall of every arm on the primary scenario with its Clopper–Pearson interval."""
    value = ctx.estimates.block_value(ARM_RECALL_REGISTRATION)
    level = fmt_pct(value["nominal"]) if value else "—"
    cols = ["arm", "valid rows", "checks passed", "recall", f"{level} interval"]
    arms = (value or {}).get("arms") or []
    if not any(a["checks"] for a in arms):
        return empty_table(NAME, TITLE, cols, "no valid row with graded checks on the primary scenario")
    out = [{"arm": arm_label(a["arm"]), "valid rows": fmt_int(a["rows"]),
            "checks passed": fmt_count_of(a["passed"], a["checks"]), "recall": fmt_num(a["recall"]),
            cols[4]: "—" if a["lo"] is None else f"[{fmt_num(a['lo'])}, {fmt_num(a['hi'])}]"} for a in arms]
    data = pl.DataFrame({c: [a[c] for a in arms] for c in DATA_COLUMNS},
                        schema={"arm": pl.String, "rows": pl.Int64, "passed": pl.Int64, "checks": pl.Int64,
                                "recall": pl.Float64, "lo": pl.Float64, "hi": pl.Float64})
    missing = "; ".join(f"{a['arm']}: {a['reason']}" for a in arms if a["reason"])
    return TableSpec(NAME, TITLE, data, display_frame(out, cols),
                     note=f"Scenario {value['scenario']}: valid rows with an outcome. Recall is checks passed over "
                          "graded checks of the arm's rows; the interval is Clopper–Pearson's exact binomial one, "
                          "which treats the checks as independent, so it is narrower than a row-clustered "
                          "interval." + (f" No recall for {missing}." if missing else ""))
