"""The core results blocks: the docs/RESULTS_CONTRACT.md contract keys and their documented details.

Each block function ``<key>_block(e: Estimates)`` returns a Block (value and its own null reasons); beside
it, its registration ``<KEY>_REGISTRATION`` (key, shape, docs row, the estimates it serialises), which
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
from analysis.estimators.registration import Block, Estimates, ResultsBlock
from analysis.estimators.secondary_results import headings_json
from analysis.params import Params
from analysis.results.inputs import CONTRACT_SPARSE_K
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


def evidence_block(e: Estimates) -> Block:
    """``evidence.sha256``: the digest of every locked file; ``evidence.kind``: what study.toml says the
    package is (analysis.evidence.describe.evidence_kind; "simulation" is a planted truth, never a real run)."""
    from analysis.evidence.describe import evidence_kind

    digests = e.package.digests
    return Block({"sha256": {name: digests[name] for name in sorted(digests)}, "kind": evidence_kind(e.package)})


EVIDENCE_REGISTRATION = ResultsBlock(
    "evidence", evidence_block, "{sha256: {file: hex}, kind}", "SHA-256 of every file named in the provenance lock; "
    "kind: v1, v2-pilot, handmade, simulation (a planted truth) or other",
    contract=True)
"""results.json ``evidence``."""


def panel_block(e: Estimates) -> Block:
    """``panel``: the equal-configuration summary and per-configuration effects."""
    p = e.panel
    block = _summary(p.summary)
    block["effects"] = {
        c.configuration: {"effect": c.effect, "pairs": c.pairs, "control_rows": c.control_rows,
                          "treatment_rows": c.treatment_rows, "control_mean": c.control_mean,
                          "treatment_mean": c.treatment_mean}
        for c in p.effects}
    reasons = dict(p.summary.reasons)
    for c in p.effects:
        for arm in ("control", "treatment"):
            if math.isnan(getattr(c, f"{arm}_mean")):
                reasons[f"effects.{c.configuration}.{arm}_mean"] = "no valid rows of this arm"
    return Block(block, reasons)


PANEL_REGISTRATION = ResultsBlock(
    "panel", panel_block, "{configurations, mean, median, q1, q3, min, max, positive, negative, zero, "
    "loo_min, loo_max, dispersion_lo, dispersion_hi, effects: {configuration: {...}}}",
    "equal-configuration summary of the primary contrast over the panel, plus effects per configuration",
    contract=True, serialises=("panel",))
"""results.json ``panel``."""


def sparse_block(e: Estimates) -> Block:
    """``sparse``: the contract's min_pairs_4 and equal_counts subsets (mean and median reasons)."""
    value: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for name, s in ((f"min_pairs_{CONTRACT_SPARSE_K}", e.sparse_contract), ("equal_counts", e.equal_counts)):
        value[name] = _subset(s)
        reasons.update({f"{name}.{f}": w for f, w in s.summary.reasons.items() if f in ("mean", "median")})
    return Block(value, reasons)


SPARSE_REGISTRATION = ResultsBlock(
    "sparse", sparse_block, "{min_pairs_4: {configurations, mean, median}, equal_counts: {...}}",
    "the panel restricted to configurations with >= 4 complete pairs, and to equal valid counts",
    contract=True, serialises=("sparse_contract", "equal_counts"))
"""results.json ``sparse``."""


def bounds_block(e: Estimates) -> Block:
    """``bounds``: planned-repeat bounds lo, hi."""
    b = e.bounds
    return Block({"lo": b.lo, "hi": b.hi}, dict(b.reasons))


BOUNDS_REGISTRATION = ResultsBlock(
    "bounds", bounds_block, "{lo, hi}", "planned-repeat bounds (missing outcomes over [0, 1])",
    contract=True, serialises=("bounds",))
"""results.json ``bounds``."""


def families_block(e: Estimates) -> Block:
    """``families``: family-weighted mean, leave-one-family-out range, dispersion interval."""
    f = e.families
    return Block({"families": f.families, "mean": f.mean, "lofo_min": f.lofo_min, "lofo_max": f.lofo_max,
                  "dispersion_lo": f.dispersion_lo, "dispersion_hi": f.dispersion_hi}, dict(f.reasons))


FAMILIES_REGISTRATION = ResultsBlock(
    "families", families_block, "{families, mean, lofo_min, lofo_max, dispersion_lo, dispersion_hi}",
    "family-weighted mean, leave-one-family-out range, dispersion interval over family means",
    contract=True, serialises=("families",))
"""results.json ``families``."""


def dependence_block(e: Estimates) -> Block:
    """``dependence``: ICC(1) of the binary checks, design effect, effective observations per row."""
    d = e.dependence
    return Block({"scenario": d.scenario, "rows": d.rows, "checks_per_row": d.checks_per_row, "icc": d.icc,
                  "design_effect": d.design_effect, "effective_per_row": d.effective_per_row},
                 dict(d.reasons))


DEPENDENCE_REGISTRATION = ResultsBlock(
    "dependence", dependence_block, "{scenario, rows, checks_per_row, icc, design_effect, effective_per_row}",
    "ICC(1) of the binary checks (rows as groups), design effect, effective observations per row",
    contract=True, serialises=("dependence",))
"""results.json ``dependence``."""


def headings_block(e: Estimates) -> Block:
    """``headings``: pooled r and within-cell fit of headings carried against recall."""
    return Block(dict(headings_json(e.headings.pooled, e.headings.within_all)))


HEADINGS_REGISTRATION = ResultsBlock(
    "headings", headings_block, "{pooled_r, rows, within_cell: {cells, rows, slope, r}}",
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


def provenance_block(e: Estimates) -> Block:
    """``provenance``: see :func:`provenance`."""
    return Block(provenance(e.params))


PROVENANCE_REGISTRATION = ResultsBlock(
    "provenance", provenance_block, "{results_version, package, version, code_sha256, python, libraries, params}",
    "what computed the results: package version, code digest, library versions, params")
"""results.json ``provenance``."""


def contrast_block(e: Estimates) -> Block:
    """``contrast``: control, treatment, scenario, recency cutoff and checks per row."""
    s = e.study
    return Block({"control": s.control, "treatment": s.treatment, "scenario": s.scenario,
                  "recency_cutoff": s.recency_cutoff, "checks_total": e.panel.checks_total})


CONTRAST_REGISTRATION = ResultsBlock(
    "contrast", contrast_block, "{control, treatment, scenario, recency_cutoff, checks_total}",
    "the primary contrast and the checks per row of its scenario")
"""results.json ``contrast``."""


def panel_detail_block(e: Estimates) -> Block:
    """``panel_detail``: exact effects, execution groups, configurations left out of the panel and why."""
    s, p = e.study, e.panel
    runs = runs_frame(s)
    in_window = runs.filter(pl.col("published") >= s.recency_cutoff)
    members = set(p.frame.get_column("configuration"))
    return Block({
        "effects_exact": {c.configuration: f"{c.effect_exact.numerator}/{c.effect_exact.denominator}"
                          for c in p.effects},
        "execution_groups": {c.configuration: c.execution_group for c in p.effects},
        "out_of_window": sorted(set(runs.get_column("configuration"))
                                - set(in_window.get_column("configuration"))),
        "no_complete_pair": sorted(set(in_window.get_column("configuration")) - members),
    })


PANEL_DETAIL_REGISTRATION = ResultsBlock(
    "panel_detail", panel_detail_block, "{effects_exact, execution_groups, out_of_window, no_complete_pair}",
    "exact rational effects, execution groups, configurations left out of the panel")
"""results.json ``panel_detail``."""


def sensitivity_block(e: Estimates) -> Block:
    """``sensitivity``: full summaries of the Params subsets, and each configuration left out."""
    p, params = e.panel, e.params
    alpha = params.alpha
    sens: dict[str, Any] = {}
    k = params.min_pairs
    sens[f"min_pairs_{k}"] = _subset(paired.min_pairs_subset(p, k, alpha), full=True)
    sens["equal_counts"] = _subset(e.equal_counts, full=True)
    if params.excluded_configurations:
        sens["excluded"] = _subset(paired.excluded_subset(p, params.excluded_configurations, alpha), full=True)
    each = e.each_excluded
    sens["each_excluded"] = {
        name: {"configurations": each.remaining, "mean": float(m), "median": float(md)}
        for name, m, md in zip(each.configurations, each.mean, each.median, strict=True)}
    return Block(sens)


SENSITIVITY_REGISTRATION = ResultsBlock(
    "sensitivity", sensitivity_block, "{min_pairs_<K>, equal_counts, excluded?, each_excluded: {configuration: {...}}}",
    "full summaries of the Params subsets and of the panel without each configuration", serialises=("each_excluded",))
"""results.json ``sensitivity``."""


def bounds_detail_block(e: Estimates) -> Block:
    """``bounds_detail``: the planned slots and missing outcomes behind the bounds."""
    b = e.bounds
    return Block({
        "configurations": b.configurations, "planned_repeats": b.planned_repeats,
        "missing_control": b.missing_control, "missing_treatment": b.missing_treatment,
        "missing_both": b.missing_both,
        "per_configuration": {r["configuration"]: {k: v for k, v in r.items() if k != "configuration"}
                              for r in b.per_configuration.iter_rows(named=True)},
    })


BOUNDS_DETAIL_REGISTRATION = ResultsBlock(
    "bounds_detail", bounds_detail_block, "{configurations, planned_repeats, missing_*, per_configuration: {...}}",
    "the planned slots and missing outcomes behind the bounds", serialises=("bounds.per_configuration",))
"""results.json ``bounds_detail``."""


def families_detail_block(e: Estimates) -> Block:
    """``families_detail``: configurations and mean effect per family."""
    return Block({r["family"]: {"configurations": r["configurations"], "mean": r["mean"]}
                  for r in e.families.family_means.iter_rows(named=True)})


FAMILIES_DETAIL_REGISTRATION = ResultsBlock(
    "families_detail", families_detail_block, "{family: {configurations, mean}}",
    "configurations and mean effect per family")
"""results.json ``families_detail``."""


def dependence_detail_block(e: Estimates) -> Block:
    """``dependence_detail``: the mean squares behind the ICC."""
    return Block({"msb": e.dependence.msb, "msw": e.dependence.msw})


DEPENDENCE_DETAIL_REGISTRATION = ResultsBlock(
    "dependence_detail", dependence_detail_block, "{msb, msw}",
    "the between- and within-row mean squares behind the ICC")
"""results.json ``dependence_detail``."""


def _thresholds(params: Params) -> tuple[tuple[str, float], ...]:
    return (("partial", params.threshold_partial), ("full", params.threshold_full))


def mcnemar_block(e: Estimates) -> Block:
    """``mcnemar``: exact paired McNemar of control against treatment within the panel's runs."""
    s, rows = e.study, e.package.rows
    runs = e.panel.frame.select("configuration", "execution_group")
    return Block({tag: exact_mod.paired_mcnemar(rows, s.control, s.treatment, scenario=s.scenario,
                                                threshold=thr, runs=runs)
                  for tag, thr in _thresholds(e.params)})


MCNEMAR_REGISTRATION = ResultsBlock(
    "mcnemar", mcnemar_block, "{partial: {...}, full: {...}}",
    "exact paired McNemar of control against treatment within the panel's runs")
"""results.json ``mcnemar``."""


def _pairing(e: Estimates, threshold: float) -> Block:
    import numpy as np

    from analysis.estimators import pairing
    s, rows = e.study, e.package.rows
    runs = e.panel.frame.select("configuration", "execution_group")
    rng = np.random.default_rng(e.params.mcnemar_pairing_seed)
    return Block(pairing.pairing_range(rows, s.control, s.treatment, scenario=s.scenario, threshold=threshold,
                                       runs=runs, rng=rng, draws=e.params.mcnemar_pairing_draws))


def mcnemar_pairing_block(e: Estimates) -> Block:
    """``mcnemar_pairing``: the pooled partial-threshold McNemar under re-pairings of rows inside each run (ours)."""
    return _pairing(e, e.params.threshold_partial)


MCNEMAR_PAIRING_REGISTRATION = ResultsBlock(
    "mcnemar_pairing", mcnemar_pairing_block,
    "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
    "the pooled partial McNemar when rows are re-paired inside each run (ours: the range over pairings)")
"""results.json ``mcnemar_pairing``."""


def mcnemar_pairing_full_block(e: Estimates) -> Block:
    """``mcnemar_pairing_full``: the pooled full-recall McNemar (``mcnemar.full``) under the same re-pairings (ours)."""
    return _pairing(e, e.params.threshold_full)


MCNEMAR_PAIRING_FULL_REGISTRATION = ResultsBlock(
    "mcnemar_pairing_full", mcnemar_pairing_full_block,
    "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
    "the pooled full-recall McNemar when rows are re-paired inside each run (ours: the range over pairings)")
"""results.json ``mcnemar_pairing_full``."""


def mcnemar_secondary_block(e: Estimates) -> Block:
    """``mcnemar_secondary``: the Params.secondary_pairs comparisons over runs planning both arms."""
    s, rows = e.study, e.package.rows
    out = {}
    for first, second in e.params.secondary_pairs:
        both = exact_mod.runs_planning_both(rows, first, second, scenario=s.scenario)
        out[f"{first}_vs_{second}"] = {
            "runs": [f"{c} {g}" for c, g in both.iter_rows()],
            **{tag: exact_mod.paired_mcnemar(rows, first, second, scenario=s.scenario, threshold=thr, runs=both)
               for tag, thr in _thresholds(e.params)}}
    return Block(out)


MCNEMAR_SECONDARY_REGISTRATION = ResultsBlock(
    "mcnemar_secondary", mcnemar_secondary_block, "{<first>_vs_<second>: {runs, partial, full}}",
    "exact paired McNemar of each Params.secondary_pairs comparison over runs planning both arms")
"""results.json ``mcnemar_secondary``."""


def cells_block(e: Estimates) -> Block:
    """``cells``: per-cell recall summaries of valid rows with an outcome."""
    table = cells_mod.cell_summary(e.package.rows, e.params).table
    return Block({"by": list(cells_mod.WITH_GROUP), "threshold_partial": e.params.threshold_partial,
                  "rows": table})


CELLS_REGISTRATION = ResultsBlock(
    "cells", cells_block, "{by, threshold_partial, rows: [{...}]}",
    "recall summaries per (scenario, configuration, execution_group, arm) cell")
"""results.json ``cells``."""
