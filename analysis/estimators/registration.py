"""What a results block is: its value and its own null reasons (``Block``), and its registration
(``ResultsBlock``: key, the function that computes it, JSON shape, documentation and readers).

Every results block's registration lives where the block is computed, as a module constant beside its
block function: ``REGISTRATION = ResultsBlock(...)`` in a module that registers one block (e.g.
analysis.estimators.hodges_lehmann, analysis.results.pilot), ``<KEY>_REGISTRATION`` in one that registers
several (analysis.results.core, analysis.results.extras, analysis.estimators.secondary_results). Only the
``reasons`` placeholder is declared in analysis/results/registry.py, which computes it.
analysis/results/registry.py lists the registrations by plain reference in RESULTS_BLOCKS, in results.json
order, and checks them (one key once); tests/test_results_registry.py fails for a registration declared
away from its block function. These types live with the estimators so that an estimator module can declare
its own registration (the results layer is above the estimators)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

_Compute = TypeVar("_Compute", bound=Callable[..., Any])


class RegistrationError(ValueError):
    """A results-block registration is declared away from its block function; move it beside that function."""


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
    compute: Callable[[Any], Block | None]
    """Computes the block from the shared estimates, an analysis.results.inputs.ResultsInputs (typed Any here:
    the results layer is above this module), e.g. ``inputs.panel``; None: the key is left out (no audit ran)."""
    shape: str
    """Its JSON shape, in one line."""
    doc: str
    """Its documentation row (docs/RESULTS_KEYS.md, generated index)."""
    contract: bool = False
    """A key of the results contract docs/RESULTS_CONTRACT.md (fixed), else a documented extra."""
    source: str = "evidence"
    """``"evidence"``: computed by build_results from the package alone; ``"build"``: added by the
    build's results stage (needs the audit, a companion or OUT)."""
    tables: tuple[str, ...] = ()
    """Table builders (analysis.tables.registry.TABLE_ORDER function names) that read it: its results.json
    value, or the typed estimate it serialises (``ReportContext.estimates``)."""
    figures: tuple[str, ...] = ()
    """Figure builders (analysis.figures.registry.FIGURE_ORDER function names) that read it."""
    sentence: str = ""
    """Its report sentence: a Jinja snippet rendered with the report's filters and ``s`` = the block's
    results.json value; one bullet of the key-results box (empty: none)."""
    inference_row: Callable[[Mapping[str, Any]], InferenceRow | None] | None = None
    """Its row of the panel-inference table t_beyond_inference, from the block's results.json value
    (None: it feeds no row)."""


def indexed_as(fn: Callable[..., Any]) -> Callable[[_Compute], _Compute]:
    """Decorator of a block's adapter ``compute(inputs)``: it serialises the block function ``fn`` of the same
    module (from the shared estimates, not by calling ``fn``), and the docs index (docs/RESULTS_KEYS.md,
    "computed by") names ``fn``. Renames the adapter after ``fn``; its code stays where it is defined, so
    ``__code__.co_filename`` still says where (tests/test_results_registry.py reads it)."""

    def rename(compute: _Compute) -> _Compute:
        if compute.__module__ != fn.__module__:
            raise RegistrationError(
                f"the adapter {compute.__module__}.{compute.__qualname__} is indexed as "
                f"{fn.__module__}.{fn.__qualname__}, another module's function; define it in {fn.__module__}")
        compute.__name__ = compute.__qualname__ = fn.__name__
        compute.__doc__ = fn.__doc__
        return compute

    return rename
