"""Assemble results.json: the RESULTS.md contract keys plus documented extras.

`build_results(package, params)` runs every core estimator on a loaded evidence
package and returns a JSON-ready dict: the keys of RESULTS.md exactly (counts as
ints, floats at full precision, `None` for undefined statistics), then the extra
keys documented in docs/RESULTS_KEYS.md. It does no file work except hashing the
analysis sources for `provenance.code_sha256`; `write_results` is the one writer.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import analysis
from analysis.estimators import bounds as bounds_mod
from analysis.estimators import cells as cells_mod
from analysis.estimators import dependence as dependence_mod
from analysis.estimators import exact as exact_mod
from analysis.estimators import families as families_mod
from analysis.estimators import paired
from analysis.estimators import survival_results
from analysis.estimators.common import EstimatorError, contrast_of, json_ready, runs_frame
from analysis.params import Params

RESULTS_VERSION = 1
CONTRACT_SPARSE_K = 4   # RESULTS.md names the subset `min_pairs_4`
CORE_KEYS = ("evidence", "panel", "sparse", "bounds", "families", "dependence", "headings")


class ResultsKeyCollisionError(EstimatorError):
    """An extension returned a results.json key that build_results already writes."""


def _summary_block(s: paired.PanelSummary) -> dict[str, Any]:
    keys = ("configurations", "mean", "median", "q1", "q3", "min", "max", "positive",
            "negative", "zero", "loo_min", "loo_max", "dispersion_lo", "dispersion_hi")
    return {k: getattr(s, k) for k in keys}


def _panel_block(p: paired.Panel) -> dict[str, Any]:
    block = _summary_block(p.summary)
    block["effects"] = {
        e.configuration: {"effect": e.effect, "pairs": e.pairs, "control_rows": e.control_rows,
                          "treatment_rows": e.treatment_rows, "control_mean": e.control_mean,
                          "treatment_mean": e.treatment_mean}
        for e in p.effects}
    return block


def _subset_block(s: paired.Subset, full: bool = False) -> dict[str, Any]:
    if not full:
        return {"configurations": s.summary.configurations, "mean": s.summary.mean,
                "median": s.summary.median}
    return {"rule": s.rule, **_summary_block(s.summary), "members": list(s.configurations),
            "reasons": dict(s.summary.reasons)}


def _mcnemar_block(r: exact_mod.McNemarResult) -> dict[str, Any]:
    return json_ready(r)


def _reasons(prefix: str, reasons: Mapping[str, str], out: dict[str, str]) -> None:
    for field, why in reasons.items():
        out[f"{prefix}.{field}"] = why


def provenance(params: Params) -> dict[str, Any]:
    """Package version, a digest of the code that computed the results, library versions and
    params. No paths (outputs must not depend on where the evidence lies; its digests are under
    `evidence`) and no git commit: a committed results.json must rebuild byte for byte in any
    clone, and committing it would move the commit it names."""
    import scipy
    import statsmodels

    from analysis.sources import source_digest

    return {
        "results_version": RESULTS_VERSION,
        "package": "compaction-carriers",
        "version": analysis.__version__,
        "code_sha256": source_digest("results"),
        "python": platform.python_version(),
        "libraries": {"polars": pl.__version__, "numpy": np.__version__,
                      "scipy": scipy.__version__, "statsmodels": statsmodels.__version__,
                      **_output_library_versions()},
        "params": params.to_dict(),
    }


OUTPUT_LIBRARIES: tuple[str, ...] = ("matplotlib", "great_tables", "jinja2", "pypandoc_binary")
"""Libraries that shape the bytes of the tables, figures and report (recorded, not imported)."""


def _output_library_versions() -> dict[str, str | None]:
    """Installed versions of OUTPUT_LIBRARIES from package metadata (None when absent)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in OUTPUT_LIBRARIES:
        try:
            versions[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _headings_block(package: Any, params: Params) -> dict[str, Any] | None:
    """The RESULTS.md `headings` block (analysis.estimators.secondary_results), or None if absent."""
    if importlib.util.find_spec("analysis.estimators.secondary_results") is not None:
        module = importlib.import_module("analysis.estimators.secondary_results")
        if hasattr(module, "headings_block"):
            return dict(module.headings_block(package, params))
    if importlib.util.find_spec("analysis.estimators.headings") is None:
        return None
    headings = importlib.import_module("analysis.estimators.headings")
    study = package.study
    h = headings.headings_analysis(package.rows, study.scenario, study.control, params)
    w = h.within_all
    return {"pooled_r": h.pooled.r, "rows": h.pooled.rows,
            "within_cell": {"cells": w.cells, "rows": w.rows, "slope": w.slope, "r": w.r}}


def _secondary_block(package: Any, params: Params) -> dict[str, Any]:
    if importlib.util.find_spec("analysis.estimators.secondary_results") is None:
        return {}
    module = importlib.import_module("analysis.estimators.secondary_results")
    return dict(module.secondary_results(package, params))


def build_results(package: Any, params: Params) -> dict[str, Any]:
    """Every RESULTS.md key of `package` (an EvidencePackage), plus the documented extras."""
    study = package.study
    rows, checks = package.rows, package.checks
    contrast = contrast_of(study)
    runs = runs_frame(study)
    p = paired.panel(rows, runs, contrast, recency_cutoff=study.recency_cutoff, params=params)
    alpha = params.alpha
    sparse_k = paired.min_pairs_subset(p, CONTRACT_SPARSE_K, alpha)
    equal = paired.equal_counts_subset(p, alpha)
    bnd = bounds_mod.planned_repeat_bounds(rows, p)
    fam = families_mod.family_weighted(p.frame, alpha)
    dep_scenario = params.dependence_scenario or study.scenario
    dep = dependence_mod.within_row_dependence(rows, checks, dep_scenario)

    results: dict[str, Any] = {
        "evidence": {"sha256": {name: package.digests[name] for name in sorted(package.digests)}},
        "panel": _panel_block(p),
        "sparse": {f"min_pairs_{CONTRACT_SPARSE_K}": _subset_block(sparse_k),
                   "equal_counts": _subset_block(equal)},
        "bounds": {"lo": bnd.lo, "hi": bnd.hi},
        "families": {"families": fam.families, "mean": fam.mean, "lofo_min": fam.lofo_min,
                     "lofo_max": fam.lofo_max, "dispersion_lo": fam.dispersion_lo,
                     "dispersion_hi": fam.dispersion_hi},
        "dependence": {"scenario": dep.scenario, "rows": dep.rows,
                       "checks_per_row": dep.checks_per_row, "icc": dep.icc,
                       "design_effect": dep.design_effect, "effective_per_row": dep.effective_per_row},
    }
    headings = _headings_block(package, params)
    if headings is not None:
        results["headings"] = headings
    results.update(_extras(package, params, p, bnd, fam, dep))
    secondary = _secondary_block(package, params)
    clash = sorted(set(secondary) & set(results))
    if clash:
        raise ResultsKeyCollisionError(
            f"secondary_results returned key(s) {clash} that build_results already writes; "
            "rename them in analysis/estimators/secondary_results.py")
    results.update(secondary)
    results["fact_survival"] = survival_results.survival_block(package, params)  # folds.jsonl (issue 14)
    return json_ready(results)


def _extras(package: Any, params: Params, p: paired.Panel, bnd: bounds_mod.PlannedRepeatBounds,
            fam: families_mod.FamilyWeighted,
            dep: dependence_mod.WithinRowDependence) -> dict[str, Any]:
    study, rows, alpha = package.study, package.rows, params.alpha
    runs = runs_frame(study)
    in_window = runs.filter(pl.col("published") >= study.recency_cutoff)
    members = set(p.frame.get_column("configuration"))
    sens: dict[str, Any] = {}
    k = params.min_pairs
    sens[f"min_pairs_{k}"] = _subset_block(paired.min_pairs_subset(p, k, alpha), full=True)
    sens["equal_counts"] = _subset_block(paired.equal_counts_subset(p, alpha), full=True)
    if params.excluded_configurations:
        sens["excluded"] = _subset_block(
            paired.excluded_subset(p, params.excluded_configurations, alpha), full=True)
    each = paired.each_excluded(p)
    sens["each_excluded"] = {
        name: {"configurations": each.remaining, "mean": float(m), "median": float(md)}
        for name, m, md in zip(each.configurations, each.mean, each.median, strict=True)}

    panel_runs = p.frame.select("configuration", "execution_group")
    mcnemar = {
        tag: _mcnemar_block(exact_mod.paired_mcnemar(
            rows, study.control, study.treatment, scenario=study.scenario, threshold=thr,
            runs=panel_runs))
        for tag, thr in (("partial", params.threshold_partial), ("full", params.threshold_full))}

    secondary = {}
    for first, second in params.secondary_pairs:
        both_planned = exact_mod.runs_planning_both(rows, first, second, scenario=study.scenario)
        secondary[f"{first}_vs_{second}"] = {
            "runs": [f"{c} {g}" for c, g in both_planned.iter_rows()],
            **{tag: _mcnemar_block(exact_mod.paired_mcnemar(rows, first, second, scenario=study.scenario,
                                                            threshold=thr, runs=both_planned))
               for tag, thr in (("partial", params.threshold_partial), ("full", params.threshold_full))}}

    reasons: dict[str, str] = {}
    _reasons("panel", p.summary.reasons, reasons)
    _reasons("bounds", bnd.reasons, reasons)
    _reasons("families", fam.reasons, reasons)
    _reasons("dependence", dep.reasons, reasons)
    for name, s in (("sparse.min_pairs_4", paired.min_pairs_subset(p, CONTRACT_SPARSE_K, alpha)),
                    ("sparse.equal_counts", paired.equal_counts_subset(p, alpha))):
        _reasons(name, {f: w for f, w in s.summary.reasons.items() if f in ("mean", "median")},
                 reasons)
    for e in p.effects:
        for arm in ("control", "treatment"):
            if math.isnan(getattr(e, f"{arm}_mean")):
                reasons[f"panel.effects.{e.configuration}.{arm}_mean"] = "no valid rows of this arm"

    cell_table = cells_mod.cell_summary(rows, params).table
    return {
        "provenance": provenance(params),
        "contrast": {"control": study.control, "treatment": study.treatment,
                     "scenario": study.scenario, "recency_cutoff": study.recency_cutoff,
                     "checks_total": p.checks_total},
        "panel_detail": {
            "effects_exact": {e.configuration: f"{e.effect_exact.numerator}/{e.effect_exact.denominator}"
                              for e in p.effects},
            "execution_groups": {e.configuration: e.execution_group for e in p.effects},
            "out_of_window": sorted(set(runs.get_column("configuration"))
                                    - set(in_window.get_column("configuration"))),
            "no_complete_pair": sorted(set(in_window.get_column("configuration")) - members),
        },
        "sensitivity": sens,
        "bounds_detail": {
            "configurations": bnd.configurations, "planned_repeats": bnd.planned_repeats,
            "missing_control": bnd.missing_control, "missing_treatment": bnd.missing_treatment,
            "missing_both": bnd.missing_both,
            "per_configuration": {r["configuration"]: {k2: v for k2, v in r.items() if k2 != "configuration"}
                                  for r in bnd.per_configuration.iter_rows(named=True)},
        },
        "families_detail": {r["family"]: {"configurations": r["configurations"], "mean": r["mean"]}
                            for r in fam.family_means.iter_rows(named=True)},
        "dependence_detail": {"msb": dep.msb, "msw": dep.msw},
        "mcnemar": mcnemar,
        "mcnemar_secondary": secondary,
        "cells": {"by": list(cells_mod.WITH_GROUP), "threshold_partial": params.threshold_partial,
                  "rows": cell_table},
        "reasons": reasons,
    }


def write_results(results: Mapping[str, Any], path: Path) -> None:
    """Write results.json (indent 2, full-precision floats, no NaN tokens, trailing newline)."""
    text = json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")
