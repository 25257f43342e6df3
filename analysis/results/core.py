"""The core results blocks: the docs/RESULTS_CONTRACT.md contract keys and their documented details.

Each function takes the shared ResultsInputs and returns a Block (value and its own null reasons);
beside it, its registration ``<KEY>_REGISTRATION`` (key, shape, docs row, readers), which
analysis/results/registry.py lists in results.json order.
"""

from __future__ import annotations

import math
import platform
from typing import Any

import numpy as np
import polars as pl

from analysis.estimators import cells as cells_mod
from analysis.estimators import exact as exact_mod
from analysis.estimators import paired
from analysis.estimators.common import runs_frame
from analysis.estimators.secondary_results import headings_json
from analysis.params import Params
from analysis.results.block import Block, ResultsBlock
from analysis.results.inputs import CONTRACT_SPARSE_K, ResultsInputs
from analysis.version import __version__

RESULTS_VERSION = 1
ESTIMATION_LIBRARIES: tuple[str, ...] = ("lifelines",)
"""Estimation libraries recorded from package metadata (lifelines: the Kaplan–Meier curves of fact_survival)."""
OUTPUT_LIBRARIES: tuple[str, ...] = ("matplotlib", "great_tables", "jinja2", "pypandoc_binary")
"""Libraries that shape the bytes of the tables, figures and report (recorded, not imported)."""
SUMMARY_FIELDS = ("configurations", "mean", "median", "q1", "q3", "min", "max", "positive",
                  "negative", "zero", "loo_min", "loo_max", "dispersion_lo", "dispersion_hi")


def _summary(s: paired.PanelSummary) -> dict[str, Any]:
    return {k: getattr(s, k) for k in SUMMARY_FIELDS}


def _subset(s: paired.Subset, full: bool = False) -> dict[str, Any]:
    if not full:
        return {"configurations": s.summary.configurations, "mean": s.summary.mean,
                "median": s.summary.median}
    return {"rule": s.rule, **_summary(s.summary), "members": list(s.configurations),
            "reasons": dict(s.summary.reasons)}


def evidence(i: ResultsInputs) -> Block:
    """``evidence.sha256``: the digest of every locked file; ``evidence.kind``: what study.toml says the
    package is (analysis.evidence.describe.evidence_kind; "simulation" is a planted truth, never a real run)."""
    from analysis.evidence.describe import evidence_kind

    digests = i.package.digests
    return Block({"sha256": {name: digests[name] for name in sorted(digests)}, "kind": evidence_kind(i.package)})


EVIDENCE_REGISTRATION = ResultsBlock(
    "evidence", evidence, "{sha256: {file: hex}, kind}", "SHA-256 of every file named in the provenance lock; "
    "kind: v1, v2-pilot, handmade, simulation (a planted truth) or other",
    contract=True)
"""results.json ``evidence``."""


def panel(i: ResultsInputs) -> Block:
    """``panel``: the equal-configuration summary and per-configuration effects."""
    p = i.panel
    block = _summary(p.summary)
    block["effects"] = {
        e.configuration: {"effect": e.effect, "pairs": e.pairs, "control_rows": e.control_rows,
                          "treatment_rows": e.treatment_rows, "control_mean": e.control_mean,
                          "treatment_mean": e.treatment_mean}
        for e in p.effects}
    reasons = dict(p.summary.reasons)
    for e in p.effects:
        for arm in ("control", "treatment"):
            if math.isnan(getattr(e, f"{arm}_mean")):
                reasons[f"effects.{e.configuration}.{arm}_mean"] = "no valid rows of this arm"
    return Block(block, reasons)


PANEL_REGISTRATION = ResultsBlock(
    "panel", panel, "{configurations, mean, median, q1, q3, min, max, positive, negative, zero, "
    "loo_min, loo_max, dispersion_lo, dispersion_hi, effects: {configuration: {...}}}",
    "equal-configuration summary of the primary contrast over the panel, plus effects per configuration",
    contract=True, tables=("table3", "panel_summary", "sparse_cells", "threshold_classes", "borderline"),
    figures=("forest", "sensitivity"))
"""results.json ``panel``."""


def sparse(i: ResultsInputs) -> Block:
    """``sparse``: the contract's min_pairs_4 and equal_counts subsets (mean and median reasons)."""
    value: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for name, s in ((f"min_pairs_{CONTRACT_SPARSE_K}", i.sparse_contract), ("equal_counts", i.equal_counts)):
        value[name] = _subset(s)
        reasons.update({f"{name}.{f}": w for f, w in s.summary.reasons.items() if f in ("mean", "median")})
    return Block(value, reasons)


SPARSE_REGISTRATION = ResultsBlock(
    "sparse", sparse, "{min_pairs_4: {configurations, mean, median}, equal_counts: {...}}",
    "the panel restricted to configurations with >= 4 complete pairs, and to equal valid counts",
    contract=True, tables=("sparse_cells",), figures=("sensitivity",))
"""results.json ``sparse``."""


def bounds(i: ResultsInputs) -> Block:
    """``bounds``: planned-repeat bounds lo, hi."""
    b = i.bounds
    return Block({"lo": b.lo, "hi": b.hi}, dict(b.reasons))


BOUNDS_REGISTRATION = ResultsBlock(
    "bounds", bounds, "{lo, hi}", "planned-repeat bounds (missing outcomes over [0, 1])",
    contract=True, tables=("sensitivity",), figures=("sensitivity",))
"""results.json ``bounds``."""


def families(i: ResultsInputs) -> Block:
    """``families``: family-weighted mean, leave-one-family-out range, dispersion interval."""
    f = i.families
    return Block({"families": f.families, "mean": f.mean, "lofo_min": f.lofo_min, "lofo_max": f.lofo_max,
                  "dispersion_lo": f.dispersion_lo, "dispersion_hi": f.dispersion_hi}, dict(f.reasons))


FAMILIES_REGISTRATION = ResultsBlock(
    "families", families, "{families, mean, lofo_min, lofo_max, dispersion_lo, dispersion_hi}",
    "family-weighted mean, leave-one-family-out range, dispersion interval over family means",
    contract=True, tables=("sensitivity",), figures=("sensitivity",))
"""results.json ``families``."""


def dependence(i: ResultsInputs) -> Block:
    """``dependence``: ICC(1) of the binary checks, design effect, effective observations per row."""
    d = i.dependence
    return Block({"scenario": d.scenario, "rows": d.rows, "checks_per_row": d.checks_per_row, "icc": d.icc,
                  "design_effect": d.design_effect, "effective_per_row": d.effective_per_row},
                 dict(d.reasons))


DEPENDENCE_REGISTRATION = ResultsBlock(
    "dependence", dependence, "{scenario, rows, checks_per_row, icc, design_effect, effective_per_row}",
    "ICC(1) of the binary checks (rows as groups), design effect, effective observations per row",
    contract=True)
"""results.json ``dependence``."""


def headings(i: ResultsInputs) -> Block:
    """``headings``: pooled r and within-cell fit of headings carried against recall."""
    return Block(dict(headings_json(i.headings.pooled, i.headings.within_all)))


HEADINGS_REGISTRATION = ResultsBlock(
    "headings", headings, "{pooled_r, rows, within_cell: {cells, rows, slope, r}}",
    "pooled r and within-cell slope/r of headings carried against recall", contract=True)
"""results.json ``headings``."""


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
        "version": __version__,
        "code_sha256": source_digest("results"),
        "python": platform.python_version(),
        "libraries": {"polars": pl.__version__, "numpy": np.__version__,
                      "scipy": scipy.__version__, "statsmodels": statsmodels.__version__,
                      **_library_versions(ESTIMATION_LIBRARIES), **_library_versions(OUTPUT_LIBRARIES)},
        "params": params.to_dict(),
    }


def _library_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    """Installed versions of ``names`` from package metadata (None when absent)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def provenance_block(i: ResultsInputs) -> Block:
    """``provenance``: see :func:`provenance`."""
    return Block(provenance(i.params))


PROVENANCE_REGISTRATION = ResultsBlock(
    "provenance", provenance_block, "{results_version, package, version, code_sha256, python, libraries, params}",
    "what computed the results: package version, code digest, library versions, params")
"""results.json ``provenance``."""


def contrast(i: ResultsInputs) -> Block:
    """``contrast``: control, treatment, scenario, recency cutoff and checks per row."""
    s = i.study
    return Block({"control": s.control, "treatment": s.treatment, "scenario": s.scenario,
                  "recency_cutoff": s.recency_cutoff, "checks_total": i.panel.checks_total})


CONTRAST_REGISTRATION = ResultsBlock(
    "contrast", contrast, "{control, treatment, scenario, recency_cutoff, checks_total}",
    "the primary contrast and the checks per row of its scenario")
"""results.json ``contrast``."""


def panel_detail(i: ResultsInputs) -> Block:
    """``panel_detail``: exact effects, execution groups, configurations left out of the panel and why."""
    s, p = i.study, i.panel
    runs = runs_frame(s)
    in_window = runs.filter(pl.col("published") >= s.recency_cutoff)
    members = set(p.frame.get_column("configuration"))
    return Block({
        "effects_exact": {e.configuration: f"{e.effect_exact.numerator}/{e.effect_exact.denominator}"
                          for e in p.effects},
        "execution_groups": {e.configuration: e.execution_group for e in p.effects},
        "out_of_window": sorted(set(runs.get_column("configuration"))
                                - set(in_window.get_column("configuration"))),
        "no_complete_pair": sorted(set(in_window.get_column("configuration")) - members),
    })


PANEL_DETAIL_REGISTRATION = ResultsBlock(
    "panel_detail", panel_detail, "{effects_exact, execution_groups, out_of_window, no_complete_pair}",
    "exact rational effects, execution groups, configurations left out of the panel")
"""results.json ``panel_detail``."""


def sensitivity(i: ResultsInputs) -> Block:
    """``sensitivity``: full summaries of the Params subsets, and each configuration left out."""
    p, params = i.panel, i.params
    alpha = params.alpha
    sens: dict[str, Any] = {}
    k = params.min_pairs
    sens[f"min_pairs_{k}"] = _subset(paired.min_pairs_subset(p, k, alpha), full=True)
    sens["equal_counts"] = _subset(i.equal_counts, full=True)
    if params.excluded_configurations:
        sens["excluded"] = _subset(paired.excluded_subset(p, params.excluded_configurations, alpha), full=True)
    each = i.each_excluded
    sens["each_excluded"] = {
        name: {"configurations": each.remaining, "mean": float(m), "median": float(md)}
        for name, m, md in zip(each.configurations, each.mean, each.median, strict=True)}
    return Block(sens)


SENSITIVITY_REGISTRATION = ResultsBlock(
    "sensitivity", sensitivity, "{min_pairs_<K>, equal_counts, excluded?, each_excluded: {configuration: {...}}}",
    "full summaries of the Params subsets and of the panel without each configuration",
    figures=("sensitivity",))
"""results.json ``sensitivity``."""


def bounds_detail(i: ResultsInputs) -> Block:
    """``bounds_detail``: the planned slots and missing outcomes behind the bounds."""
    b = i.bounds
    return Block({
        "configurations": b.configurations, "planned_repeats": b.planned_repeats,
        "missing_control": b.missing_control, "missing_treatment": b.missing_treatment,
        "missing_both": b.missing_both,
        "per_configuration": {r["configuration"]: {k: v for k, v in r.items() if k != "configuration"}
                              for r in b.per_configuration.iter_rows(named=True)},
    })


BOUNDS_DETAIL_REGISTRATION = ResultsBlock(
    "bounds_detail", bounds_detail, "{configurations, planned_repeats, missing_*, per_configuration: {...}}",
    "the planned slots and missing outcomes behind the bounds", figures=("forest",))
"""results.json ``bounds_detail``."""


def families_detail(i: ResultsInputs) -> Block:
    """``families_detail``: configurations and mean effect per family."""
    return Block({r["family"]: {"configurations": r["configurations"], "mean": r["mean"]}
                  for r in i.families.family_means.iter_rows(named=True)})


FAMILIES_DETAIL_REGISTRATION = ResultsBlock(
    "families_detail", families_detail, "{family: {configurations, mean}}",
    "configurations and mean effect per family")
"""results.json ``families_detail``."""


def dependence_detail(i: ResultsInputs) -> Block:
    """``dependence_detail``: the mean squares behind the ICC."""
    return Block({"msb": i.dependence.msb, "msw": i.dependence.msw})


DEPENDENCE_DETAIL_REGISTRATION = ResultsBlock(
    "dependence_detail", dependence_detail, "{msb, msw}", "the between- and within-row mean squares behind the ICC")
"""results.json ``dependence_detail``."""


def _thresholds(params: Params) -> tuple[tuple[str, float], ...]:
    return (("partial", params.threshold_partial), ("full", params.threshold_full))


def mcnemar(i: ResultsInputs) -> Block:
    """``mcnemar``: exact paired McNemar of control against treatment within the panel's runs."""
    s, rows = i.study, i.package.rows
    runs = i.panel.frame.select("configuration", "execution_group")
    return Block({tag: exact_mod.paired_mcnemar(rows, s.control, s.treatment, scenario=s.scenario,
                                                threshold=thr, runs=runs)
                  for tag, thr in _thresholds(i.params)})


MCNEMAR_REGISTRATION = ResultsBlock(
    "mcnemar", mcnemar, "{partial: {...}, full: {...}}",
    "exact paired McNemar of control against treatment within the panel's runs")
"""results.json ``mcnemar``."""


def _pairing(i: ResultsInputs, threshold: float) -> Block:
    import numpy as np

    from analysis.estimators import pairing
    s, rows = i.study, i.package.rows
    runs = i.panel.frame.select("configuration", "execution_group")
    rng = np.random.default_rng(i.params.mcnemar_pairing_seed)
    return Block(pairing.pairing_range(rows, s.control, s.treatment, scenario=s.scenario, threshold=threshold,
                                       runs=runs, rng=rng, draws=i.params.mcnemar_pairing_draws))


def mcnemar_pairing(i: ResultsInputs) -> Block:
    """``mcnemar_pairing``: the pooled partial-threshold McNemar under re-pairings of rows inside each run (ours)."""
    return _pairing(i, i.params.threshold_partial)


MCNEMAR_PAIRING_REGISTRATION = ResultsBlock(
    "mcnemar_pairing", mcnemar_pairing, "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
    "the pooled partial McNemar when rows are re-paired inside each run (ours: the range over pairings)")
"""results.json ``mcnemar_pairing``."""


def mcnemar_pairing_full(i: ResultsInputs) -> Block:
    """``mcnemar_pairing_full``: the pooled full-recall McNemar (``mcnemar.full``) under the same re-pairings (ours)."""
    return _pairing(i, i.params.threshold_full)


MCNEMAR_PAIRING_FULL_REGISTRATION = ResultsBlock(
    "mcnemar_pairing_full", mcnemar_pairing_full,
    "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
    "the pooled full-recall McNemar when rows are re-paired inside each run (ours: the range over pairings)")
"""results.json ``mcnemar_pairing_full``."""


def mcnemar_secondary(i: ResultsInputs) -> Block:
    """``mcnemar_secondary``: the Params.secondary_pairs comparisons over runs planning both arms."""
    s, rows = i.study, i.package.rows
    out = {}
    for first, second in i.params.secondary_pairs:
        both = exact_mod.runs_planning_both(rows, first, second, scenario=s.scenario)
        out[f"{first}_vs_{second}"] = {
            "runs": [f"{c} {g}" for c, g in both.iter_rows()],
            **{tag: exact_mod.paired_mcnemar(rows, first, second, scenario=s.scenario, threshold=thr, runs=both)
               for tag, thr in _thresholds(i.params)}}
    return Block(out)


MCNEMAR_SECONDARY_REGISTRATION = ResultsBlock(
    "mcnemar_secondary", mcnemar_secondary, "{<first>_vs_<second>: {runs, partial, full}}",
    "exact paired McNemar of each Params.secondary_pairs comparison over runs planning both arms")
"""results.json ``mcnemar_secondary``."""


def cells(i: ResultsInputs) -> Block:
    """``cells``: per-cell recall summaries of valid rows with an outcome."""
    table = cells_mod.cell_summary(i.package.rows, i.params).table
    return Block({"by": list(cells_mod.WITH_GROUP), "threshold_partial": i.params.threshold_partial,
                  "rows": table})


CELLS_REGISTRATION = ResultsBlock(
    "cells", cells, "{by, threshold_partial, rows: [{...}]}",
    "recall summaries per (scenario, configuration, execution_group, arm) cell")
"""results.json ``cells``."""
