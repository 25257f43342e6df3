"""The results stage of the build: write results.json.

Methods note: results.json is every block of analysis.results.registry: those build_results
computes from the package, then those only the build has inputs for: ``claims_audit`` (the audit
headline, when the audit ran), ``v2_pilot`` (a companion package, when one is named),
``preregistration`` (always) and ``design`` (OUT/design.json, when the user keeps one there).
The build assembles them once (analysis.pipeline.inputs.BuildInputs.results) from the one
ResultsInputs whose estimates the tables and figures also render; this stage only writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.results import write_results


def results_stage(results: dict[str, Any], out_dir: Path) -> tuple[list[Path], str]:
    """Write OUT/results.json; returns (paths written, one-line detail)."""
    path = out_dir / "results.json"
    write_results(results, path)
    panel = results.get("panel") or {}
    n = panel.get("configurations", 0)
    return [path], f"results.json ({n} panel configuration{'' if n == 1 else 's'})"
