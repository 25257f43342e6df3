"""What every table and figure builder reads: the package, the computed results, the params.

Methods note: builders are pure functions of a ``ReportContext``; descriptive cells (means
with their row counts, ``cell_stats``) are computed from valid rows with an outcome, the single
validity rule of the evidence format, selected by the estimators' population filter
(analysis.estimators.common.valid_outcome_rows). Inferential statistics come from ``estimates``, the
estimator results the results stage computed once (analysis.results.inputs.ResultsInputs), the
same objects results.json serialises: never recomputed here, and no builder reads ``results``
(tests/test_compute_once.py checks both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.results.inputs import ResultsInputs

PILOT_KEY = "v2_pilot"
"""Name of the companion pilot package in ReportContext.extras."""


@dataclass(frozen=True)
class ReportContext:
    """Inputs of every table, figure and report builder."""

    package: Any
    """The loaded EvidencePackage (analysis.evidence.load_package)."""
    results: Mapping[str, Any]
    """The results.json mapping (analysis.results.build_results), JSON-ready: for the report and other callers;
    the table and figure builders read ``estimates`` instead."""
    params: Any
    """The analysis Params passed down to every estimator."""
    audit: Any = None
    """AuditResult of the claims audit (analysis.audit.audit_claims), or None when not run."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Named extra inputs (e.g. the v2 pilot package), empty by default."""
    estimates: ResultsInputs = None  # type: ignore[assignment]  # filled in __post_init__ when not given
    """The typed estimates of the package (and of the pilot in ``extras``), each computed once: the
    build hands in the ResultsInputs that results.json was assembled from; without one, a fresh
    ResultsInputs of ``package`` computes each estimate on first use."""

    def __post_init__(self) -> None:
        if self.estimates is None:
            pilot = (self.extras or {}).get(PILOT_KEY)
            object.__setattr__(self, "estimates", ResultsInputs(self.package, self.params, pilot=pilot))

    @property
    def study(self) -> Any:
        """The package's Study."""
        return self.package.study

    @property
    def rows(self) -> pl.DataFrame:
        """All rows of the package."""
        return self.package.rows

    @property
    def threshold(self) -> float:
        """The operational recall threshold (Params.threshold_partial, paper 0.5)."""
        return float(getattr(self.params, "threshold_partial", 0.5))


def cell_stats(df: pl.DataFrame, by: Sequence[str], threshold: float) -> pl.DataFrame:
    """Per cell of ``by``: rows, mean recall, rows at or above ``threshold``, rows at full recall."""
    return (
        df.group_by(list(by))
        .agg(
            pl.len().alias("rows"),
            pl.col("recall").mean().alias("mean"),
            (pl.col("recall") >= threshold).sum().cast(pl.Int64).alias("rows_at_threshold"),
            (pl.col("recall") >= 1.0).sum().cast(pl.Int64).alias("rows_full"),
        )
        .sort(list(by))
    )


def section(results: Mapping[str, Any], *path: str) -> Any:
    """``results[a][b]...`` or None when any key is absent (a key the evidence cannot fill)."""
    node: Any = results
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def sparse_block(results: Mapping[str, Any], params: Any) -> tuple[int, Mapping[str, Any]]:
    """(k, results.sparse.min_pairs_k): the params' k when results carry it, else the k they carry."""
    sparse = section(results, "sparse") or {}
    want = int(getattr(params, "min_pairs", 4))
    if f"min_pairs_{want}" in sparse:
        return want, sparse[f"min_pairs_{want}"]
    for key in sorted(sparse):
        if key.startswith("min_pairs_") and key[len("min_pairs_"):].isdigit():
            return int(key[len("min_pairs_"):]), sparse[key]
    return want, {}
