"""Analysis, audit and runner for Partitioned versus Undivided Compaction Carriers.

The public API (analysis.api, documented in docs/API.md): ``verify``, ``load``, ``analyse`` and one
call per statistic of the paper. They are imported on first use (PEP 562), so ``import analysis``
and the command line stay light.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from analysis.version import __version__

if TYPE_CHECKING:
    from analysis.api import (
        ApiError,
        ClaimsAudit,
        Estimate,
        NotAPackageError,
        Results,
        UnknownTableError,
        V2Plan,
        analyse,
        claims_audit,
        family_weighted,
        fill,
        heading_slopes,
        load,
        mcnemar,
        paired_effect,
        plan_v2,
        repeat_bounds,
        report,
        survival,
        verify,
        within_row_icc,
    )

__all__ = [
    "ApiError",
    "ClaimsAudit",
    "Estimate",
    "NotAPackageError",
    "Results",
    "UnknownTableError",
    "V2Plan",
    "__version__",
    "analyse",
    "claims_audit",
    "family_weighted",
    "fill",
    "heading_slopes",
    "load",
    "mcnemar",
    "paired_effect",
    "plan_v2",
    "repeat_bounds",
    "report",
    "survival",
    "verify",
    "within_row_icc",
]


class _Analysis(types.ModuleType):
    """The package's module type: ``analysis.report`` is always the public function.

    The subpackage ``analysis/report/`` shares the name; importing it makes the import system set the
    attribute ``analysis.report`` to the module, which would shadow the function after its first call. The
    property ignores that assignment (the subpackage stays in sys.modules, so ``from analysis.report import
    ...`` and ``import analysis.report.render`` keep working)."""

    @property
    def report(self) -> Any:
        from analysis.api import report

        return report

    @report.setter
    def report(self, value: Any) -> None:  # set by the import system to the subpackage: not the public name
        pass


sys.modules[__name__].__class__ = _Analysis


def __getattr__(name: str) -> Any:
    """The public API's names, imported from analysis.api on first use."""
    if name in __all__:
        from analysis import api

        return getattr(api, name)
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
