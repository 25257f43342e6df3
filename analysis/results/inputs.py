"""What the results blocks are computed from: the package, the params, and the estimates several
blocks share (the paired panel, its subsets, bounds, family weighting, dependence), each computed
once on first use. The build adds what only it has: the claims-audit headline, a companion pilot and OUT."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from analysis.estimators import bounds as bounds_mod
from analysis.estimators import dependence as dependence_mod
from analysis.estimators import families as families_mod
from analysis.estimators import paired
from analysis.estimators.common import contrast_of, runs_frame
from analysis.params import Params

CONTRACT_SPARSE_K = 4
"""docs/RESULTS_CONTRACT.md names the subset ``min_pairs_4``, whatever ``Params.min_pairs`` is."""


class ResultsInputs:
    """One package's inputs to the results blocks, with the shared estimates cached."""

    def __init__(self, package: Any, params: Params, *, claims_audit: dict[str, Any] | None = None, pilot: Any = None,
                 pilot_path: Path | None = None, user_dir: Path | None = None) -> None:
        self.package = package
        self.params = params
        self.claims_audit = claims_audit
        """The claims audit's headline block (analysis.audit.headline.audit_block), or None when the
        audit was not run. Handed in by the build: results does not import the audit (its sibling)."""
        self.pilot = pilot
        """The verified companion pilot package, or None."""
        self.pilot_path = pilot_path
        """Where the companion pilot lies (for its display path)."""
        self.user_dir = user_dir
        """The build's real OUT (design.json lives there), or None outside a build."""

    @property
    def study(self) -> Any:
        """The package's Study."""
        return self.package.study

    @cached_property
    def panel(self) -> paired.Panel:
        """The paired panel of the primary contrast."""
        s = self.study
        return paired.panel(self.package.rows, runs_frame(s), contrast_of(s),
                            recency_cutoff=s.recency_cutoff, params=self.params)

    @cached_property
    def sparse_contract(self) -> paired.Subset:
        """The docs/RESULTS_CONTRACT.md ``min_pairs_4`` subset."""
        return paired.min_pairs_subset(self.panel, CONTRACT_SPARSE_K, self.params.alpha)

    @cached_property
    def equal_counts(self) -> paired.Subset:
        """The equal-valid-counts subset."""
        return paired.equal_counts_subset(self.panel, self.params.alpha)

    @cached_property
    def bounds(self) -> bounds_mod.PlannedRepeatBounds:
        """Planned-repeat bounds of the panel."""
        return bounds_mod.planned_repeat_bounds(self.package.rows, self.panel)

    @cached_property
    def families(self) -> families_mod.FamilyWeighted:
        """Family-weighted summary of the panel."""
        return families_mod.family_weighted(self.panel.frame, self.params.alpha)

    @cached_property
    def dependence(self) -> dependence_mod.WithinRowDependence:
        """Within-row dependence of the checks on ``Params.dependence_scenario`` (default: the study's)."""
        scenario = self.params.dependence_scenario or self.study.scenario
        return dependence_mod.within_row_dependence(self.package.rows, self.package.checks, scenario)
