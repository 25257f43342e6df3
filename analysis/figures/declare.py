"""A figure builder's declaration: ``@figure(reads=(core.PANEL_REGISTRATION, ...))``, the results blocks it
reads by typed reference to their registrations, and its report section (the same Declaration as a table's,
analysis.tables.declare)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from analysis.estimators.registration import ResultsBlock
from analysis.tables.declare import Section, declare

_Builder = TypeVar("_Builder", bound=Callable[..., Any])


def figure(*, section: Section | None, reads: tuple[ResultsBlock, ...] = ()) -> Callable[[_Builder], _Builder]:
    """Declare a figure builder: the report section it belongs to and the registrations of the results blocks
    it reads."""
    return declare("figure", reads, section)
