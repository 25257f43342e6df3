"""The v2 design: variance components -> power grid, required K, optimal R, cost (design.json).

Methods note. Everything here is computed from an evidence package's fitted variance components
(analysis.estimators.variance_components) and PlanParams; see analysis.plan.simulate for the
simulation and the tests. Power is the rejection rate of the t-style dispersion interval (it
excludes 0) over `sims` simulated studies; its Monte Carlo standard error is
sqrt(p (1 - p) / sims). The sign-flip test's rejection rate (p <= alpha) is reported beside it.
`required_configurations`: for each effect and R, the smallest K whose closed-form power reaches
target_power (searched over 2..k_search_max), and the smallest grid K whose simulated power does.
The cost model, R* and the recommended (cheapest) design are in analysis.plan.advice; the
uncertainty of the components (REML, tau2 interval, pairings) in
analysis.estimators.variance_uncertainty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from analysis.estimators.variance_components import VarianceComponents
from analysis.params import PlanParams
from analysis.plan.advice import missing_of, search_bounds, smallest_k
from analysis.plan.simulate import (
    SimModel,
    analyse_shifted,
    analyse_simulated,
    closed_form,
    draw_parametric,
    draw_resampled,
    parametric_differences,
    sign_patterns,
)

GRID_SCHEMA = {"variant": pl.String, "configurations": pl.Int64, "repeats": pl.Int64,
               "effect": pl.Float64, "power": pl.Float64, "power_mcse": pl.Float64,
               "power_signflip": pl.Float64, "power_signflip_mcse": pl.Float64,
               "power_closed_form": pl.Float64, "halfwidth_median": pl.Float64,
               "halfwidth_closed_form": pl.Float64, "panel_configurations_mean": pl.Float64}


@dataclass(frozen=True, slots=True)
class Design:
    """A computed design (everything design.json holds)."""

    components: VarianceComponents
    """Fitted variance components of the evidence."""
    plan: PlanParams
    """Grid, alpha, sims, seed."""
    grid: pl.DataFrame
    """Parametric simulation, one row per (K, R, effect) (GRID_SCHEMA)."""
    grid_resampling: pl.DataFrame
    """Resampling variant, same columns."""
    required: Mapping[str, Any]
    """effect -> R -> {closed_form, simulated} smallest K at target power."""
    optimal_repeats: Mapping[str, Any]
    """R* and its inputs."""
    recommended: tuple[Mapping[str, Any], ...]
    """One recommended (cheapest) (K, R) per nonzero effect, with its cost and checks."""
    cost: Mapping[str, Any] | None
    """Tokens per row, cost per repeat/row and per grid cell (None without a price table)."""
    reasons: Mapping[str, str] = field(default_factory=dict)
    """Why parts are missing (e.g. no recommendation)."""
    cost_model: Mapping[str, Any] = field(default_factory=dict)
    """The one cost model of the recommendation (analysis.plan.advice.CostModel.to_json)."""
    uncertainty: Mapping[str, Any] = field(default_factory=dict)
    """tau2 by ANOVA, REML and its interval; components by pairing; the designs and K ranges they give."""
    type1_small_k: Mapping[str, Any] | None = None
    """Simulated rejection rates at effect 0 and the smallest grid K, per variant."""
    observed_effect: float = float("nan")
    """The evidence's equal-configuration mean paired effect (treatment - control), for the figure."""


def _mcse(p: float, n: int) -> float:
    return math.sqrt(max(p * (1.0 - p), 0.0) / n)


def _cell_rows(variant: str, k: int, r: int, effect: float, parts: list[Any], sims: int, alpha: float,
               comps: VarianceComponents, signflip: bool = True) -> dict[str, Any]:
    """One grid record from the StudyAnalysis of each chunk of a cell's studies."""
    rej = float(np.concatenate([res.reject_t() for res in parts]).mean())
    p = np.concatenate([res.p_signflip for res in parts])
    sf = float(np.mean(np.nan_to_num(p, nan=1.0) <= alpha)) if signflip else float("nan")
    hw = np.concatenate([res.halfwidth() for res in parts])
    n_conf = np.concatenate([res.configurations for res in parts])
    pcf, hcf = closed_form(comps.tau2, comps.sigma2_within, k, r, effect, alpha, missing_of(comps))
    return {"variant": variant, "configurations": k, "repeats": r, "effect": effect, "power": rej,
            "power_mcse": _mcse(rej, sims), "power_signflip": sf, "power_signflip_mcse": _mcse(sf, sims),
            "power_closed_form": float(pcf),
            "halfwidth_median": float(np.nanmedian(hw)) if np.isfinite(hw).any() else None,
            "halfwidth_closed_form": float(hcf), "panel_configurations_mean": float(n_conf.mean())}


CHUNK_CELLS = 4_000_000
"""Largest studies x configurations x repeats array drawn at once (bounds memory near 100 MB each)."""


def _chunks(sims: int, k: int, r: int) -> list[int]:
    size = max(1, CHUNK_CELLS // (k * r))
    return [min(size, sims - start) for start in range(0, sims, size)]


def simulate_grid(comps: VarianceComponents, groups: Sequence[np.ndarray], plan: PlanParams,
                  rng: np.random.Generator, *, resampling: bool = True, signflip: bool = True,
                  progress: Callable[[str], None] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both variants over the (K, R, effect) grid (common random numbers within a (K, R) cell).

    Studies are drawn in chunks of at most CHUNK_CELLS array cells, so memory stays bounded at
    any --sims; the loop is over chunks, never over studies or rows. signflip=False skips the
    sign-flip test (its columns are then NaN): the checks of a recommended design need only the
    dispersion interval.
    """
    miss = comps.missing_rate()
    model = SimModel(comps.tau2, comps.sigma2_within, comps.checks_total,
                     _finite(miss.get(comps.contrast.control)), _finite(miss.get(comps.contrast.treatment)))
    par: list[dict[str, Any]] = []
    boot: list[dict[str, Any]] = []
    block, blocks = 0, len(plan.configurations) * len(plan.repeats)
    for k in plan.configurations:
        if signflip:
            patterns, exact = sign_patterns(k, plan.signflip_exact_max, plan.signflip_patterns, rng)
        else:
            patterns, exact = np.ones((1, k)), True
        for r in plan.repeats:
            par_parts: dict[float, list[Any]] = {e: [] for e in plan.effects}
            boot_parts: dict[float, list[Any]] = {e: [] for e in plan.effects}
            for n in _chunks(plan.sims, k, r):
                zc, ze, present = draw_parametric(model, k, r, n, rng)
                for effect in plan.effects:
                    d = parametric_differences(model, effect, zc, ze)
                    par_parts[effect].append(analyse_simulated(d, present, plan.alpha, patterns, exact))
                if resampling:
                    d0, present_b = draw_resampled(list(groups), k, r, n, model, rng)
                    shifted = analyse_shifted(d0, present_b, plan.alpha, patterns, exact, tuple(plan.effects))
                    for effect, res in zip(plan.effects, shifted, strict=True):
                        boot_parts[effect].append(res)
            for effect in plan.effects:
                par.append(_cell_rows("parametric", k, r, effect, par_parts[effect], plan.sims, plan.alpha, comps,
                                      signflip))
                if resampling:
                    boot.append(_cell_rows("resampling", k, r, effect, boot_parts[effect], plan.sims,
                                           plan.alpha, comps, signflip))
            if progress:
                block += 1
                progress(f"plan: [{block}/{blocks}] simulated K={k} R={r} "
                         f"({len(plan.effects)} effects x {plan.sims} studies x {2 if resampling else 1} variants)")
    return pl.DataFrame(par, schema=GRID_SCHEMA), pl.DataFrame(boot, schema=GRID_SCHEMA)


def _finite(x: float | None) -> float:
    return float(x) if x is not None and math.isfinite(x) else 0.0


def required_configurations(comps: VarianceComponents, grid: pl.DataFrame, plan: PlanParams
                            ) -> dict[str, Any]:
    """effect -> R -> {closed_form, simulated_grid}: the smallest K reaching target power.

    A null comes with `closed_form_reason` / `simulated_grid_reason` ("not reached (max K ... = N)").
    """
    out: dict[str, Any] = {}
    top = max(plan.configurations)
    k_max = search_bounds(plan)[0]
    missing = missing_of(comps)
    for effect in plan.effects:
        per_r: dict[str, Any] = {}
        ks = smallest_k(comps.tau2, comps.sigma2_within, np.asarray(plan.repeats), effect, plan.alpha,
                        plan.target_power, k_max, missing)
        for r, k_cf in zip(plan.repeats, ks, strict=True):
            sim = grid.filter((pl.col("effect") == effect) & (pl.col("repeats") == r)
                              & (pl.col("power") >= plan.target_power)).sort("configurations")
            cell: dict[str, Any] = {"closed_form": int(k_cf) if k_cf else None,
                                    "simulated_grid": int(sim.get_column("configurations")[0]) if sim.height else None}
            if cell["closed_form"] is None:
                cell["closed_form_reason"] = f"not reached (max K searched = {k_max})"
            if cell["simulated_grid"] is None:
                cell["simulated_grid_reason"] = f"not reached (max K in the grid = {top})"
            per_r[str(r)] = cell
        out[f"{effect:g}"] = per_r
    return out
