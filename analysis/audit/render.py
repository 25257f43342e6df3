"""Render an AuditResult as CSV bytes and a Markdown table (the report stage writes them)."""
from __future__ import annotations

import csv
import io

from analysis.audit.claims_audit import AuditResult


def audit_csv(result: AuditResult) -> bytes:
    """The audit table as CSV (LF, minimal quoting)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(result.table.columns)
    for rec in result.table.iter_rows():
        w.writerow(["" if x is None else x for x in rec])
    return buf.getvalue().encode("utf-8")


def audit_markdown(result: AuditResult) -> str:
    """Headline, status counts and the full table in Markdown."""
    def cell(x: object) -> str:
        return str(x or "").replace("|", "\\|").replace("\n", " ")
    from analysis.audit.derive import LEGEND, REPRODUCED, STATUSES
    listed = [s for s in STATUSES if not (s == REPRODUCED and result.reconstruction)]  # nothing is reproduced there
    lines = ["# Claims audit (v1 RECONSTRUCTION)", "", f"**{cell(result.headline)}**", "", "## Legend", "",
             "| status | derived claims | all claims | meaning |", "|---|---|---|---|"]
    lines += [f"| {s} | {result.derived_counts[s]} | {result.all_counts[s]} | {cell(LEGEND[s])} |" for s in listed]
    lines += ["", "Every status is computed, never typed per claim. A claim the paper's own printed cells decide "
              "(analysis/audit/printed.py) is judged against those cells alone: column from_printed is the value "
              "they give. Any other claim needs row-level data and is judged against the evidence (column "
              "recomputed), with the reconstruction's rule declarations (analysis/reconstruct/rules.py: what each "
              "rule reads, builds and was fitted to) deciding whether the rows reach it, hold it by construction, "
              "were fitted to it or miss it; the rules column names the rules behind each recomputation "
              "(data/v1/RECONSTRUCTION.md).", "",
              "| " + " | ".join(result.table.columns) + " |", "|" + "---|" * len(result.table.columns)]
    lines += ["| " + " | ".join(cell(x) for x in rec) + " |" for rec in result.table.iter_rows()]
    return "\n".join(lines) + "\n"
