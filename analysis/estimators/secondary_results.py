"""results.json blocks of the secondary analyses: fill, headings, carrier audit, failure modes
and the panel inference the paper does not report (bootstrap, sign flip, GEE, Wilson cells).

`headings_block(package, params)` is the docs/RESULTS_CONTRACT.md `headings` block exactly; one function
per further key (`fill_block`, `headings_detail_block`, `carrier_audit_block`,
`failure_modes_block`, `beyond_paper_block`, the last labelled "ours, not the paper's"), each
JSON-ready (NaN -> null, tuples -> lists).

Registration: beside each block function, its results.json registration ``<KEY>_REGISTRATION`` (compute,
shape, docs row, readers) with the small adapter that serialises the shared estimates of an
analysis.results.inputs.ResultsInputs (typed Any: the results layer is above this module) and is indexed
under the block function's name; analysis/results/registry.py lists them in results.json order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.estimators import bootstrap, carrier, failures, fill, headings, paired, randomization, wilson
from analysis.estimators.cells import cell_summary
from analysis.estimators.common import OURS_LABEL, json_ready, json_ready_block, runs_frame
from analysis.estimators.correlation import Correlation
from analysis.estimators.dependence import WithinRowDependence, within_row_dependence
from analysis.estimators.gee import gee_arm_effect
from analysis.estimators.registration import Block, ResultsBlock, indexed_as
from analysis.params import Params


def _frame(df: pl.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON-ready records, vectorised: float NaN -> None (json_ready per cell is slow)."""
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns([pl.col(c).fill_nan(None) for c in floats]).to_dicts()


def effects_from_panel(panel: paired.Panel) -> pl.DataFrame:
    """Adapter: the paired panel's per-configuration effects as fill.EFFECT_COLUMNS (+ execution_group)."""
    return panel.frame.select(*fill.EFFECT_COLUMNS, "execution_group")


def headings_block(package: Any, params: Params) -> dict[str, Any]:
    """The docs/RESULTS_CONTRACT.md `headings` block: pooled_r, rows, within_cell {cells, rows, slope, r}."""
    study = package.study
    return headings_json(headings.pooled_correlation(package.rows, study.scenario),
                         headings.within_cell(package.rows, study.scenario))


def headings_json(pooled: headings.PooledCorrelation, w: headings.WithinCell) -> dict[str, Any]:
    """The `headings` block (docs/RESULTS_CONTRACT.md) of a computed pooled r and within-cell fit (all arms)."""
    return json_ready_block({"pooled_r": pooled.r, "rows": pooled.rows,
                             "within_cell": {"cells": w.cells, "rows": w.rows, "slope": w.slope, "r": w.r}})


def _corr(c: Correlation) -> dict[str, Any]:
    return {"pearson": c.pearson, "spearman": c.spearman, "n": c.n,
            "configurations": list(c.units), "reason": c.reason}


def _sep(s: fill.Separation) -> dict[str, Any]:
    return {"positive": list(s.positive), "negative": list(s.negative),
            "positive_fills": list(s.positive_fills), "negative_fills": list(s.negative_fills),
            "margin": s.margin, "separates": s.separates, "reason": s.reason}


def _rescue(r: fill.RescueClassification) -> dict[str, Any]:
    return {"cutoff": r.cutoff, "rescue_threshold": r.rescue_threshold, "failing": r.failing,
            "rescued": r.rescued, "separation": _sep(r.separation)}


def _fill_block(a: fill.FillAnalysis, fill_recall: tuple[pl.DataFrame, Correlation]) -> dict[str, Any]:
    per, corr = fill_recall
    return {
        "definition": "mean over valid control-arm rows of the partition run (primary scenario) "
                      "of carried_chars / declared_chars",
        "per_configuration": {r["configuration"]: {"fill": r["fill"], "fill_rows": r["fill_rows"]}
                              for r in _frame(a.fills.select("configuration", "fill", "fill_rows"))},
        "missing_fill": list(a.missing_fill),
        "cutoff": a.cutoff,
        "borderline": list(a.borderline),
        "correlations": {"all": _corr(a.all), "all_excl_borderline": _corr(a.all_excl_borderline),
                         "failing": _corr(a.failing),
                         "failing_excl_borderline": _corr(a.failing_excl_borderline)},
        "rescue": _rescue(a.rescue),
        "rescue_excl_borderline": _rescue(a.rescue_excl_borderline),
        "sweep": [_rescue(s) for s in a.sweep],
        "sweep_separates": a.sweep_separates,
        "gains": [{"threshold": g.threshold, "count": g.count, "of": g.of, "separation": _sep(g.separation)}
                  for g in a.gains],
        "fill_vs_recall_control_arm": {
            "definition": "per configuration (every configuration, every execution group): mean fill and "
                          "mean recall of valid control-arm rows with an outcome and both lengths",
            "correlation": _corr(corr),
            "per_configuration": _frame(per),
        },
    }


def _table(t: headings.HeadingsTable) -> list[dict[str, Any]]:
    return [{"headings": lv.headings, "rows": lv.rows, "mean": lv.mean,
             "rows_at_threshold": lv.rows_at_threshold} for lv in t.levels]


def _within(w: headings.WithinCell) -> dict[str, Any]:
    return {"arms": list(w.arms) if w.arms is not None else None, "cells": w.cells, "rows": w.rows,
            "slope": w.slope, "r": w.r, "reason": w.reason}


def _headings_detail(h: headings.HeadingsAnalysis, params: Params) -> dict[str, Any]:
    return {
        "threshold": params.threshold_partial,
        "table_all_arms": _table(h.table_all),
        "table_single_field_arms": _table(h.table_single_field),
        "pooled_reason": h.pooled.reason,
        "within_all_arms": _within(h.within_all),
        "within_single_field_arms": _within(h.within_single_field),
        "within_control_arm": _within(h.within_control),
    }


def _failures_block(fm: failures.FailureModes) -> dict[str, Any]:
    fab = fm.fabrication
    return {
        "parse_failures": [json_ready(g) for g in fm.parse],
        "invalid": _frame(fm.invalid),
        "fabrication": {
            "threshold": fab.threshold, "failing_rows": fab.failing_rows, "fabricates": fab.fabricates,
            "abstains": fab.abstains, "no_answer": fab.no_answer, "placeholder_rows": fab.placeholder_rows,
            "per_arm": _frame(fab.per_arm),
            "placeholder_signature": [{"name": p.name, "category": p.category, "regex": p.regex}
                                      for p in failures.PLACEHOLDER_SIGNATURE],
        },
        "graders": json_ready(fm.graders),
    }


def _panel_inference_block(package: Any, params: Params, p: paired.Panel,
                           dependence: WithinRowDependence | None) -> dict[str, Any]:
    study = package.study
    effects = p.frame.get_column("effect").to_numpy()
    boot = bootstrap.bootstrap_mean(effects, resamples=params.bootstrap_resamples, seed=params.bootstrap_seed,
                                   alpha=params.alpha, method=params.bootstrap_method)
    flip = randomization.sign_flip_test(effects, exact_max_n=params.signflip_exact_max,
                                        draws=params.signflip_draws, seed=params.signflip_seed)
    runs = runs_frame(study).filter(pl.col("published") >= study.recency_cutoff)
    run_rows = paired.run_outcomes(package.rows, runs, p.contrast).join(
        p.frame.select("configuration", "execution_group"), on=["configuration", "execution_group"], how="semi")
    gee = gee_arm_effect(run_rows, control=study.control, treatment=study.treatment,
                         alpha=params.alpha, cov_type=params.gee_cov_type)
    dep = dependence if dependence is not None and dependence.scenario == study.scenario else (
        within_row_dependence(package.rows, package.checks, study.scenario))
    cells = cell_summary(package.rows, params, scenario=study.scenario).table.select(
        "scenario", "configuration", "execution_group", "arm", "rows", pl.col("mean_recall").alias("mean"))
    deff_cells = wilson.design_effect_intervals(cells, dep.checks_per_row, dep.design_effect, params.alpha)
    return {
        "label": OURS_LABEL,
        "bootstrap": json_ready(boot),
        "sign_flip": json_ready(flip),
        "gee": json_ready(gee),
        "design_effect_intervals": {
            "label": OURS_LABEL,
            "method": "Wilson score interval at n_eff = rows * k / deff",
            "scenario": study.scenario, "checks_per_row": dep.checks_per_row,
            "design_effect": dep.design_effect,
            "reason": dep.reasons.get("design_effect"),
            "cells": deff_cells,
        },
    }


@dataclass(frozen=True, slots=True)
class FillResult:
    """The fill analysis of one package's panel (what ``fill``, the fill tables and figure show)."""

    analysis: fill.FillAnalysis
    """Fill against the paired effect over the panel's runs: correlations, rescue, sweep, gains."""
    control_arm: tuple[pl.DataFrame, Correlation]
    """Per configuration, fill and recall of the control arm, and their correlation."""


def fill_estimate(package: Any, params: Params, p: paired.Panel) -> FillResult:
    """Fill fractions over the panel's runs and their analysis against the paired effect."""
    study = package.study
    effects = effects_from_panel(p)
    fills = fill.fill_fractions(package.rows, arm=study.control, scenario=study.scenario,
                                runs=effects.select("configuration", "execution_group"))
    return FillResult(fill.fill_analysis(effects, fills, params),
                      fill.fill_recall_correlation(package.rows, arm=study.control, scenario=study.scenario))


def fill_json(r: FillResult) -> dict[str, Any]:
    """results.json ``fill`` of a computed :class:`FillResult`."""
    return json_ready_block(_fill_block(r.analysis, r.control_arm))


def fill_block(package: Any, params: Params, p: paired.Panel) -> dict[str, Any]:
    """results.json ``fill``: fill fractions, their correlations with the effect, rescue and gains."""
    return fill_json(fill_estimate(package, params, p))


@indexed_as(fill_block)
def _fill_results(i: Any) -> Block:
    return Block(fill_json(i.fill))


FILL_REGISTRATION = ResultsBlock(
    "fill", _fill_results,
    "{definition, per_configuration, missing_fill, cutoff, borderline, correlations, rescue, ...}",
    "control-arm fill per configuration against the paired effect: correlations, rescue, sweep, gains",
    tables=("threshold_classes", "borderline"))
"""results.json ``fill`` (analysis/results/registry.py lists it)."""


def headings_detail_json(h: headings.HeadingsAnalysis, params: Params) -> dict[str, Any]:
    """results.json ``headings_detail`` of a computed headings analysis."""
    return json_ready_block(_headings_detail(h, params))


def headings_detail_block(package: Any, params: Params) -> dict[str, Any]:
    """results.json ``headings_detail``: headings tables and within-cell fits."""
    study = package.study
    return headings_detail_json(headings.headings_analysis(package.rows, study.scenario, study.control, params),
                                params)


@indexed_as(headings_detail_block)
def _headings_detail_results(i: Any) -> Block:
    return Block(headings_detail_json(i.headings, i.params))


HEADINGS_DETAIL_REGISTRATION = ResultsBlock(
    "headings_detail", _headings_detail_results,
    "{threshold, table_all_arms, table_single_field_arms, pooled_reason, within_*}",
    "headings tables and within-cell fits (all arms, single-field arms, control arm)",
    tables=("headings", "headings_within"), figures=("headings",))
"""results.json ``headings_detail``."""


@dataclass(frozen=True, slots=True)
class CarrierResult:
    """The carrier audit of one package and the arms' ceiling adherence."""

    audit: carrier.CarrierAudit
    """Carrier-vs-answer agreement per audited row and per arm."""
    ceiling: carrier.CeilingAdherence
    """Ceiling adherence per arm."""


def carrier_estimate(package: Any) -> CarrierResult:
    """The carrier audit and ceiling adherence on the package's scenario."""
    study = package.study
    return CarrierResult(carrier.carrier_audit(package.rows, package.checks, study.scenario),
                         carrier.ceiling_adherence(package.rows, study.scenario))


def carrier_audit_block(package: Any) -> dict[str, Any]:
    """results.json ``carrier_audit``: carrier-vs-answer agreement and ceiling adherence."""
    return carrier_json(carrier_estimate(package), package.study.scenario)


@indexed_as(carrier_audit_block)
def _carrier_audit_results(i: Any) -> Block:
    return Block(carrier_json(i.carrier, i.study.scenario))


CARRIER_AUDIT_REGISTRATION = ResultsBlock(
    "carrier_audit", _carrier_audit_results, "{scenario, audited_rows, agree_rows, ..., per_arm, ceiling_adherence}",
    "carrier-vs-answer agreement and discrepancy directions, ceiling adherence", tables=("carrier",))
"""results.json ``carrier_audit``."""


def carrier_json(r: CarrierResult, scenario: str) -> dict[str, Any]:
    """results.json ``carrier_audit`` of a computed :class:`CarrierResult`."""
    audit, ceiling = r.audit, r.ceiling
    return json_ready_block({
        "scenario": scenario, "audited_rows": audit.audited_rows, "agree_rows": audit.agree_rows,
        "carrier_higher_rows": audit.carrier_higher_rows, "answer_higher_rows": audit.answer_higher_rows,
        "present_missed_rows": audit.present_missed_rows,
        "absent_answered_rows": audit.absent_answered_rows,
        "per_arm": _frame(audit.per_arm),
        "ceiling_adherence": {"tolerance": ceiling.tolerance, "per_arm": _frame(ceiling.per_arm)},
    })


def failure_modes_block(package: Any, params: Params) -> dict[str, Any]:
    """results.json ``failure_modes``: parse failures, invalid rows, fabrication and grader agreement."""
    return failures_json(failures.failure_modes(package.rows, package.checks, package.study.scenario, params))


@indexed_as(failure_modes_block)
def _failure_modes_results(i: Any) -> Block:
    return Block(failures_json(i.failures))


FAILURE_MODES_REGISTRATION = ResultsBlock(
    "failure_modes", _failure_modes_results, "{parse_failures, invalid, fabrication, graders}",
    "parse failures, invalid rows, fabrication versus abstention, grader agreement",
    tables=("fabrication", "parse_failure_summary", "invalid_summary"))
"""results.json ``failure_modes``."""


def failures_json(fm: failures.FailureModes) -> dict[str, Any]:
    """results.json ``failure_modes`` of computed failure modes."""
    return json_ready_block(_failures_block(fm))


def beyond_paper_block(package: Any, params: Params, p: paired.Panel,
                       dependence: WithinRowDependence | None = None) -> dict[str, Any]:
    """results.json ``beyond_paper`` (ours, not the paper's): bootstrap, sign flip, GEE, Wilson cells.

    ``dependence``: the within-row dependence on the study's scenario, when already computed."""
    block = _panel_inference_block(package, params, p, dependence)
    cells = block["design_effect_intervals"].pop("cells")
    ready = json_ready_block(block)
    ready["design_effect_intervals"]["cells"] = _frame(cells)  # large: converted vectorised
    return ready


@indexed_as(beyond_paper_block)
def _beyond_paper_results(i: Any) -> Block:
    return Block(i.beyond_paper)


BEYOND_PAPER_REGISTRATION = ResultsBlock(
    "beyond_paper", _beyond_paper_results, "{label, bootstrap, sign_flip, gee, design_effect_intervals}",
    "ours, not the paper's: bootstrap, sign-flip test, GEE, design-effect-adjusted cell intervals",
    tables=("panel_inference", "cell_intervals"))
"""results.json ``beyond_paper`` (ours, not the paper's)."""
