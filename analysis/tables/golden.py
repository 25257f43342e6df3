"""The golden files of the rendered tables (tests/golden/tables): what every table of TABLE_ORDER renders
to (Markdown and CSV), the HTML of t3_panel, and the v2 pilot table with a stand-in pilot, on one package
(the hand-made package tests/fixtures/handmade). tests/test_tables_golden.py compares against these
texts, and ``python generate.py regenerate`` (analysis.cli) rewrites them with :func:`write_golden`:
one function produces the texts for both, so a refresh writes exactly what the test checks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analysis.evidence import load_package
from analysis.results import build_results
from analysis.safeio import write_text
from analysis.tables.context import PILOT_KEY, ReportContext
from analysis.tables.pilot import v2_pilot
from analysis.tables.registry import build_tables
from analysis.tables.render import to_csv, to_html, to_markdown

HTML_GOLDEN = "t3_panel"
"""The one table whose HTML rendering has a golden file."""
PILOT_STAND_IN = "t_v2_pilot_stand_in"
"""The golden name of the v2 pilot table built with the package itself standing in for the pilot."""


def golden_texts(package: Any, results: Mapping[str, Any], params: Any) -> dict[str, str]:
    """File name -> text of every golden table file of ``package`` (its ``results``, ``params``)."""
    specs = build_tables(ReportContext(package, results, params, None, {}))
    texts: dict[str, str] = {}
    for spec in specs:
        texts[f"{spec.name}.md"] = to_markdown(spec)
        texts[f"{spec.name}.csv"] = to_csv(spec)
    texts[f"{HTML_GOLDEN}.html"] = to_html(next(s for s in specs if s.name == HTML_GOLDEN))
    pilot = v2_pilot(ReportContext(package, results, params, None, {PILOT_KEY: package}))
    texts[f"{PILOT_STAND_IN}.md"] = to_markdown(pilot)
    texts[f"{PILOT_STAND_IN}.csv"] = to_csv(pilot)
    return texts


def write_golden(evidence: Path, directory: Path, params: Any) -> list[Path]:
    """Rewrite the golden table files of the package at ``evidence`` under ``directory``; returns the paths."""
    package = load_package(evidence)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in golden_texts(package, build_results(package, params), params).items():
        path = directory / name
        write_text(path, text)
        written.append(path)
    return written
