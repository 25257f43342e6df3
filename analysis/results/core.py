"""The core results blocks: the docs/RESULTS_CONTRACT.md contract keys and their documented details.

Each function takes the shared ResultsInputs and returns a Block (value and its own null
reasons); analysis.results.registry names them per key, in results.json order.
"""

from __future__ import annotations

import math
import platform
from typing import Any

import numpy as np
import polars as pl

import analysis
from analysis.estimators import cells as cells_mod
from analysis.estimators import exact as exact_mod
from analysis.estimators import paired
from analysis.estimators.common import runs_frame
from analysis.estimators.secondary_results import headings_json
from analysis.params import Params
from analysis.results.block import Block
from analysis.results.inputs import CONTRACT_SPARSE_K, ResultsInputs

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
    """``evidence.sha256``: the digest of every locked file."""
    digests = i.package.digests
    return Block({"sha256": {name: digests[name] for name in sorted(digests)}})


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


def sparse(i: ResultsInputs) -> Block:
    """``sparse``: the contract's min_pairs_4 and equal_counts subsets (mean and median reasons)."""
    value: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for name, s in ((f"min_pairs_{CONTRACT_SPARSE_K}", i.sparse_contract), ("equal_counts", i.equal_counts)):
        value[name] = _subset(s)
        reasons.update({f"{name}.{f}": w for f, w in s.summary.reasons.items() if f in ("mean", "median")})
    return Block(value, reasons)


def bounds(i: ResultsInputs) -> Block:
    """``bounds``: planned-repeat bounds lo, hi."""
    b = i.bounds
    return Block({"lo": b.lo, "hi": b.hi}, dict(b.reasons))


def families(i: ResultsInputs) -> Block:
    """``families``: family-weighted mean, leave-one-family-out range, dispersion interval."""
    f = i.families
    return Block({"families": f.families, "mean": f.mean, "lofo_min": f.lofo_min, "lofo_max": f.lofo_max,
                  "dispersion_lo": f.dispersion_lo, "dispersion_hi": f.dispersion_hi}, dict(f.reasons))


def dependence(i: ResultsInputs) -> Block:
    """``dependence``: ICC(1) of the binary checks, design effect, effective observations per row."""
    d = i.dependence
    return Block({"scenario": d.scenario, "rows": d.rows, "checks_per_row": d.checks_per_row, "icc": d.icc,
                  "design_effect": d.design_effect, "effective_per_row": d.effective_per_row},
                 dict(d.reasons))


def headings(i: ResultsInputs) -> Block:
    """``headings``: pooled r and within-cell fit of headings carried against recall."""
    return Block(dict(headings_json(i.headings.pooled, i.headings.within_all)))


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


def contrast(i: ResultsInputs) -> Block:
    """``contrast``: control, treatment, scenario, recency cutoff and checks per row."""
    s = i.study
    return Block({"control": s.control, "treatment": s.treatment, "scenario": s.scenario,
                  "recency_cutoff": s.recency_cutoff, "checks_total": i.panel.checks_total})


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
    each = paired.each_excluded(p)
    sens["each_excluded"] = {
        name: {"configurations": each.remaining, "mean": float(m), "median": float(md)}
        for name, m, md in zip(each.configurations, each.mean, each.median, strict=True)}
    return Block(sens)


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


def families_detail(i: ResultsInputs) -> Block:
    """``families_detail``: configurations and mean effect per family."""
    return Block({r["family"]: {"configurations": r["configurations"], "mean": r["mean"]}
                  for r in i.families.family_means.iter_rows(named=True)})


def dependence_detail(i: ResultsInputs) -> Block:
    """``dependence_detail``: the mean squares behind the ICC."""
    return Block({"msb": i.dependence.msb, "msw": i.dependence.msw})


def _thresholds(params: Params) -> tuple[tuple[str, float], ...]:
    return (("partial", params.threshold_partial), ("full", params.threshold_full))


def mcnemar(i: ResultsInputs) -> Block:
    """``mcnemar``: exact paired McNemar of control against treatment within the panel's runs."""
    s, rows = i.study, i.package.rows
    runs = i.panel.frame.select("configuration", "execution_group")
    return Block({tag: exact_mod.paired_mcnemar(rows, s.control, s.treatment, scenario=s.scenario,
                                                threshold=thr, runs=runs)
                  for tag, thr in _thresholds(i.params)})


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


def mcnemar_pairing_full(i: ResultsInputs) -> Block:
    """``mcnemar_pairing_full``: the pooled full-recall McNemar (``mcnemar.full``) under the same re-pairings (ours)."""
    return _pairing(i, i.params.threshold_full)


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


def cells(i: ResultsInputs) -> Block:
    """``cells``: per-cell recall summaries of valid rows with an outcome."""
    table = cells_mod.cell_summary(i.package.rows, i.params).table
    return Block({"by": list(cells_mod.WITH_GROUP), "threshold_partial": i.params.threshold_partial,
                  "rows": table})
