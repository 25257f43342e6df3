"""What a results block is: its value and its own null reasons (``Block``), its registration
(``ResultsBlock``: key, block function, JSON shape, documentation, the estimates it serialises), and what
every block function reads (``Estimates``, a Protocol that analysis.results.inputs.ResultsInputs satisfies).

Convention: every block has a block function ``<key>_block(e: Estimates) -> Block`` and, beside it in the
same module, ``<KEY>_REGISTRATION = ResultsBlock(...)``; analysis/results/registry.py lists the
registrations in results.json order. Tables and figures declare the registrations they read with
``@table(reads=...)`` (analysis.tables.declare) and ``@figure(reads=...)`` (analysis.figures.declare).
These types live with the estimators so that an estimator module can declare its own registration
(the results layer is above the estimators)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

    from analysis.estimators.bounds import PlannedRepeatBounds
    from analysis.estimators.configuration_intervals import ConfigurationIntervals
    from analysis.estimators.dependence import WithinRowDependence
    from analysis.estimators.dose_response import DoseResponse
    from analysis.estimators.failures import FailureModes
    from analysis.estimators.families import FamilyWeighted
    from analysis.estimators.headings import HeadingsAnalysis
    from analysis.estimators.paired import EachExcluded, Panel, Subset
    from analysis.estimators.secondary import CarrierResult, FillResult, PanelInference
    from analysis.estimators.survival_results import PackageSurvival
    from analysis.evidence.model import EvidencePackage, Study
    from analysis.params import Params


class RegistrationError(ValueError):
    """A results-block registration is inconsistent (an unknown estimate, one claimed twice); the message
    says which registration to fix."""


class Estimates(Protocol):
    """What a block function reads: one package's inputs and its shared estimates, each a typed estimator
    result computed once (analysis.results.inputs.ResultsInputs implements it). A new shared estimate is a
    property here and a cached property there."""

    @property
    def package(self) -> EvidencePackage:
        """The verified evidence package."""
    @property
    def params(self) -> Params:
        """The analysis params."""
    @property
    def study(self) -> Study:
        """The package's study.toml."""
    @property
    def claims_audit(self) -> Mapping[str, Any] | None:
        """The claims audit's headline block, handed in by the build (None: not run)."""
    @property
    def design(self) -> Mapping[str, Any] | None:
        """OUT/design.json as the build read it, or None."""
    @property
    def pilot_path(self) -> Path | None:
        """Where the companion pilot lies, or None."""
    @property
    def pointer(self) -> EvidencePackage | None:
        """A verified pilot the report points to without analysing it, or None."""
    @property
    def pointer_path(self) -> Path | None:
        """Where that pilot lies, or None."""
    @property
    def blocks(self) -> dict[str, Block | None]:
        """Computed results blocks by key (filled by analysis.results.registry.assemble)."""
    @property
    def panel(self) -> Panel:
        """The paired panel of the primary contrast."""
    @property
    def configuration_intervals(self) -> ConfigurationIntervals:
        """A t interval of each panel configuration's paired effect."""
    @property
    def sparse_contract(self) -> Subset:
        """The results contract's ``min_pairs_4`` subset."""
    @property
    def equal_counts(self) -> Subset:
        """The equal-valid-counts subset."""
    @property
    def each_excluded(self) -> EachExcluded:
        """The panel mean and median with each configuration left out in turn."""
    @property
    def bounds(self) -> PlannedRepeatBounds:
        """Planned-repeat bounds of the panel."""
    @property
    def families(self) -> FamilyWeighted:
        """Family-weighted summary of the panel."""
    @property
    def dependence(self) -> WithinRowDependence:
        """Within-row dependence of the checks."""
    @property
    def fill(self) -> FillResult:
        """Fill over the panel's runs against the paired effect."""
    @property
    def headings(self) -> HeadingsAnalysis:
        """Headings tables, pooled r and within-cell fits."""
    @property
    def carrier(self) -> CarrierResult:
        """Carrier audit and ceiling adherence."""
    @property
    def failures(self) -> FailureModes:
        """Parse failures, invalid rows, fabrication, grader agreement."""
    @property
    def survival(self) -> PackageSurvival:
        """Fact timeline and survival."""
    @property
    def beyond_paper(self) -> PanelInference:
        """Bootstrap, sign flip, GEE and design-effect cell intervals of the panel (ours)."""
    @property
    def dose_response(self) -> DoseResponse | None:
        """The dose-response over the load ladder (None: no ladder)."""
    @property
    def pilot_inputs(self) -> Estimates | None:
        """The companion pilot's own estimates, or None."""
    @property
    def pilot_arms(self) -> pl.DataFrame:
        """Per-arm cells of this package as a pilot."""

    def block_value(self, block: ResultsBlock) -> Any:
        """The JSON-ready value of the evidence block ``block`` for this package, computed once (None: left out)."""


ESTIMATE_NAMES: frozenset[str] = frozenset(
    name for name, member in vars(Estimates).items() if isinstance(member, property))
"""The attributes of :class:`Estimates` (what a registration's ``serialises`` may name)."""


@dataclass(frozen=True, slots=True)
class Block:
    """One computed results.json block."""

    value: Any
    """The JSON-ready value written under the block's key."""
    reasons: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Why each null statistic of the block is null: field path inside the block (``"lo"``,
    ``"effects.<configuration>.control_mean"``) -> reason. Written to results.json's top-level
    ``reasons`` as ``"<key>.<field>"`` for the blocks that list reasons there (docs/RESULTS_CONTRACT.md)."""


@dataclass(frozen=True, slots=True)
class InferenceRow:
    """One row of the panel-inference table (t_beyond_inference) that a registered statistic feeds."""

    method: str
    """Its id in the table's CSV (``method`` column)."""
    label: str
    """What the report's table calls it."""
    estimate: float | None
    """The estimate of the panel effect."""
    lo: float | None
    """Lower interval bound (None: no interval)."""
    hi: float | None
    """Upper interval bound."""
    p_value: float | None
    """Two-sided p-value (None: not a test)."""
    units: int | None
    """How many units it rests on."""
    unit: str
    """What the units are (``configurations``, ``clusters``)."""
    reason: str | None = None
    """Why its interval or test is not estimable (analysis.estimators.estimable), else None: the table then
    prints ``not estimable: <reason>`` in place of the interval or p-value the method would give."""


@dataclass(frozen=True, slots=True)
class ResultsBlock:
    """One registry entry: everything about one top-level key of results.json."""

    key: str
    """The top-level results.json key."""
    compute: Callable[[Estimates], Block | None]
    """The block function ``<key>_block(e)``: the block from the shared estimates (e.g. ``e.panel``);
    None: the key is left out (no audit ran)."""
    shape: str
    """Its JSON shape, in one line."""
    doc: str
    """Its documentation row (docs/RESULTS_KEYS.md, generated index)."""
    contract: bool = False
    """A key of the results contract docs/RESULTS_CONTRACT.md (fixed), else a documented extra."""
    source: str = "evidence"
    """``"evidence"``: computed by build_results from the package alone; ``"build"``: added by the
    build's results stage (needs the audit, a companion or OUT)."""
    serialises: tuple[str, ...] = ()
    """The :class:`Estimates` attributes this block is the results.json form of (``"bounds"``), or one field
    of one (``"bounds.per_configuration"``): a table or figure reading ``ctx.estimates.<attribute>`` reads
    this block. Each attribute belongs to one registration at most (tests/test_results_registry.py)."""
    sentence: str = ""
    """Its report sentence: a Jinja snippet rendered with the report's filters and ``s`` = the block's
    results.json value; one bullet of the key-results box (empty: none)."""
    inference_row: Callable[[Mapping[str, Any]], InferenceRow | None] | None = None
    """Its row of the panel-inference table t_beyond_inference, from the block's results.json value
    (None: it feeds no row)."""


def check_serialises(blocks: tuple[ResultsBlock, ...]) -> dict[str, str]:
    """``serialises`` of every registration as one map: attribute (or ``attribute.field``) -> block key.
    Raises RegistrationError for an attribute :class:`Estimates` lacks or one claimed by two blocks."""
    owner: dict[str, str] = {}
    for b in blocks:
        for name in b.serialises:
            if name.split(".")[0] not in ESTIMATE_NAMES:
                raise RegistrationError(
                    f"{b.key}: serialises={name!r} is no attribute of Estimates; add a property {name.split('.')[0]!r} "
                    "to analysis.estimators.registration.Estimates (and its cached property to ResultsInputs), "
                    "or fix the name")
            if name in owner:
                raise RegistrationError(f"{name!r} is serialised by both {owner[name]!r} and {b.key!r}; keep it in "
                                        "the serialises= of the block that writes it to results.json")
            owner[name] = b.key
    return owner
