"""Survival of graded values across folds: the per-arm table and the cuts table (issue 14).

Methods note: the analysed package is the evidence itself when it has folds.jsonl, else the
v2 pilot beside it (``ReportContext.estimates.pilot_inputs``), named in the ``evidence`` column.
Numbers come from analysis.estimators.survival_results.package_survival (fact timeline +
Kaplan–Meier survival), computed once per package (``ReportContext.estimates.survival``, and the
pilot's ``estimates.pilot_inputs.survival``); nothing is recomputed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.estimators.estimable import not_estimable
from analysis.estimators.fact_timeline import FactTimeline
from analysis.estimators.survival import FactSurvival, curves_reason
from analysis.results.extras import FACT_SURVIVAL_REGISTRATION
from analysis.results.pilot import V2_PILOT_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_general, fmt_interval, fmt_num
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, counted, display_frame, empty_table, without_zero_columns


@dataclass(frozen=True)
class SurvivalSource:
    """The package the survival outputs show, with its timeline and survival."""

    label: str
    """``this evidence`` or ``v2 pilot``."""
    package: Any
    """The EvidencePackage."""
    timeline: FactTimeline
    """Its fact timeline."""
    survival: FactSurvival
    """Its survival per arm."""


def survival_source(ctx: ReportContext) -> SurvivalSource | str:
    """The evidence when it has a fact timeline, else the v2 pilot beside it; else why neither has one."""
    candidates = [("this evidence", ctx.estimates), ("v2 pilot", ctx.estimates.pilot_inputs)]
    own = ctx.estimates.survival
    for label, inputs in candidates:
        if inputs is None:
            continue
        out = inputs.survival  # computed once per package (results.json fact_survival holds the same)
        if out.timeline is not None and out.survival is not None:
            return SurvivalSource(label, inputs.package, out.timeline, out.survival)
    why = own.reasons.get("folds") or "; ".join(f"{v}" for _, v in sorted(own.reasons.items()))
    return (why or "no fact timeline").removeprefix("not in this evidence: ")


ARM_COLUMNS = ["evidence", "arm", "rows", "captured at entry", "lost", "never lost", "lost, came back",
               "unparsed at entry", "first seen later"]
"""Column headers of t_fact_survival: short names of at most three words (the note defines each)."""


def level_text(params: Any) -> str:
    """``95%`` for alpha = 0.05: the level of the survival intervals."""
    return f"{fmt_general(100 * (1 - params.alpha))}%"


CURVE_COLUMNS = ["evidence", "arm", "S(k) by folds since entry", "final S [{level} interval]", "hazard per fold",
                 "losses when clipped", "losses when unparsed"]
"""Column headers of t_fact_survival_curves; ``{level}`` is filled from the params (:func:`level_text`)."""


def arm_columns(params: Any) -> list[str]:
    """:data:`ARM_COLUMNS` (no level to fill; kept for symmetry with :func:`curve_columns`)."""
    return list(ARM_COLUMNS)


def curve_columns(params: Any) -> list[str]:
    """:data:`CURVE_COLUMNS` with the interval level filled in."""
    return [c.format(level=level_text(params)) for c in CURVE_COLUMNS]


def _curve(km: pl.DataFrame, arm: str, column: str, start: int) -> str:
    part = km.filter((pl.col("arm") == arm) & (pl.col("folds_since_entry") >= start))
    if part.height == 0:
        return "—"
    return ", ".join(f"{k}: {fmt_num(v, 2)}" for k, v in part.select("folds_since_entry", column).iter_rows())


def _final_interval(km: pl.DataFrame, arm: str) -> str:
    part = km.filter(pl.col("arm") == arm).sort("folds_since_entry")
    if part.height == 0:
        return "—"
    first, last = part.row(0, named=True), part.row(-1, named=True)
    if last["ci_rows_lo"] is None or last["ci_rows_hi"] is None:
        span = f" (interval {not_estimable(last.get('ci_rows_reason'))})"
    else:
        span = f" {fmt_interval(last['ci_rows_lo'], last['ci_rows_hi'], 'num', 2)}"
    return (f"{fmt_num(last['survival'], 2)}{span} "
            f"(k = {last['folds_since_entry']}; {counted(first['at_risk_rows'], 'row')}, "
            f"{counted(first['at_risk'], 'value')})")


def _paired_note(s: FactSurvival) -> str:
    parts = []
    for name, p in s.paired.items():
        what = "captured values" if name == "captured" else "values never lost to the final carrier"
        parts.append(f"{s.contrast.treatment} − {s.contrast.control} in {what}: "
                     f"{fmt_num(p.mean, 2)} per row over {counted(p.pairs, 'pair')} in "
                     f"{counted(p.configurations, 'configuration')}"
                     + (f" ({p.reason})" if p.reason else ""))
    return "; ".join(parts)


@table(section="survival", reads=(FACT_SURVIVAL_REGISTRATION, V2_PILOT_REGISTRATION))
def fact_survival(ctx: ReportContext) -> TableSpec:
    """Per arm: capture at entry, first loss, never lost, back in the final carrier, values not captured."""
    title = "Where graded values are lost: capture at the entry fold and first losses across later folds, per arm"
    src = survival_source(ctx)
    cols = arm_columns(ctx.params)
    if isinstance(src, str):
        return empty_table("t_fact_survival", title, cols, src)
    s, label = src.survival, src.label
    rows = []
    for r in s.arms.iter_rows(named=True):
        rows.append({
            "evidence": label, "arm": arm_label(r["arm"]), "rows": str(r["rows"]),
            cols[3]: f"{fmt_count_of(r['captured'], r['entered'])} ({fmt_num(r['capture_rate'])})",
            cols[4]: fmt_count_of(r["losses"], r["captured"]),
            cols[5]: fmt_count_of(r["survived"], r["captured"]),
            cols[6]: fmt_count_of(r["reappeared"], r["losses"]),
            cols[7]: fmt_count_of(r["not_captured_parse_failed"], r["not_captured"]),
            cols[8]: fmt_count_of(r["appeared_late"], r["not_captured"]),
        })
    note = (f"Valid rows of scenario {s.contrast.scenario} ({label}). Entry fold: the first fold that read the "
            "value's chunk; captured at entry: the value is a whole token of that fold's carrier (captured / "
            "entered, with the rate). Lost: the first fold after entry whose carrier lacks a captured value "
            "(time to first loss); never lost: present in every carrier to the final one. A value that comes "
            "back later stays lost and is counted again in 'lost, came back' (back in the final carrier), so "
            "captured = lost + never lost. Values not captured at entry are split into 'unparsed at entry' (the "
            "entry fold did not parse) and 'first seen later' (absent at entry, present in a later carrier); "
            "they are outside the survival analysis. The curves are in the next table. "
            "Paired within repeat blocks (primary panel estimator): " + _paired_note(s) + ". Ours, not the paper's.")
    data = s.arms.with_columns(pl.lit(label).alias("evidence"))
    cols, zeros = without_zero_columns(rows, cols, optional=(cols[6], cols[7], cols[8]))
    return TableSpec("t_fact_survival", title, data, display_frame(rows, cols), note=note + zeros)


@table(section="survival", reads=(FACT_SURVIVAL_REGISTRATION, V2_PILOT_REGISTRATION))
def fact_survival_curves(ctx: ReportContext) -> TableSpec:
    """Per arm: Kaplan–Meier S(k), S at the last fold with its row-cluster interval, hazard, loss sites."""
    title = ("Survival of captured values across later folds: Kaplan–Meier curve, hazard and where losses happen, "
             "per arm")
    src = survival_source(ctx)
    cols = curve_columns(ctx.params)
    if isinstance(src, str):
        return empty_table("t_fact_survival_curves", title, cols, src)
    s, label = src.survival, src.label
    why = curves_reason(s.km)
    if why:  # no arm has 2 rows with a captured value: no curve is estimable (one sentence says why)
        empty = empty_table("t_fact_survival_curves", title, cols, why)
        return TableSpec(empty.name, title, empty.data, empty.display,
                         empty_reason=f"No survival curve is estimated: {why}")
    rows = [{"evidence": label, "arm": arm_label(r["arm"]),
             cols[2]: _curve(s.km, r["arm"], "survival", 0),
             cols[3]: _final_interval(s.km, r["arm"]),
             cols[4]: _curve(s.km, r["arm"], "hazard", 1),
             cols[5]: fmt_count_of(r["losses_clipped"], r["losses"]),
             cols[6]: fmt_count_of(r["losses_parse_failed"], r["losses"])}
            for r in s.arms.iter_rows(named=True)]
    note = (f"Captured values of valid rows of scenario {s.contrast.scenario} ({label}). S(k): Kaplan–Meier "
            "survival of captured values k folds after entry (right-censored at the last fold); final S: S at "
            f"the last fold k; hazard: first losses over values at risk at k. The {level_text(ctx.params)} "
            "interval takes the row as the cluster (cluster-robust variance, log-log), since the values of one "
            "row share its carrier; the rows and values at risk at entry follow it. Losses when clipped / "
            "unparsed count losses whose fold was clipped at the carry cap / did not parse (a fold can be "
            "both), out of all losses. Ours, not the paper's.")
    data = s.km.with_columns(pl.lit(label).alias("evidence"))
    return TableSpec("t_fact_survival_curves", title, data, display_frame(rows, cols), note=note)


CUT_COLUMNS = ["evidence", "cut", "level", "arm", "values", "captured at entry", "lost", "never lost"]


@table(section="survival", reads=(FACT_SURVIVAL_REGISTRATION, V2_PILOT_REGISTRATION))
def fact_survival_cuts(ctx: ReportContext) -> TableSpec:
    """Capture and survival cut by the fixture's value class and by the entry fold's distance from the last."""
    title = "Capture and survival of graded values by value class and by folds between entry and the last fold"
    src = survival_source(ctx)
    if isinstance(src, str):
        return empty_table("t_fact_survival_cuts", title, CUT_COLUMNS, src)
    cuts, label = src.survival.cuts, src.label
    names = {"value_class": "value class", "distance": "folds after entry"}
    rows = [{"evidence": label, "cut": names.get(r["cut"], r["cut"]), "level": r["level"], "arm": arm_label(r["arm"]),
             "values": str(r["facts"]),
             "captured at entry": f"{fmt_count_of(r['captured'], r['facts'])} ({fmt_num(r['capture_rate'])})",
             CUT_COLUMNS[6]: fmt_count_of(r["losses"], r["captured"]),
             CUT_COLUMNS[7]: fmt_count_of(r["survived"], r["captured"])}
            for r in cuts.iter_rows(named=True)]
    return TableSpec("t_fact_survival_cuts", title, cuts.with_columns(pl.lit(label).alias("evidence")),
                     display_frame(rows, CUT_COLUMNS),
                     note=f"Values with an entry fold, valid rows ({label}). 'Folds after entry' = last fold − "
                          "entry fold (0: the value arrives in the last fold). Lost: first absence after entry, "
                          "also when the value comes back later; never lost: present to the final carrier; "
                          "captured = lost + never lost. Ours, not the paper's.")
