"""The estimators: pure functions returning typed results (frozen dataclasses).

Compute once: an estimator (a public function of this package whose return annotation is a frozen dataclass,
or one of them or None) runs at most once per analysed package in one build (tests/test_compute_once.py finds
them all). :data:`CALLS_PER_PACKAGE` is the one place that declares an exception, with its reason."""

from __future__ import annotations

CALLS_PER_PACKAGE: dict[str, tuple[int | None, str]] = {
    "analysis.estimators.paired.panel": (
        2, "the recall panel, and fact survival's paired contrast of survival per row (another estimate)"),
    "analysis.estimators.pairing.pairing_range": (2, "the partial and the full threshold: two estimates"),
    "analysis.estimators.exact.paired_mcnemar": (
        None, "once per threshold and per compared pair (mcnemar, mcnemar_secondary): different estimates"),
    "analysis.estimators.exact.counts": (None, "a building block: the 2x2 counts of each McNemar test"),
    "analysis.estimators.paired.summarize": (None, "a building block: the summary of each subset of the panel"),
    "analysis.estimators.paired.subset": (None, "a building block: each named subset of the panel"),
    "analysis.estimators.paired.min_pairs_subset": (
        None, "the contract's min_pairs_4 and the Params min_pairs subset: two populations"),
    "analysis.estimators.correlation.correlation": (None, "a building block: each correlation of fill"),
    "analysis.estimators.headings.headings_table": (None, "a building block: the all-arm and single-field tables"),
    "analysis.estimators.headings.within_cell": (None, "a building block: each arm selection's within-cell fit"),
    "analysis.estimators.cells.cell_summary": (None, "a building block: the cells of each block that shows them"),
    "analysis.estimators.common.contrast_of": (None, "reads the study's contrast, no estimate"),
}
"""Estimator (dotted name) -> (calls per package, or None: a building block called once per input, why)."""
