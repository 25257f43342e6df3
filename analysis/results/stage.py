"""The results stage of the build: assemble results.json and write it.

Methods note: results.json is every block of analysis.results.registry: those build_results
computes from the package, then those only the build has inputs for: ``claims_audit`` (the audit
headline, when the audit ran), ``v2_pilot`` (a companion package, when one is named),
``preregistration`` (always) and ``design`` (OUT/design.json, when the user keeps one there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.results import write_results
from analysis.results.inputs import ResultsInputs
from analysis.results.registry import assemble
from analysis.safeio import read_json


def assemble_results(package: Any, params: Any, *, claims_audit: dict[str, Any] | None, pilot: Any,
                     pilot_path: Path | None, user_dir: Path) -> dict[str, Any]:
    """results.json as a dict: every block of analysis.results.registry, the build's included."""
    inputs = ResultsInputs(package, params, claims_audit=claims_audit, pilot=pilot, pilot_path=pilot_path,
                           user_dir=user_dir)
    return assemble(inputs, ("evidence", "build"))


def results_stage(results: dict[str, Any], out_dir: Path) -> tuple[list[Path], str, dict[str, Any]]:
    """Write OUT/results.json; returns (paths written, one-line detail, results as read back)."""
    path = out_dir / "results.json"
    write_results(results, path)
    written = read_json(path)
    panel = results.get("panel") or {}
    return [path], f"results.json ({panel.get('configurations', 0)} panel configurations)", written
