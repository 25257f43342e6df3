"""The results stage of the build: assemble results.json and write it.

Methods note: results.json is analysis.results.build_results on the evidence, then the blocks
the build adds around it, in this order: ``claims_audit`` (the audit headline, when the audit
ran), ``v2_pilot`` (a companion package, when one is named), ``preregistration`` (always) and
``design`` (OUT/design.json, when the user keeps one there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.results import build_results, write_results
from analysis.results.audit_block import audit_block
from analysis.results.pilot import pilot_block


def assemble_results(package: Any, params: Any, *, audit: Any, pilot: Any, pilot_path: Path | None,
                     user_dir: Path) -> dict[str, Any]:
    """results.json as a dict: build_results plus the build's blocks (see the module note)."""
    from analysis.plan.report_blocks import design_block, preregistration_block  # issue 13

    results = build_results(package, params)
    block = audit_block(audit)
    if block is not None:
        results["claims_audit"] = block
    if pilot is not None and pilot_path is not None:
        results["v2_pilot"] = pilot_block(pilot, params, pilot_path)
    results["preregistration"] = preregistration_block(
        package, params, (results.get("panel") or {}).get("configurations"))
    if (design := design_block(user_dir)) is not None:
        results["design"] = design
    return results


def results_stage(results: dict[str, Any], out_dir: Path) -> tuple[list[Path], str, dict[str, Any]]:
    """Write OUT/results.json; returns (paths written, one-line detail, results as read back)."""
    path = out_dir / "results.json"
    write_results(results, path)
    written = json.loads(path.read_text(encoding="utf-8"))
    panel = results.get("panel") or {}
    return [path], f"results.json ({panel.get('configurations', 0)} panel configurations)", written
