"""What a table or figure builder declares: the results blocks it reads, by typed reference to their
registrations (``@table(reads=(core.PANEL_REGISTRATION, ...))``; figures: analysis.figures.declare).

The docs index's reader columns (docs/RESULTS_KEYS.md) and tests/test_results_registry.py derive every
reader list from these declarations: a builder reads a block when it reads the estimate the block serialises
(``ctx.estimates.<attribute>``, ResultsBlock.serialises) or the block's value
(``ctx.estimates.block_value(<REGISTRATION>)``), and it declares exactly those."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from analysis.estimators.registration import ResultsBlock

_Builder = TypeVar("_Builder", bound=Callable[..., Any])
_ATTRIBUTE = "declaration"


class DeclarationError(ValueError):
    """A table or figure builder lacks its declaration; decorate it with @table(reads=...) or @figure(reads=...)."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """One builder's declaration."""

    kind: str
    """``"table"`` or ``"figure"``."""
    reads: tuple[ResultsBlock, ...]
    """The registrations of the results blocks it reads."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the blocks it reads."""
        return tuple(b.key for b in self.reads)


def declare(kind: str, reads: tuple[ResultsBlock, ...]) -> Callable[[_Builder], _Builder]:
    """Attach ``Declaration(kind, reads)`` to a builder (returned unchanged)."""
    def attach(builder: _Builder) -> _Builder:
        setattr(builder, _ATTRIBUTE, Declaration(kind, tuple(reads)))
        return builder

    return attach


def table(*, reads: tuple[ResultsBlock, ...] = ()) -> Callable[[_Builder], _Builder]:
    """Declare a table builder and the registrations of the results blocks it reads."""
    return declare("table", reads)


def declaration(builder: Callable[..., Any]) -> Declaration:
    """The declaration of ``builder``; DeclarationError when it has none."""
    found = getattr(builder, _ATTRIBUTE, None)
    if not isinstance(found, Declaration):
        raise DeclarationError(f"{builder.__module__}.{builder.__qualname__} has no declaration; decorate it with "
                               "@table(reads=(...)) (analysis.tables.declare) or @figure(reads=(...)) "
                               "(analysis.figures.declare)")
    return found
