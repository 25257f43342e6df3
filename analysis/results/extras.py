"""Results blocks beyond the core estimators: fact survival, and the blocks only the build can compute
(claims audit, companion pilot, preregistration, design). analysis.results.registry names them per key."""

from __future__ import annotations

from analysis.estimators import survival_results
from analysis.results.block import Block
from analysis.results.inputs import ResultsInputs


def fact_survival(i: ResultsInputs) -> Block:
    """``fact_survival``: fold-by-fold capture and survival (analysis.estimators.survival_results)."""
    return Block(survival_results.survival_json(i.survival, i.params))


def dose_response(i: ResultsInputs) -> Block:
    """``dose_response``: recall, paired effect and fact survival per load-ladder rung
    (analysis.estimators.dose_response)."""
    from analysis.estimators.dose_response import dose_block

    return Block(dose_block(i.package, i.params, i.survival))


def claims_audit(i: ResultsInputs) -> Block | None:
    """``claims_audit``: the audit's headline (analysis.audit.headline.audit_block), when the build ran
    the audit and handed it in."""
    return None if i.claims_audit is None else Block(i.claims_audit)


def preregistration(i: ResultsInputs) -> Block:
    """``preregistration``: the sealed plan and every deviation from it (issue 13)."""
    from analysis.plan.report_blocks import preregistration_block  # issue 13

    return Block(preregistration_block(i.package, i.params, i.panel.summary.configurations))


def design(i: ResultsInputs) -> Block | None:
    """``design``: OUT/design.json, when the build's OUT holds one (issue 13); the build reads it once,
    keys its stages on its bytes and hands it in (ResultsInputs.design)."""
    return None if i.design is None else Block(dict(i.design))
