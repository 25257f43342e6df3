"""Results blocks beyond the core estimators: fact survival, the load ladder's dose response, and the blocks
only the build can compute (claims audit, preregistration, design; the companion pilot's is
analysis.results.pilot). Beside each block function ``<key>_block(e)``, its registration
``<KEY>_REGISTRATION``, which analysis/results/registry.py lists in results.json order."""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.estimators import survival_results
from analysis.estimators.common import OURS_LABEL, Contrast
from analysis.estimators.registration import Block, Estimates, ResultsBlock


def fact_survival_block(e: Estimates) -> Block:
    """``fact_survival``: fold-by-fold capture and survival (analysis.estimators.survival_results)."""
    return Block(survival_results.survival_json(e.survival, e.params))


FACT_SURVIVAL_REGISTRATION = ResultsBlock(
    "fact_survival", fact_survival_block, "{available, reason?, label, ...}",
    "fold-by-fold capture and survival of graded values (ours, not the paper's)", serialises=("survival",))
"""results.json ``fact_survival``."""


def _records(df: pl.DataFrame) -> list[dict[str, Any]]:
    floats = [c for c, t in df.schema.items() if t == pl.Float64]
    return df.with_columns([pl.col(c).fill_nan(None) for c in floats]).to_dicts()


def _plant(truth: Any, by_rung: dict[str, dict[str, Any]], contrast: Contrast) -> None:
    """Add the closed-form planted values (analysis.evidence.truth) to each rung's arms and paired record."""
    for g in by_rung.values():
        f = (g["graded_per_chunk"], g["chunk_tokens"], g["distractors"], g["folds"])
        for arm, rec in g["arms"].items():
            rec["planted"] = truth.recall(arm, *f) if arm in truth.arms else None
        for arm, rec in g["survival"].items():
            rec["planted_capture"] = truth.capture(arm, *f[:3]) if arm in truth.arms else None
        if g["paired"] is not None and {contrast.control, contrast.treatment} <= set(truth.arms):
            g["paired"]["planted"] = truth.recall(contrast.treatment, *f) - truth.recall(contrast.control, *f)


def dose_response_block(e: Estimates) -> Block:
    """``dose_response``: recall, paired effect and fact survival per load-ladder rung
    (analysis.estimators.dose_response), with a simulated package's planted values beside them;
    ``available: false`` without a ladder."""
    d = e.dose_response
    if d is None:
        return Block({"available": False, "reason": "the evidence has no load ladder (study.toml [ladder])",
                      "label": OURS_LABEL})
    by_rung: dict[str, dict[str, Any]] = {r["rung"]: {**r, "arms": {}, "paired": None, "survival": {}}
                                          for r in _records(d.rungs)}
    for r in _records(d.arms):
        by_rung[r.pop("rung")]["arms"][r.pop("arm")] = r
    for r in _records(d.paired):
        by_rung[r.pop("rung")]["paired"] = r
    for r in _records(d.survival):
        by_rung[r.pop("rung")]["survival"][r.pop("arm")] = r
    truth = getattr(e.study, "simulation", None)
    if truth is not None:  # a simulated package's planted values beside the estimates
        _plant(truth, by_rung, d.contrast)
    return Block({"available": True, "reason": None, "label": OURS_LABEL, "interval": d.interval,
                  "control": d.contrast.control, "treatment": d.contrast.treatment,
                  "min_pairs": e.params.min_pairs, "rungs": list(by_rung.values()), "missing": list(d.missing),
                  "reasons": dict(d.reasons)})


DOSE_RESPONSE_REGISTRATION = ResultsBlock(
    "dose_response", dose_response_block,
    "{available, reason?, label, interval, control, treatment, min_pairs, rungs: [{rung, order, "
    "scenario, graded_per_chunk, distractors, chunk_tokens, folds, axis, arms, paired, survival}], "
    "missing, reasons}",
    "recall with interval, paired treatment − control and fact survival per load-ladder rung (ours)",
    serialises=("dose_response",))
"""results.json ``dose_response``."""


def claims_audit_block(e: Estimates) -> Block | None:
    """``claims_audit``: the audit's headline (analysis.audit.headline.audit_block), when the build ran
    the audit and handed it in."""
    return None if e.claims_audit is None else Block(e.claims_audit)


CLAIMS_AUDIT_REGISTRATION = ResultsBlock(
    "claims_audit", claims_audit_block,
    "{headline, derived, reproduced, printed_cells, row_level, status_counts, claims, ...}",
    "the claims audit's headline (the v1 reconstruction only)", source="build")
"""results.json ``claims_audit``."""


def preregistration_block(e: Estimates) -> Block:
    """``preregistration``: the sealed plan and every deviation from it."""
    from analysis.plan import report_blocks

    return Block(report_blocks.preregistration_block(e.package, e.params, e.panel.summary.configurations))


PREREGISTRATION_REGISTRATION = ResultsBlock(
    "preregistration", preregistration_block, "{present, intact, statement, limits, deviations, ...}",
    "the sealed plan, its seal and every deviation from it", source="build")
"""results.json ``preregistration``."""


def design_block(e: Estimates) -> Block | None:
    """``design``: OUT/design.json, when the build's OUT holds one; the build reads it once, keys its stages
    on its bytes and hands it in (ResultsInputs.design)."""
    return None if e.design is None else Block(dict(e.design))


DESIGN_REGISTRATION = ResultsBlock(
    "design", design_block, "design.json", "OUT/design.json, when the build's OUT holds one", source="build")
"""results.json ``design``."""
