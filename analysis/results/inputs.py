"""What the results blocks, tables and figures are computed from: the package, the params, and every
estimate they read (the paired panel, its subsets, bounds, family weighting, dependence, fill,
headings, carrier audit, failure modes, fact survival, the companion pilot's own estimates), each a
typed estimator result (frozen dataclass) computed once on first use. The build adds what only it
has: the claims-audit headline, a companion pilot, the committed fixtures and OUT/design.json.

Methods note: one ``ResultsInputs`` per package and build is the one place an estimator runs;
results.json blocks serialise its estimates (analysis.results.registry), the tables and figures
render the same objects (``ReportContext.estimates``), and nothing re-estimates from the package."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from analysis.estimators import bounds as bounds_mod
from analysis.estimators import configuration_intervals as intervals_mod
from analysis.estimators import dependence as dependence_mod
from analysis.estimators import families as families_mod
from analysis.estimators import headings as headings_mod
from analysis.estimators import paired, secondary
from analysis.estimators.common import contrast_of, json_ready, runs_frame
from analysis.estimators.dose_response import DoseResponse, package_dose_response
from analysis.estimators.failures import FailureModes, failure_modes
from analysis.estimators.registration import Block, Estimates, ResultsBlock
from analysis.estimators.survival_results import PackageSurvival, package_survival
from analysis.params import Params

if TYPE_CHECKING:
    from analysis.evidence.folds import FixtureLibrary

CONTRACT_SPARSE_K = 4
"""docs/RESULTS_CONTRACT.md names the subset ``min_pairs_4``, whatever ``Params.min_pairs`` is."""


class BlockValueError(ValueError):
    """A results block that only assembly can compute was asked for on its own; the message says where to read it."""


class ResultsInputs:
    """One package's inputs to the results blocks, with the shared estimates cached: the
    analysis.estimators.registration.Estimates that every block function reads."""

    def __init__(self, package: Any, params: Params, *, claims_audit: dict[str, Any] | None = None, pilot: Any = None,
                 pilot_path: Path | None = None, fixtures: FixtureLibrary | None = None,
                 design: Mapping[str, Any] | None = None, pointer: Any = None,
                 pointer_path: Path | None = None) -> None:
        self.package = package
        self.params = params
        self.claims_audit = claims_audit
        """The claims audit's headline block (analysis.audit.headline.audit_block), or None when the
        audit was not run. Handed in by the build: results does not import the audit (its sibling)."""
        self.pilot = pilot
        """The verified companion pilot package, or None."""
        self.pilot_path = pilot_path
        """Where the companion pilot lies (for its display path)."""
        self.pointer = pointer
        """A verified pilot the report points to without analysing it (analysis.results.pilot_pointer), or None."""
        self.pointer_path = pointer_path
        """Where that pilot lies (for its display path and the command of its own report)."""
        self.fixtures = fixtures
        """The committed fixtures (analysis.evidence.folds.load_fixture_library), loaded once by the
        build and part of its stage key; None: the survival estimator loads them itself."""
        self.design = design
        """OUT/design.json as the build read it (a declared input of its stage key), or None."""
        self.blocks: dict[str, Block | None] = {}
        """Computed results blocks by key, each computed once: analysis.results.registry.assemble fills it, and
        :meth:`block_value` adds an evidence block a table reads before (or without) assembly."""

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
    def configuration_intervals(self) -> intervals_mod.ConfigurationIntervals:
        """A t interval of each panel configuration's paired effect over its pairs (the forest plot's)."""
        s = self.study
        return intervals_mod.configuration_intervals(
            self.package.rows, intervals_mod.in_window(runs_frame(s), s.recency_cutoff), contrast_of(s),
            self.params.alpha)

    @cached_property
    def sparse_contract(self) -> paired.Subset:
        """The docs/RESULTS_CONTRACT.md ``min_pairs_4`` subset."""
        return paired.min_pairs_subset(self.panel, CONTRACT_SPARSE_K, self.params.alpha)

    @cached_property
    def equal_counts(self) -> paired.Subset:
        """The equal-valid-counts subset."""
        return paired.equal_counts_subset(self.panel, self.params.alpha)

    @cached_property
    def each_excluded(self) -> paired.EachExcluded:
        """The panel mean and median with each configuration left out in turn (``sensitivity.each_excluded``)."""
        return paired.each_excluded(self.panel)

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

    @cached_property
    def fill(self) -> secondary.FillResult:
        """Fill over the panel's runs against the paired effect (``fill``, the fill tables and figure)."""
        return secondary.fill_estimate(self.package, self.params, self.panel)

    @cached_property
    def headings(self) -> headings_mod.HeadingsAnalysis:
        """Headings tables, pooled r and within-cell fits (``headings``, ``headings_detail``, tables, figure)."""
        s = self.study
        return headings_mod.headings_analysis(self.package.rows, s.scenario, s.control, self.params)

    @cached_property
    def carrier(self) -> secondary.CarrierResult:
        """Carrier audit and ceiling adherence (``carrier_audit``, the carrier table)."""
        return secondary.carrier_estimate(self.package)

    @cached_property
    def failures(self) -> FailureModes:
        """Parse failures, invalid rows, fabrication, grader agreement (``failure_modes``, the failure tables)."""
        return failure_modes(self.package.rows, self.package.checks, self.study.scenario, self.params)

    @cached_property
    def survival(self) -> PackageSurvival:
        """Fact timeline and survival (``fact_survival``, ``dose_response``, the survival tables and figure)."""
        return package_survival(self.package, self.params, self.fixtures)

    @cached_property
    def beyond_paper(self) -> secondary.PanelInference:
        """Inference beyond the paper (``beyond_paper``: bootstrap, sign flip, GEE, design-effect intervals;
        the panel-inference and cell-interval tables)."""
        return secondary.panel_inference(self.package, self.params, self.panel, self.dependence)

    def block_value(self, block: ResultsBlock) -> Any:
        """The JSON-ready value of registered block ``block`` (an analysis.estimators.registration.ResultsBlock)
        for this package: the block results.json was assembled from when it was (``blocks``), else computed
        now from the cached estimates and kept; None when the block is left out. Evidence blocks only: the
        ``reasons`` block is made by assembly from the others, and a build block needs what only the build hands
        in (the audit, the companion's assembly), so computing one here early would keep a wrong value."""
        if block.source != "evidence" or block.key == "reasons":
            raise BlockValueError(f"{block.key!r} is assembled by analysis.results.registry.assemble, not computed "
                                  "on its own; read it from the assembled results")
        if block.key not in self.blocks:
            self.blocks[block.key] = block.compute(self)
        computed = self.blocks[block.key]
        return None if computed is None else json_ready(computed.value)

    @cached_property
    def dose_response(self) -> DoseResponse | None:
        """The dose-response over the load ladder (``dose_response``, the dose-response table and figure);
        None without a ladder."""
        return package_dose_response(self.package, self.params, self.survival)

    @cached_property
    def pilot_inputs(self) -> ResultsInputs | None:
        """The companion pilot's own estimates (same params and fixtures), or None without a pilot."""
        if self.pilot is None:
            return None
        return ResultsInputs(self.pilot, self.params, fixtures=self.fixtures)

    @cached_property
    def pilot_arms(self) -> pl.DataFrame:
        """Per-arm cells of this package as a pilot (analysis.estimators.arm_cells.pilot_arms)."""
        from analysis.estimators.arm_cells import pilot_arms

        return pilot_arms(self.package, self.params)


def _satisfies(inputs: ResultsInputs) -> Estimates:
    """Never called: mypy checks here that ResultsInputs implements the Estimates every block function reads."""
    return inputs
