"""What a results block is: its value and its own null reasons (``Block``), and its registry entry
(``ResultsBlock``: key, the function that computes it, JSON shape, documentation and readers)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from analysis.results.inputs import ResultsInputs


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


@dataclass(frozen=True, slots=True)
class ResultsBlock:
    """One registry entry: everything about one top-level key of results.json."""

    key: str
    """The top-level results.json key."""
    compute: Callable[[ResultsInputs], Block | None]
    """Computes the block (None: the key is left out, e.g. no audit ran)."""
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
    """Figure builders (analysis.figures.FIGURE_ORDER function names) that read it."""
    sentence: str = ""
    """Its report sentence: a Jinja snippet rendered with the report's filters and ``s`` = the block's
    results.json value; one bullet of the key-results box (empty: none)."""
    inference_row: Callable[[Mapping[str, Any]], InferenceRow | None] | None = None
    """Its row of the panel-inference table t_beyond_inference, from the block's results.json value
    (None: it feeds no row)."""
