"""The secondary estimates of one package's panel, as typed results: fill against the paired effect, the
carrier audit, and the panel inference the paper does not report (bootstrap, sign flip, GEE,
design-effect-adjusted Wilson cell intervals). Their results.json blocks are shaped in
analysis.estimators.secondary_results.

Methods note: each function is a thin composition of the estimators it names, over the panel's runs; the
design-effect cell intervals use the within-row dependence on the study's scenario."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.estimators import bootstrap, carrier, fill, paired, randomization, wilson
from analysis.estimators.cells import cell_summary
from analysis.estimators.common import runs_frame
from analysis.estimators.correlation import Correlation
from analysis.estimators.dependence import WithinRowDependence, within_row_dependence
from analysis.estimators.gee import GeeArmEffect, gee_arm_effect
from analysis.params import Params


def effects_from_panel(panel: paired.Panel) -> pl.DataFrame:
    """Adapter: the paired panel's per-configuration effects as fill.EFFECT_COLUMNS (+ execution_group)."""
    return panel.frame.select(*fill.EFFECT_COLUMNS, "execution_group")


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


@dataclass(frozen=True, slots=True)
class PanelInference:
    """Inference on the panel effect beyond the paper's (ours): what ``beyond_paper`` serialises."""

    bootstrap: bootstrap.BootstrapInterval
    """Bootstrap interval of the mean configuration effect."""
    sign_flip: randomization.SignFlipTest
    """Sign-flip randomisation test of the configuration effects."""
    gee: GeeArmEffect
    """GEE arm effect over the panel's run rows, clustered by run."""
    scenario: str
    """The study's scenario (the cells' and the dependence's)."""
    dependence: WithinRowDependence
    """Within-row dependence on that scenario (its design effect widens the cell intervals)."""
    cells: pl.DataFrame
    """Per (scenario, configuration, execution_group, arm) cell: rows, mean, effective_n, lo, hi
    (wilson.design_effect_intervals)."""


def panel_inference(package: Any, params: Params, p: paired.Panel,
                    dependence: WithinRowDependence | None = None) -> PanelInference:
    """Bootstrap, sign flip, GEE and design-effect Wilson cells of the panel; ``dependence``: the within-row
    dependence on the study's scenario when already computed."""
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
    return PanelInference(boot, flip, gee, study.scenario, dep, deff_cells)
