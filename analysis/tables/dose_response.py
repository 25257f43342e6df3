"""Dose-response over the load ladder: one table of recall, paired effect and fact survival per rung.

Methods note: the numbers are the ``dose_response`` block (analysis.results.extras.dose_response_block),
computed once by the results stage and read as ``ctx.estimates.block_value(DOSE_RESPONSE_REGISTRATION)``, of
the evidence when it has a load ladder, else of the companion pilot beside it (its own estimates: results.json's
``v2_pilot.dose_response``); nothing is recomputed here and results.json is not read. The figure
(analysis.figures.dose_response) reads the same block through :func:`dose_source`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from analysis.estimators.estimable import not_estimable
from analysis.results.extras import DOSE_RESPONSE_REGISTRATION
from analysis.results.pilot import V2_PILOT_REGISTRATION
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_count_of, fmt_interval, fmt_num, fmt_signed
from analysis.tables.labels import arm_label
from analysis.tables.spec import TableSpec, display_frame, empty_table

TITLE = "Dose–response over the load ladder: recall per arm, paired effect and fact survival per rung"
FACTOR_NAMES = {"graded_per_chunk": "graded values per chunk", "distractors": "distractors",
                "chunk_tokens": "tokens per chunk", "folds": "folds", "base": "base rung",
                "several": "several factors"}
NO_LADDER = "neither this evidence nor a companion pilot was run on the load ladder"


def pilot_dose_block(ctx: ReportContext) -> Mapping[str, Any] | None:
    """The companion pilot's ``dose_response`` block (``v2_pilot.dose_response``), computed once with its
    estimates; None when results.json has no ``v2_pilot`` block (no pilot, or none named by its path)."""
    pilot = ctx.estimates.pilot_inputs
    return None if pilot is None or ctx.estimates.pilot_path is None else pilot.block_value(DOSE_RESPONSE_REGISTRATION)


def dose_source(own: Any, pilot: Any) -> tuple[str, Mapping[str, Any]] | str:
    """(label, block) of the evidence's ``dose_response`` block ``own``, else of the companion pilot's
    (``v2_pilot.dose_response``); else why neither has a ladder."""
    if isinstance(own, Mapping) and own.get("available"):
        return "this evidence", own
    if isinstance(pilot, Mapping) and pilot.get("available"):
        return "v2 pilot", pilot
    return NO_LADDER


def _interval(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("recall") is None:
        return "—"
    lo, hi = r.get("lo"), r.get("hi")
    span = f" {fmt_interval(lo, hi, 'num', 2)}" if lo is not None and hi is not None else ""
    return f"{fmt_num(r['recall'], 2)}{span} (n={r['rows']})"


def _why(reason: Any) -> str | None:
    """The interval's reason without the estimator's ``interval: `` scope prefix."""
    return str(reason).removeprefix("interval: ") if reason else None


def _paired(p: Mapping[str, Any] | None, min_pairs: int) -> str:
    if not p or p.get("effect") is None:
        return "— (" + str((p or {}).get("reason") or "no complete pair") + ")"
    lo, hi = p.get("lo"), p.get("hi")
    span = (f" {fmt_interval(lo, hi, 'signed', 2)}" if lo is not None and hi is not None
            else f" (interval {not_estimable(_why(p.get('reason')))})")
    few = "" if p.get("enough_pairs") else f", fewer than {min_pairs} pairs"
    return f"{fmt_signed(p['effect'], 2)}{span} ({p['pairs']} pairs{few})"


def _survival(s: Mapping[str, Any] | None) -> str:
    if not s or not s.get("facts"):
        return "—"
    if not s.get("captured"):  # nothing captured: survival is not estimable, not a dash
        return f"{fmt_count_of(s['captured'], s['facts'])} → none captured, so no survival"
    return f"{fmt_count_of(s['captured'], s['facts'])} → {fmt_count_of(s['survived'], s['captured'])}"


def _planted(cell: Mapping[str, Any], paired: Mapping[str, Any] | None, treatment_line: bool,
             effect: str) -> dict[str, str]:
    """The planted recall and (on the treatment line) planted effect of a simulated package's rung."""
    rec, eff = cell.get("planted"), (paired or {}).get("planted")
    return {"planted recall": "—" if rec is None else fmt_num(rec, 2),
            f"planted {effect}": fmt_signed(eff, 2) if treatment_line and eff is not None else ""}


@table(section="dose_response", reads=(DOSE_RESPONSE_REGISTRATION, V2_PILOT_REGISTRATION))
def dose_response(ctx: ReportContext) -> TableSpec:
    """Per rung and arm: recall with interval and capture → survival; per rung treatment − control."""
    src = dose_source(ctx.estimates.block_value(DOSE_RESPONSE_REGISTRATION), pilot_dose_block(ctx))
    base_cols = ["evidence", "rung", "varies", "arm"]
    if isinstance(src, str):
        return empty_table("t_dose_response", TITLE, base_cols, src)
    label, block = src
    rungs = list(block["rungs"])
    arms = list(dict.fromkeys(a for r in rungs for a in r["arms"]))
    c, t = block["control"], block["treatment"]
    # one line per rung and arm (long), so the table keeps to a column whatever the number of arms
    cols = [*base_cols, "recall", "captured → survived", f"{t} − {c}"]
    planted = any("planted" in a for r in rungs for a in r["arms"].values())
    if planted:  # issue 35: a simulated package shows its closed-form planted values beside the estimates
        cols = [*base_cols, "recall", "planted recall", "captured → survived", f"{t} − {c}", f"planted {t} − {c}"]
    rows, data = [], []
    for r in rungs:
        for a in arms:
            cell = r["arms"].get(a) or {}
            surv = r["survival"].get(a) or {}
            rows.append({"evidence": label, "rung": r["rung"], "varies": FACTOR_NAMES.get(r["axis"], r["axis"]),
                         "arm": a, "recall": _interval(r["arms"].get(a)),
                         "captured → survived": _survival(r["survival"].get(a)),
                         f"{t} − {c}": _paired(r["paired"], int(block["min_pairs"])) if a == t else "",
                         **(_planted(cell, r["paired"], a == t, f"{t} − {c}") if planted else {})})
            data.append({"evidence": label, "rung": r["rung"], "axis": r["axis"], "arm": a,
                         "rows": cell.get("rows"), "recall": cell.get("recall"), "lo": cell.get("lo"),
                         "hi": cell.get("hi"), "facts": surv.get("facts"), "captured": surv.get("captured"),
                         "survived": surv.get("survived"),
                         "paired_effect": (r["paired"] or {}).get("effect") if a == t else None})
    missing = f" Declared rungs without a valid row: {', '.join(block['missing'])}." if block["missing"] else ""
    surv_why = (block.get("reasons") or {}).get("survival")
    note = (f"Valid rows per rung and arm ({label}); a rung's name spells its load factors (g: graded values "
            f"per chunk, d: distractors, c: tokens per chunk, frozen heuristic, f: folds); 'varies' names the "
            f"one load factor in which the rung differs from the base. Recall: mean exact recall with a 95% "
            f"{block['interval']}. {t} − {c} (on the {t} line of each rung): the primary estimator "
            f"(equal-configuration mean of paired differences within repeat blocks) on the rung, with a t "
            f"interval over pair differences. Captured → survived: graded values in the carrier at their "
            f"entry fold, of those read, and never lost (in every carrier from the entry fold to the last; a "
            f"value dropped and later back counts as lost), of those captured."
            + (f" Survival not available: {surv_why}." if surv_why else "") + missing + " Ours, not the paper's."
            + (" Simulated, planted truth: 'planted' columns are the closed-form values of the truth file "
               "(docs/SIMULATION.md) the estimates should recover." if planted else ""))
    frame = pl.DataFrame(data, schema={"evidence": pl.String, "rung": pl.String, "axis": pl.String,
                                       "arm": pl.String, "rows": pl.Int64, "recall": pl.Float64, "lo": pl.Float64,
                                       "hi": pl.Float64, "facts": pl.Int64, "captured": pl.Int64,
                                       "survived": pl.Int64, "paired_effect": pl.Float64})
    return TableSpec("t_dose_response", TITLE, frame, display_frame(rows, cols), note=note)


def arm_names(block: Mapping[str, Any]) -> list[str]:
    """Arms of a dose_response block, in their order (for the figure's legend)."""
    return [arm_label(a) for a in dict.fromkeys(a for r in block["rungs"] for a in r["arms"])]
