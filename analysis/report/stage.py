"""The report stage of the build: the manuscript, its offline page, the claims-audit copies and the
trajectory pages under OUT/report.

Methods note: the report reads results.json as the build assembled it, what earlier stages wrote (the
table and figure indexes), and the build's estimates for the trajectory pages (the packages' fact
survival, computed once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.evidence.describe import display_path, evidence_kind
from analysis.safeio import read_bytes, write_bytes

DETAIL = "report/index.qmd, report/_quarto.yml, report/index.html (Pandoc)"
"""The progress line's detail for what every report stage writes; report_detail adds what it wrote besides."""


def report_detail(paths: list[Path]) -> str:
    """The report stage's progress detail: the files every build writes, then the claims-audit copies and
    the trajectory pages only when this build wrote them."""
    names = {p.name for p in paths}
    extra = [*(["report/claims_audit.*"] if any(n.startswith("claims_audit.") for n in names) else []),
             *sorted(f"report/{n}" for n in names if n.startswith("trajectories"))]
    return ", ".join([DETAIL, *extra])


def check_evidence_label(label: str) -> None:
    """Refuse, before anything is written, an evidence path the report's YAML front matter cannot hold."""
    from analysis.report.render import front_matter

    front_matter(label)


def evidence_summary(package: Any, evidence_dir: Path) -> dict[str, Any]:
    """What the report says about the evidence: path, kind, study name and counts."""
    return {"path": display_path(evidence_dir).as_posix(), "kind": evidence_kind(package),
            "study_name": package.study.name, "rows": package.rows.height,
            "valid_rows": int(package.rows.get_column("valid").sum()), "checks": package.checks.height,
            "configurations": len(package.study.configurations)}


def trajectory_pages(directory: Path, estimates: Any) -> list[Path]:
    """report/trajectories.html (the evidence) and trajectories-v2-pilot.html (the pilot beside it), each
    only for a package with folds.jsonl (without it there is nothing to show: no page is written).

    ``estimates``: the build's analysis.results.inputs.ResultsInputs (its fact survival, and its
    companion pilot's, computed once for results.json and the tables)."""
    from analysis.viewer.trajectories import write_trajectory_pages

    pages = []
    package, pilot = estimates.package, estimates.pilot_inputs
    if package.folds is not None:  # a package without folds.jsonl has no trajectories to show
        label = ("simulated, planted truth" if getattr(package.study, "kind", None) == "simulation"
                 else "this evidence")  # issue 35: the viewer's title says a simulation is one
        pages.append(("trajectories.html", package, estimates.survival, label))
    if pilot is not None and pilot.package.folds is not None:
        pages.append(("trajectories-v2-pilot.html", pilot.package, pilot.survival, "v2 pilot"))
    return write_trajectory_pages(directory, pages)


def report_stage(out_dir: Path, results: dict[str, Any], params: Any, summary: dict[str, Any],
                 estimates: Any) -> tuple[list[Path], str]:
    """Render report/_quarto.yml, report/index.qmd and the offline report/index.html (Pandoc), copy the
    claims audit beside them and write the trajectory pages. Returns (paths, detail)."""
    from analysis.report.render import write_report

    directory = out_dir / "report"
    paths = write_report(out_dir, results, params, summary)
    # The claims audit also lives beside the manuscript (CSV and Markdown), as the audit issue asks.
    for suffix in (".csv", ".md"):
        source = out_dir / "tables" / f"t_claims_audit{suffix}"
        if source.is_file():
            target = directory / f"claims_audit{suffix}"
            write_bytes(target, read_bytes(source))
            paths.append(target)
    # Each table's CSV beside the manuscript, where its "csv" link points (issue 33; a Quarto resource too).
    csvs = sorted((out_dir / "tables").glob("*.csv"))
    if csvs:
        (directory / "tables").mkdir(parents=True, exist_ok=True)
    for source in csvs:
        target = directory / "tables" / source.name
        write_bytes(target, read_bytes(source))
        paths.append(target)
    paths += trajectory_pages(directory, estimates)
    return paths, report_detail(paths)
