"""The work of each build stage (analysis.build decides which stages run).

Methods note: each stage method returns (paths written, one-line detail). Inputs are loaded
lazily and at most once: the package (verified before parsing), results.json (computed, or
read back when the results stage was skipped) and the claims audit.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from typing import Any

from analysis.evidence import load_package
from analysis.evidence.schema import extra_column

REPO = Path(__file__).resolve().parents[2]


def display_path(path: Path) -> Path:
    """How outputs name ``path``: relative to the repository when inside it, else to the working
    directory when below it, else as given. Outputs then do not depend on where the build ran."""
    resolved = Path(path).resolve()
    for base in (REPO, Path.cwd()):
        try:
            return resolved.relative_to(base)
        except ValueError:
            continue
    return Path(path)


def evidence_kind(path: Path) -> str:
    """'v1', 'v2-pilot', 'handmade' or 'other', by where the package lives in the repository."""
    from analysis import build

    known = {REPO / "data" / "v1": "v1", build.PILOT_DIR.resolve(): "v2-pilot",
             REPO / "tests" / "fixtures" / "handmade": "handmade"}
    return known.get(path.resolve(), "other")


def runner_table(root: Path) -> dict[str, Any] | None:
    """The [runner] table of a package's study.toml (the runner's pins and request shape), or None.

    Call only on a package that load_package verified: study.toml is one of its locked files.
    """
    import tomllib

    from analysis.evidence import EvidenceError, read_evidence_file

    try:  # the evidence file rules again: the file could have been swapped since it was verified
        doc = tomllib.loads(read_evidence_file(root, "study.toml").decode("utf-8"))
    except (OSError, ValueError, RecursionError, EvidenceError):
        return None
    runner = doc.get("runner")
    if not isinstance(runner, dict) or not runner:
        return None
    return {str(k): v for k, v in sorted(runner.items()) if isinstance(v, dict)} or None


class Pipeline:
    """One build's state: evidence, params, OUT, and the lazily loaded inputs."""

    def __init__(self, evidence_dir: Path, out_dir: Path, params: Any, *, claims_path: Path,
                 user_dir: Path | None = None) -> None:
        self.evidence_dir = Path(evidence_dir)
        self.evidence_label = display_path(self.evidence_dir).as_posix()
        self.out_dir = Path(out_dir)
        self.user_dir = Path(user_dir) if user_dir is not None else self.out_dir
        """The real OUT (the stages write into a staging dir): inputs the user keeps there, e.g. design.json."""
        self.params = params
        self.claims_path = claims_path
        self._package: Any = None
        self._results: dict[str, Any] | None = None
        self._audit: Any = None
        self._audit_done = False
        self._tables: Any = None
        self._pilot: Any = None
        self._pilot_done = False

    # ---------------------------------------------------------------- lazy inputs
    @property
    def package(self) -> Any:
        """The verified EvidencePackage."""
        if self._package is None:
            self._package = load_package(self.evidence_dir)
        return self._package

    @property
    def results(self) -> dict[str, Any]:
        """results.json: computed by the results stage, else read from OUT."""
        if self._results is None:
            path = self.out_dir / "results.json"
            self._results = json.loads(path.read_text(encoding="utf-8"))
        return self._results

    @property
    def pilot_package(self) -> Any:
        """The verified v2 pilot package (data/v2/pilot), or None when absent or itself the evidence."""
        if not self._pilot_done:
            self._pilot_done = True
            from analysis import build

            pilot = build.PILOT_DIR
            if (pilot / "provenance.lock").is_file() and evidence_kind(self.evidence_dir) != "v2-pilot":
                self._pilot = load_package(pilot)  # verifies the lock before parsing
        return self._pilot

    @property
    def audit(self) -> Any:
        """The claims audit (analysis.audit.audit_claims) of the v1 evidence, else None.

        The audit compares the paper's printed numbers with values computed from the package, which
        is meaningful for the v1 reconstruction only; other packages (the hand-made fixture, a v2
        run) measure something else, and the report says that the audit was not run for them.
        """
        if not self._audit_done:
            self._audit_done = True
            if evidence_kind(Path(self.evidence_dir)) != "v1":
                return None
            if self.claims_path.is_file() and importlib.util.find_spec("analysis.audit") is not None:
                audit_mod = importlib.import_module("analysis.audit")
                if not hasattr(audit_mod, "audit_claims"):  # the function lives in a submodule
                    audit_mod = importlib.import_module("analysis.audit.claims_audit")
                claims_mod = importlib.import_module("analysis.reconstruct.claims")
                claims = claims_mod.load_claims(self.claims_path)
                self._audit = audit_mod.audit_claims(self.package, claims, self.params)
        return self._audit

    def context(self) -> Any:
        """The ReportContext every table and figure builder reads."""
        from analysis.tables.context import ReportContext

        from analysis.tables.pilot import PILOT_KEY

        pilot = self.pilot_package
        extras = {} if pilot is None else {PILOT_KEY: pilot}
        return ReportContext(self.package, self.results, self.params, self.audit, extras)

    def evidence_summary(self) -> dict[str, Any]:
        """What the report says about the evidence: path, kind, study name and counts."""
        pkg = self.package
        return {"path": self.evidence_label, "kind": evidence_kind(self.evidence_dir),
                "study_name": pkg.study.name, "rows": pkg.rows.height,
                "valid_rows": int(pkg.rows.get_column("valid").sum()), "checks": pkg.checks.height,
                "configurations": len(pkg.study.configurations)}

    def pilot_block(self) -> dict[str, Any] | None:
        """The v2 pilot (data/v2/pilot) through the same estimators, when it exists and is not the evidence.

        Paired effect, planned-repeat bounds and exact McNemar come from analysis.results.build_results
        on the pilot package; the per-arm cells from analysis.tables.pilot.pilot_arms (the t_v2_pilot
        table's data); the endpoint provenance from the [runner] table of its (locked) study.toml.
        """
        pkg = self.pilot_package
        if pkg is None:
            return None
        from analysis import build
        from analysis.estimators.common import json_ready
        from analysis.results import build_results
        from analysis.tables.pilot import pilot_arms

        res = build_results(pkg, self.params)
        keep = ("configurations", "mean", "median", "min", "max", "positive", "negative", "zero", "effects")
        arms = pilot_arms(pkg, self.params)
        served = None
        if extra_column("served_models") in pkg.rows.columns:  # a runner extra column of rows.csv
            served = sorted(pkg.rows.get_column(extra_column("served_models")).drop_nulls().unique().to_list())
        return {"path": display_path(build.PILOT_DIR).as_posix(), "study_name": pkg.study.name,
                "evidence": res.get("evidence"), "contrast": res.get("contrast"),
                "rows": pkg.rows.height, "valid_rows": int(pkg.rows.get_column("valid").fill_null(False).sum()),
                "panel": {k: (res.get("panel") or {}).get(k) for k in keep},
                "bounds": res.get("bounds"),
                "mcnemar": (res.get("mcnemar") or {}).get("partial"),
                "arms": json_ready(arms),
                "identical_repeats": bool(arms.height) and bool(
                    (arms.get_column("distinct_answers") == 1).all()
                    and (arms.get_column("repeats") > 1).all()),
                "checks_passed": int(arms.get_column("checks_passed").sum()),
                "checks": int(arms.get_column("checks").sum()),
                "carrier_values": int(arms.get_column("carrier_values").sum()),
                "audited_checks": int(arms.get_column("audited_checks").sum()),
                "served_models": served, "runner": json_ready(runner_table(pkg.root)),
                "fact_survival": res.get("fact_survival")}

    # ---------------------------------------------------------------- stages
    def stage_verify(self) -> tuple[list[Path], str]:
        """Verify the provenance lock, then parse and validate the package."""
        pkg = self.package
        from analysis.report.render import front_matter

        front_matter(self.evidence_label)  # the report's YAML holds the path: refuse it now, not after writing
        return [], (f"{self.evidence_label}: {len(pkg.digests)} locked files verified, "
                    f"{pkg.rows.height} rows, {pkg.checks.height} checks")

    def stage_results(self) -> tuple[list[Path], str]:
        """Compute results.json (analysis.results.build_results) plus the claims-audit headline."""
        from analysis.report.audit_block import audit_block
        from analysis.results import build_results, write_results

        results = build_results(self.package, self.params)
        block = audit_block(self.audit)
        if block is not None:
            results["claims_audit"] = block
        pilot = self.pilot_block()
        if pilot is not None:
            results["v2_pilot"] = pilot
        from analysis.plan.report_blocks import design_block, preregistration_block  # issue 13
        results["preregistration"] = preregistration_block(
            self.package, self.params, (results.get("panel") or {}).get("configurations"))
        if (design := design_block(self.user_dir)) is not None:
            results["design"] = design
        path = self.out_dir / "results.json"
        write_results(results, path)
        self._results = json.loads(path.read_text(encoding="utf-8"))
        panel = results.get("panel") or {}
        return [path], f"results.json ({panel.get('configurations', 0)} panel configurations)"

    def stage_tables(self) -> tuple[list[Path], str]:
        """Build every table; write CSV, Markdown and HTML under OUT/tables."""
        from analysis.tables.registry import build_tables, write_tables

        self._tables = build_tables(self.context())
        directory = self.out_dir / "tables"
        paths = write_tables(self._tables, directory)
        empty = sum(1 for t in self._tables if t.is_empty)
        return paths, f"{len(self._tables)} tables ({empty} not in this evidence)"

    def stage_figures(self) -> tuple[list[Path], str]:
        """Draw every figure; write PNG and SVG under OUT/figures."""
        from analysis.figures.registry import build_figures, write_figures

        directory = self.out_dir / "figures"
        paths = write_figures(build_figures(self.context()), directory)
        return paths, f"{(len(paths) - 1) // 2} figures (PNG and SVG)"

    def stage_report(self) -> tuple[list[Path], str]:
        """Render report/_quarto.yml, report/index.qmd and the offline report/index.html (Pandoc)."""
        from analysis.report.render import write_report

        directory = self.out_dir / "report"
        paths = write_report(self.out_dir, self.results, self.params, self.evidence_summary())
        # The claims audit also lives beside the manuscript (CSV and Markdown), as the audit issue asks.
        for suffix in (".csv", ".md"):
            source = self.out_dir / "tables" / f"t_claims_audit{suffix}"
            if source.is_file():
                target = directory / f"claims_audit{suffix}"
                target.write_bytes(source.read_bytes())
                paths.append(target)
        paths += self.trajectory_pages(directory)
        return paths, ("report/index.qmd, report/_quarto.yml, report/index.html (Pandoc), report/claims_audit.*, "
                       "report/trajectories*.html")

    def trajectory_pages(self, directory: Path) -> list[Path]:
        """report/trajectories.html (the evidence) and trajectories-v2-pilot.html (the pilot beside it)."""
        from analysis.tables.survival import survival_of
        from analysis.viewer.trajectories import write_trajectory_pages

        pages = [("trajectories.html", self.package, survival_of(self.package, self.params), "this evidence")]
        if self.pilot_package is not None:
            pilot = self.pilot_package
            pages.append(("trajectories-v2-pilot.html", pilot, survival_of(pilot, self.params), "v2 pilot"))
        return write_trajectory_pages(directory, pages)

