"""results.json blocks of the secondary analyses: fill, headings detail, carrier audit, failure modes and
the panel inference the paper does not report (``beyond_paper``: bootstrap, sign flip, GEE, Wilson cells,
labelled "ours, not the paper's").

Each block function ``<key>_block(e)`` shapes one typed estimate of the shared
analysis.estimators.registration.Estimates into its JSON-ready block (NaN -> null, tuples -> lists); beside
it, its registration ``<KEY>_REGISTRATION``, which analysis/results/registry.py lists in results.json order.
The estimates themselves are computed in analysis.estimators.secondary and the estimator modules.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.estimators import failures, fill, headings
from analysis.estimators.common import OURS_LABEL, json_ready, json_ready_block
from analysis.estimators.correlation import Correlation
from analysis.estimators.registration import Block, Estimates, ResultsBlock
from analysis.params import Params


def _frame(df: pl.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON-ready records, vectorised: float NaN -> None (json_ready per cell is slow)."""
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns([pl.col(c).fill_nan(None) for c in floats]).to_dicts()


def headings_json(pooled: headings.PooledCorrelation, w: headings.WithinCell) -> dict[str, Any]:
    """The `headings` block (docs/RESULTS_CONTRACT.md) of a computed pooled r and within-cell fit (all arms)."""
    return json_ready_block({"pooled_r": pooled.r, "rows": pooled.rows,
                             "within_cell": {"cells": w.cells, "rows": w.rows, "slope": w.slope, "r": w.r}})


def _corr(c: Correlation) -> dict[str, Any]:
    return {"pearson": c.pearson, "spearman": c.spearman, "n": c.n,
            "configurations": list(c.units), "reason": c.reason}


def _sep(s: fill.Separation) -> dict[str, Any]:
    return {"positive": list(s.positive), "negative": list(s.negative),
            "positive_fills": list(s.positive_fills), "negative_fills": list(s.negative_fills),
            "margin": s.margin, "separates": s.separates, "reason": s.reason}


def _rescue(r: fill.RescueClassification) -> dict[str, Any]:
    return {"cutoff": r.cutoff, "rescue_threshold": r.rescue_threshold, "failing": r.failing,
            "rescued": r.rescued, "separation": _sep(r.separation)}


def _fill_block(a: fill.FillAnalysis, fill_recall: tuple[pl.DataFrame, Correlation]) -> dict[str, Any]:
    per, corr = fill_recall
    return {
        "definition": "mean over valid control-arm rows of the partition run (primary scenario) "
                      "of carried_chars / declared_chars",
        "per_configuration": {r["configuration"]: {"fill": r["fill"], "fill_rows": r["fill_rows"]}
                              for r in _frame(a.fills.select("configuration", "fill", "fill_rows"))},
        "missing_fill": list(a.missing_fill),
        "cutoff": a.cutoff,
        "borderline": list(a.borderline),
        "correlations": {"all": _corr(a.all), "all_excl_borderline": _corr(a.all_excl_borderline),
                         "failing": _corr(a.failing),
                         "failing_excl_borderline": _corr(a.failing_excl_borderline)},
        "rescue": _rescue(a.rescue),
        "rescue_excl_borderline": _rescue(a.rescue_excl_borderline),
        "sweep": [_rescue(s) for s in a.sweep],
        "sweep_separates": a.sweep_separates,
        "gains": [{"threshold": g.threshold, "count": g.count, "of": g.of, "separation": _sep(g.separation)}
                  for g in a.gains],
        "fill_vs_recall_control_arm": {
            "definition": "per configuration (every configuration, every execution group): mean fill and "
                          "mean recall of valid control-arm rows with an outcome and both lengths",
            "correlation": _corr(corr),
            "per_configuration": _frame(per),
        },
    }


def _table(t: headings.HeadingsTable) -> list[dict[str, Any]]:
    return [{"headings": lv.headings, "rows": lv.rows, "mean": lv.mean,
             "rows_at_threshold": lv.rows_at_threshold} for lv in t.levels]


def _within(w: headings.WithinCell) -> dict[str, Any]:
    return {"arms": list(w.arms) if w.arms is not None else None, "cells": w.cells, "rows": w.rows,
            "slope": w.slope, "r": w.r, "reason": w.reason}


def _headings_detail(h: headings.HeadingsAnalysis, params: Params) -> dict[str, Any]:
    return {
        "threshold": params.threshold_partial,
        "table_all_arms": _table(h.table_all),
        "table_single_field_arms": _table(h.table_single_field),
        "pooled_reason": h.pooled.reason,
        "within_all_arms": _within(h.within_all),
        "within_single_field_arms": _within(h.within_single_field),
        "within_control_arm": _within(h.within_control),
    }


def _failures_block(fm: failures.FailureModes) -> dict[str, Any]:
    fab = fm.fabrication
    return {
        "parse_failures": [json_ready(g) for g in fm.parse],
        "invalid": _frame(fm.invalid),
        "fabrication": {
            "threshold": fab.threshold, "failing_rows": fab.failing_rows, "fabricates": fab.fabricates,
            "abstains": fab.abstains, "no_answer": fab.no_answer, "placeholder_rows": fab.placeholder_rows,
            "per_arm": _frame(fab.per_arm),
            "placeholder_signature": [{"name": p.name, "category": p.category, "regex": p.regex}
                                      for p in failures.PLACEHOLDER_SIGNATURE],
        },
        "graders": json_ready(fm.graders),
    }


def fill_block(e: Estimates) -> Block:
    """``fill``: fill fractions, their correlations with the effect, rescue and gains."""
    return Block(json_ready_block(_fill_block(e.fill.analysis, e.fill.control_arm)))


FILL_REGISTRATION = ResultsBlock(
    "fill", fill_block,
    "{definition, per_configuration, missing_fill, cutoff, borderline, correlations, rescue, ...}",
    "control-arm fill per configuration against the paired effect: correlations, rescue, sweep, gains",
    serialises=("fill",))
"""results.json ``fill``."""


def headings_detail_block(e: Estimates) -> Block:
    """``headings_detail``: headings tables and within-cell fits."""
    return Block(json_ready_block(_headings_detail(e.headings, e.params)))


HEADINGS_DETAIL_REGISTRATION = ResultsBlock(
    "headings_detail", headings_detail_block,
    "{threshold, table_all_arms, table_single_field_arms, pooled_reason, within_*}",
    "headings tables and within-cell fits (all arms, single-field arms, control arm)",
    serialises=("headings",))
"""results.json ``headings_detail``."""


def carrier_audit_block(e: Estimates) -> Block:
    """``carrier_audit``: carrier-vs-answer agreement and ceiling adherence."""
    audit, ceiling = e.carrier.audit, e.carrier.ceiling
    return Block(json_ready_block({
        "scenario": e.study.scenario, "audited_rows": audit.audited_rows, "agree_rows": audit.agree_rows,
        "carrier_higher_rows": audit.carrier_higher_rows, "answer_higher_rows": audit.answer_higher_rows,
        "present_missed_rows": audit.present_missed_rows,
        "absent_answered_rows": audit.absent_answered_rows,
        "per_arm": _frame(audit.per_arm),
        "ceiling_adherence": {"tolerance": ceiling.tolerance, "per_arm": _frame(ceiling.per_arm)},
    }))


CARRIER_AUDIT_REGISTRATION = ResultsBlock(
    "carrier_audit", carrier_audit_block, "{scenario, audited_rows, agree_rows, ..., per_arm, ceiling_adherence}",
    "carrier-vs-answer agreement and discrepancy directions, ceiling adherence", serialises=("carrier",))
"""results.json ``carrier_audit``."""


def failure_modes_block(e: Estimates) -> Block:
    """``failure_modes``: parse failures, invalid rows, fabrication and grader agreement."""
    return Block(json_ready_block(_failures_block(e.failures)))


FAILURE_MODES_REGISTRATION = ResultsBlock(
    "failure_modes", failure_modes_block, "{parse_failures, invalid, fabrication, graders}",
    "parse failures, invalid rows, fabrication versus abstention, grader agreement", serialises=("failures",))
"""results.json ``failure_modes``."""


def beyond_paper_block(e: Estimates) -> Block:
    """``beyond_paper`` (ours, not the paper's): bootstrap, sign flip, GEE, design-effect Wilson cells."""
    r = e.beyond_paper
    dep = r.dependence
    ready = json_ready_block({
        "label": OURS_LABEL,
        "bootstrap": json_ready(r.bootstrap),
        "sign_flip": json_ready(r.sign_flip),
        "gee": json_ready(r.gee),
        "design_effect_intervals": {
            "label": OURS_LABEL,
            "method": "Wilson score interval at n_eff = rows * k / deff",
            "scenario": r.scenario, "checks_per_row": dep.checks_per_row,
            "design_effect": dep.design_effect,
            "reason": dep.reasons.get("design_effect"),
        },
    })
    ready["design_effect_intervals"]["cells"] = _frame(r.cells)  # large: converted vectorised
    return Block(ready)


BEYOND_PAPER_REGISTRATION = ResultsBlock(
    "beyond_paper", beyond_paper_block, "{label, bootstrap, sign_flip, gee, design_effect_intervals}",
    "ours, not the paper's: bootstrap, sign-flip test, GEE, design-effect-adjusted cell intervals",
    serialises=("beyond_paper",))
"""results.json ``beyond_paper`` (ours, not the paper's)."""
