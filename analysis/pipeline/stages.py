"""The work of each build stage, fed the build's shared inputs (analysis.pipeline.inputs.BuildInputs).

Each stage's work lives with what it produces; these adapters hand it the inputs. Heavy modules are
imported only when a stage runs.

- verify: analysis.evidence.stage (plus the report's check that its front matter can hold the path)
- results: analysis.results.stage (every block of analysis.results.registry) -> results.json
- tables: analysis.tables.registry.tables_stage -> tables/
- figures: analysis.figures.registry.figures_stage -> figures/
- report: analysis.report.stage (manuscript, Pandoc page, claims-audit copies, trajectory pages) -> report/
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analysis.pipeline.inputs import BuildInputs


def _verify(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.evidence.stage import verify_stage
    from analysis.report.stage import check_evidence_label

    package = inputs.package
    check_evidence_label(inputs.evidence_label)  # the report's YAML holds the path: refuse it now
    return verify_stage(package, inputs.evidence_label)


def _results(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.results.stage import results_stage

    return results_stage(inputs.results, inputs.out_dir)


def _tables(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.tables.registry import tables_stage

    return tables_stage(inputs.context(), inputs.out_dir)


def _figures(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.figures.registry import figures_stage

    return figures_stage(inputs.context(), inputs.out_dir)


def _report(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.report.stage import evidence_summary, report_stage

    summary = evidence_summary(inputs.package, inputs.evidence_dir)
    return report_stage(inputs.out_dir, inputs.results, inputs.params, summary, inputs.estimates)


STAGE_WORK: dict[str, Callable[[BuildInputs], tuple[list[Path], str]]] = {
    "verify": _verify, "results": _results, "tables": _tables, "figures": _figures, "report": _report}


def run_stage(stage: str, inputs: BuildInputs) -> tuple[list[Path], str]:
    """Run one stage's work on ``inputs`` (no keys, stamp, staging or lock): (paths written, detail)."""
    return STAGE_WORK[stage](inputs)
