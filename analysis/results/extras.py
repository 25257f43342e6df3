"""Results blocks beyond the core estimators: fact survival, the load ladder's dose response, and the blocks
only the build can compute (claims audit, preregistration, design; the companion pilot's is
analysis.results.pilot). Beside each block function, its registration ``<KEY>_REGISTRATION``, which
analysis/results/registry.py lists in results.json order."""

from __future__ import annotations

from analysis.estimators import survival_results
from analysis.results.block import Block, ResultsBlock
from analysis.results.inputs import ResultsInputs


def fact_survival(i: ResultsInputs) -> Block:
    """``fact_survival``: fold-by-fold capture and survival (analysis.estimators.survival_results)."""
    return Block(survival_results.survival_json(i.survival, i.params))


FACT_SURVIVAL_REGISTRATION = ResultsBlock(
    "fact_survival", fact_survival, "{available, reason?, label, ...}",
    "fold-by-fold capture and survival of graded values (ours, not the paper's)",
    tables=("fact_survival", "fact_survival_curves", "fact_survival_cuts"))
"""results.json ``fact_survival``."""


def dose_response(i: ResultsInputs) -> Block:
    """``dose_response``: recall, paired effect and fact survival per load-ladder rung
    (analysis.estimators.dose_response)."""
    return Block(i.dose_block)


DOSE_RESPONSE_REGISTRATION = ResultsBlock(
    "dose_response", dose_response,
    "{available, reason?, label, interval, control, treatment, min_pairs, rungs: [{rung, order, "
    "scenario, graded_per_chunk, distractors, chunk_tokens, folds, axis, arms, paired, survival}], "
    "missing, reasons}",
    "recall with interval, paired treatment − control and fact survival per load-ladder rung (ours)",
    tables=("dose_response",), figures=("dose_response",))
"""results.json ``dose_response``."""


def claims_audit(i: ResultsInputs) -> Block | None:
    """``claims_audit``: the audit's headline (analysis.audit.headline.audit_block), when the build ran
    the audit and handed it in."""
    return None if i.claims_audit is None else Block(i.claims_audit)


CLAIMS_AUDIT_REGISTRATION = ResultsBlock(
    "claims_audit", claims_audit,
    "{headline, derived, reproduced, printed_cells, row_level, status_counts, claims, ...}",
    "the claims audit's headline (the v1 reconstruction only)", source="build")
"""results.json ``claims_audit``."""


def preregistration(i: ResultsInputs) -> Block:
    """``preregistration``: the sealed plan and every deviation from it (issue 13)."""
    from analysis.plan.report_blocks import preregistration_block  # issue 13

    return Block(preregistration_block(i.package, i.params, i.panel.summary.configurations))


PREREGISTRATION_REGISTRATION = ResultsBlock(
    "preregistration", preregistration, "{present, intact, statement, limits, deviations, ...}",
    "the sealed plan, its seal and every deviation from it", source="build")
"""results.json ``preregistration``."""


def design(i: ResultsInputs) -> Block | None:
    """``design``: OUT/design.json, when the build's OUT holds one (issue 13); the build reads it once,
    keys its stages on its bytes and hands it in (ResultsInputs.design)."""
    return None if i.design is None else Block(dict(i.design))


DESIGN_REGISTRATION = ResultsBlock(
    "design", design, "design.json", "OUT/design.json, when the build's OUT holds one", source="build")
"""results.json ``design``."""
