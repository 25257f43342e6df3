"""What a table or figure builder declares: the results blocks it reads, by typed reference to their
registrations (``@table(reads=(core.PANEL_REGISTRATION, ...))``; figures: analysis.figures.declare).

The docs index's reader columns (docs/RESULTS_KEYS.md) and tests/test_results_registry.py derive every
reader list from these declarations: a builder reads a block when it reads the estimate the block serialises
(``ctx.estimates.<attribute>``, ResultsBlock.serialises) or the block's value
(``ctx.estimates.block_value(<REGISTRATION>)``), and it declares exactly those.

A declaration also names the report section the table or figure belongs to (``section="beyond"``, one of
SECTIONS, or None: written under tables/ or figures/ only). The tables and figures stages write it into
their index.json; the report template places, at the end of each section (``section_end("<section>")``),
every table and figure of that section that it does not place by name (analysis/report/render.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args

from analysis.estimators.registration import ResultsBlock

_Builder = TypeVar("_Builder", bound=Callable[..., Any])
_ATTRIBUTE = "declaration"

Section = Literal["claims", "panel", "arms", "exploratory", "beyond", "pilot", "survival", "dose_response"]
"""A report section a table or figure belongs to: the claims audit, the primary panel, the supporting arms
and ladder, the exploratory analyses, beyond the paper (our analyses), the v2 pilot, fact survival across
folds, recall under load."""
SECTIONS: tuple[str, ...] = get_args(Section)
"""Every section, in report order; each ends with ``section_end("<section>")`` in the report templates."""


class DeclarationError(ValueError):
    """A table or figure builder lacks its declaration; decorate it with @table(reads=...) or @figure(reads=...)."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """One builder's declaration."""

    kind: str
    """``"table"`` or ``"figure"``."""
    reads: tuple[ResultsBlock, ...]
    """The registrations of the results blocks it reads."""
    section: Section | None
    """The report section it belongs to (None: written under tables/ or figures/ only, not in the report)."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the blocks it reads."""
        return tuple(b.key for b in self.reads)


def declare(kind: str, reads: tuple[ResultsBlock, ...], section: Section | None) -> Callable[[_Builder], _Builder]:
    """Attach ``Declaration(kind, reads, section)`` to a builder (returned unchanged)."""
    if section is not None and section not in SECTIONS:
        raise DeclarationError(f"section {section!r} is not a report section; use one of {', '.join(SECTIONS)} "
                               "(analysis.tables.declare.SECTIONS), or None for a table or figure outside the report")

    def attach(builder: _Builder) -> _Builder:
        setattr(builder, _ATTRIBUTE, Declaration(kind, tuple(reads), section))
        return builder

    return attach


def table(*, section: Section | None, reads: tuple[ResultsBlock, ...] = ()) -> Callable[[_Builder], _Builder]:
    """Declare a table builder: the report section it belongs to and the registrations of the results blocks
    it reads."""
    return declare("table", reads, section)


def declaration(builder: Callable[..., Any]) -> Declaration:
    """The declaration of ``builder``; DeclarationError when it has none."""
    found = getattr(builder, _ATTRIBUTE, None)
    if not isinstance(found, Declaration):
        raise DeclarationError(f"{builder.__module__}.{builder.__qualname__} has no declaration; decorate it with "
                               "@table(reads=(...)) (analysis.tables.declare) or @figure(reads=(...)) "
                               "(analysis.figures.declare)")
    return found
