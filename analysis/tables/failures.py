"""Builders of the failure-mode tables (paper 4.11 and 6): fabrication, parse failures, invalid rows,
and the claims audit.

Methods note: counts come from analysis.estimators.failures.failure_modes (computed once:
``ReportContext.estimates.failures``, what results.json ``failure_modes`` holds) and analysis.audit;
this module formats them. Fabrication is classified on the retained answer prefix (v1 kept 400 characters).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from analysis.estimators.secondary_results import FAILURE_MODES_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_general, fmt_mean_n, fmt_num
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, counted, display_frame, empty_table, without_zero_columns


@table(section="exploratory", reads=(FAILURE_MODES_REGISTRATION,))
def fabrication(ctx: ReportContext) -> TableSpec:
    """Paper 4.11: failing rows that fabricate with no abstention marker versus those that abstain."""
    thr = ctx.threshold
    title = f"Exploratory: failing rows (recall < {fmt_general(thr)}) that fabricate versus abstain, by arm"
    cols = ["arm", "failing rows", "fabricates with no abstention", "abstains somewhere", "no answer"]
    fa = ctx.estimates.failures.fabrication
    if fa.failing_rows == 0:
        return empty_table("t_fabrication", title, cols, f"no valid row below recall {fmt_general(thr)}")
    frame = fa.per_arm.sort(["failing_rows", "arm"], descending=[True, False])
    out = [{"arm": arm_label(r["arm"]), "failing rows": str(r["failing_rows"]),
            cols[2]: str(r["fabricates"]), cols[3]: str(r["abstains"]), "no answer": str(r["no_answer"])}
           for r in frame.iter_rows(named=True)]
    cols, zeros = without_zero_columns(out, cols, optional=("no answer",))
    return TableSpec("t_fabrication", title, frame, display_frame(out, cols),
                     note=f"{counted(fa.failing_rows, 'failing row')}; {fa.placeholder_rows} contain a "
                          "high-frequency placeholder value (stock port, round number, documentation host). "
                          "Classified on the retained answer prefix only." + zeros)


@table(section="exploratory", reads=(FAILURE_MODES_REGISTRATION,))
def parse_failure_summary(ctx: ReportContext) -> TableSpec:
    """Paper 6: rows carrying a parse failure against clean rows, per arm group and over all arms."""
    title = "Parse failures: rows carrying one, how many stay valid, and their recall against clean rows"
    cols = ["arms", "parse-failure rows", "of which valid", "their recall", "clean rows' recall"]
    groups = ctx.estimates.failures.parse
    if all(g.failure_rows == 0 and g.clean_rows == 0 for g in groups):
        return empty_table("t_parse_failures", title, cols, "no rows of the primary scenario")
    data = pl.DataFrame(
        [{"group": g.group, "arms": ",".join(g.arms) if g.arms else None, "failure_rows": g.failure_rows,
          "failure_valid": g.failure_valid, "failure_mean": g.failure_mean, "clean_rows": g.clean_rows,
          "clean_mean": g.clean_mean} for g in groups],
        schema={"group": pl.String, "arms": pl.String, "failure_rows": pl.Int64, "failure_valid": pl.Int64,
                "failure_mean": pl.Float64, "clean_rows": pl.Int64, "clean_mean": pl.Float64})
    out = [{"arms": "all arms" if g.arms is None else f"{g.group.replace('_', ' ')} ({', '.join(g.arms)})",
            cols[1]: str(g.failure_rows), cols[2]: str(g.failure_valid),
            cols[3]: fmt_mean_n(g.failure_mean, g.failure_valid),
            cols[4]: fmt_mean_n(g.clean_mean, g.clean_rows)} for g in groups]
    return TableSpec("t_parse_failures", title, data, display_frame(out, cols),
                     note="Parse-failure rows: rows with at least one fold whose reply did not parse, valid or "
                          "not; clean rows: valid rows with an outcome and none. Parse failures stay in the means "
                          "by design: a schema the model cannot satisfy is arm behaviour, not an infrastructure "
                          "fault.")


@table(section="exploratory", reads=(FAILURE_MODES_REGISTRATION,))
def invalid_summary(ctx: ReportContext) -> TableSpec:
    """Paper 6: invalid rows of the primary scenario by reason and arm, with their recall if recorded."""
    title = "Invalid rows of the primary scenario by reason and arm"
    cols = ["reason", "arm", "rows", "recall where recorded"]
    frame = ctx.estimates.failures.invalid
    if frame.height == 0:
        return empty_table("t_invalid", title, cols, "every row of the primary scenario is valid")
    out = [{"reason": str(r["invalid_reason"]), "arm": r["arm"], "rows": str(r["rows"]),
            cols[3]: fmt_mean_n(r["mean_recall"], r["with_outcome"])} for r in frame.iter_rows(named=True)]
    return TableSpec("t_invalid", title, frame, display_frame(out, cols),
                     note="Invalid rows enter no aggregate; an invalid row may still record an outcome.")


def _audit_frame(audit: Any) -> pl.DataFrame | None:
    table = getattr(audit, "table", None)
    if table is None:
        return None
    return table if isinstance(table, pl.DataFrame) else pl.DataFrame(table)


NOTE_CHARS = 360
"""Longest claim note the report's table prints whole (about 8 lines in its column); the CSV keeps all."""


def short_note(note: str) -> str:
    """A claim's note for the report's table: whole up to NOTE_CHARS, else cut at a word with a pointer
    to the CSV that holds it in full."""
    if len(note) <= NOTE_CHARS:
        return note
    return note[:NOTE_CHARS].rsplit(" ", 1)[0].rstrip(",;") + " … (in full: claims_audit.csv)"


@table(section=None)
def claims_audit(ctx: ReportContext) -> TableSpec:
    """The claims audit: every transcribed claim of the paper against the value computed here."""
    title = "Claims audit: the paper's printed numbers against values computed from this evidence"
    frame = _audit_frame(ctx.audit)
    if frame is None or frame.height == 0:
        return empty_table("t_claims_audit", title, ["claim", "status"],
                           "the claims audit was not run for this evidence")
    shown = frame.filter(pl.col("role") == "derived") if "role" in frame.columns else frame
    disp = shown.select([pl.col(c).cast(pl.String) if shown.schema[c] != pl.Float64
                         else pl.col(c).map_elements(lambda v: fmt_num(v, 4), return_dtype=pl.String)
                         for c in shown.columns if c != "role"]).fill_null("—")  # role: derived, all of them
    if "note" in disp.columns:
        disp = disp.with_columns(pl.col("note").map_elements(short_note, return_dtype=pl.String))
    note = str(getattr(ctx.audit, "headline", ""))
    if shown.height != frame.height:
        note = note.rstrip(".") + (f". Shown: the {shown.height} derived claims (statistics the paper computes "
                                   f"from other numbers); all {frame.height} claims are in tables/t_claims_audit.csv. "
                                   f"Column from_printed is the value the paper's own printed cells give; each row "
                                   f"names the reconstruction rules behind the package's recomputation "
                                   f"(data/v1/RECONSTRUCTION.md).")
    from analysis.audit.derive import LEGEND
    note += " Legend: " + " ".join(f"[{s}] {m}." for s, m in LEGEND.items())
    return TableSpec("t_claims_audit", title, frame, disp, note=note, anchor="id")


def _meaning(status: str, legend: str) -> str:
    """A status's legend without the opening that repeats the status label beside it: ``mismatch (missed):
    the value …`` -> ``the value …``; a legend whose opening says more than the label is kept whole."""
    head, sep, rest = legend.partition(": ")
    return rest if sep and re.sub(r"\s*\([^)]*\)", "", head).strip() == status else legend


@table(section="claims")
def claims_summary(ctx: ReportContext) -> TableSpec:
    """The claims audit in one table: claims per status, derived claims and all claims."""
    title = "Claims audit summary: claims per status"
    frame = _audit_frame(ctx.audit)
    if frame is None or frame.height == 0 or "status" not in frame.columns:
        return empty_table("t_claims_summary", title, ["status", "claims"],
                           "the claims audit was not run for this evidence")
    from analysis.audit.derive import LEGEND, REPRODUCED, STATUSES
    derived = pl.col("role") == "derived" if "role" in frame.columns else pl.lit(True)
    counted = frame.group_by("status").agg(derived.sum().cast(pl.Int64).alias("derived"),
                                           pl.len().cast(pl.Int64).alias("all"))
    # a reconstruction can reproduce nothing: no "reproduced" row (its legend says it is never used there)
    listed = [s for s in STATUSES if not (s == REPRODUCED and getattr(ctx.audit, "reconstruction", False))]
    every = pl.DataFrame({"status": listed + sorted(set(counted["status"]) - set(listed)),
                          "meaning": [LEGEND[s] for s in listed]
                          + [""] * len(set(counted["status"]) - set(listed))})
    data = (every.join(counted, on="status", how="left", maintain_order="left")
            .with_columns(pl.col("derived", "all").fill_null(0)).select("status", "derived", "all", "meaning"))
    total = {"status": "total", "derived": int(data["derived"].sum()), "all": int(data["all"].sum()), "meaning": ""}
    out = [{"status": r["status"], "derived claims": str(r["derived"]), "all claims": str(r["all"]),
            "meaning": _meaning(r["status"], r["meaning"])} for r in [*data.iter_rows(named=True), total]]
    return TableSpec("t_claims_summary", title, data,
                     display_frame(out, ["status", "derived claims", "all claims", "meaning"]),
                     note="Derived claims are the statistics the paper computes from other numbers; primitive "
                          "claims are the per-cell numbers the v1 reconstruction is built from. Statuses are computed, "
                          "never typed per claim: a claim the paper's printed cells decide is judged against them "
                          "alone (the first three statuses, analysis/audit/printed.py); any other claim needs "
                          "row-level data and is judged against the evidence, with the reconstruction's rule "
                          "declarations (analysis/reconstruct/rules.py) deciding whether it was reached, built, "
                          "fitted or missed.")
