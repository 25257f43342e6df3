"""Shared helpers of the report tests: the hand-made package, its results and a context."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results
from analysis.tables.context import ReportContext
from support.paths import HANDMADE
from support.paths import REPO as ROOT

GOLDEN = ROOT / "tests" / "golden"


@lru_cache(maxsize=1)
def handmade() -> tuple[Any, dict]:
    """The hand-made package and its results.json mapping (computed once per session)."""
    pkg = load_package(HANDMADE)
    return pkg, build_results(pkg, DEFAULT_PARAMS)


def context(package: Any = None, results: dict | None = None, params: Any = DEFAULT_PARAMS,
            extras: dict | None = None) -> ReportContext:
    """A ReportContext over the hand-made package unless another package/results is given."""
    pkg, res = handmade()
    return ReportContext(package if package is not None else pkg,
                         results if results is not None else res, params, None, extras or {})


_NOWRAP_SPAN = re.compile(r"\[((?:\\.|[^\]\\])*)\]\{\.nw\}")


def unspanned(markdown: str) -> str:
    """A table's Markdown without the ``[atom]{.nw}`` spans that keep atoms on one line (issue 34), so a test
    can read a cell as the reader sees it: ``| [0.947 (n=4)]{.nw} |`` -> ``| 0.947 (n=4) |``."""
    return _NOWRAP_SPAN.sub(r"\1", markdown)
