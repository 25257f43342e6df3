"""Design advice (issue 19): one cost model, the cheapest design that reaches the power, its ranges and checks.

Methods note. Cost model: a design of K configurations x R paired repeats costs
K (c_config + R c_repeat). With a price table c_repeat is the money of one paired repeat (mean
over the table's endpoints) and c_config the money of adding one configuration (`--config-cost`,
default 0: the table prices tokens only); without one the unit is one paired repeat (c_repeat = 1)
and c_config = `--cost-ratio` (default PlanParams.cost_ratio). The printed cost is this number,
and the recommended design for an effect is the CHEAPEST (K, R) by it whose closed-form power
reaches target_power, over R = 1..PlanParams.r_search_max and K = 2..PlanParams.k_search_max
(closed-form power rises with K at fixed R, so the smallest such K per R is found by bisection;
ties go to the higher power, then the smaller K). R* = sqrt((c_config / c_repeat) sigma2_within /
tau2) is the variance-optimal repeat count of the same cost model, shown beside it: the cheapest
integer design is near it but need not equal round(R*).

No recommendation, with a named reason, when the variance components are undefined (no complete
pairs, fewer than two configurations, no configuration with two pairs) or tau2 is estimated as 0
(no finite trade-off between configurations and repeats).

Ranges: the same cheapest-design search at every (tau2, sigma2_within) of the uncertainty
(ANOVA as used, REML, the two ends of the tau2 profile interval with the REML sigma2_within, and
each pairing of j and q rows: analysis.estimators.variance_uncertainty), so a reader sees how
far K and R move. Checks beside each recommendation: the recommended (K, R) is simulated with
both variants (parametric and resampling) at the effect and at 0 (its simulated type-I rate), and
every grid cell at the effect where the resampling variant's power differs from the closed form
by more than PlanParams.disagreement is listed. The simulated test is the paper's t-style
dispersion interval, which the paper says is not a confidence interval for recent models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.estimators.variance_components import VarianceComponents
from analysis.params import PlanParams
from analysis.plan.simulate import closed_form, pair_completeness

TAU2_CHOICE = ("ANOVA (Henderson I, the moment estimator): the variance components the package fits and the "
               "simulation draws from; unbiased for tau2 before its truncation at 0 and free of the normal "
               "likelihood REML assumes, which whole-check differences do not follow. REML and its profile "
               "interval, under every pairing, are in the uncertainty range beside the recommendation")
"""Which tau2 the point recommendation uses, and why (design.json `recommended[].tau2_estimator`)."""
NOT_CI = ("the simulated test is the paper's t-style dispersion interval, which the paper says is not a "
          "confidence interval for recent models (a population of models)")


@dataclass(frozen=True, slots=True)
class CostModel:
    """Cost of K configurations x R paired repeats: K (per_configuration + R per_repeat)."""

    unit: str
    """What the cost is counted in."""
    per_repeat: float
    """Cost of one paired repeat (one row of each arm)."""
    per_configuration: float
    """Cost of adding one configuration."""
    money: bool
    """True when the unit is the price table's currency."""

    @property
    def ratio(self) -> float:
        """c_config / c_repeat."""
        return self.per_configuration / self.per_repeat if self.per_repeat > 0 else math.inf

    def cost(self, k: Any, r: Any) -> Any:
        """K (c_config + R c_repeat), elementwise."""
        return k * (self.per_configuration + r * self.per_repeat)

    def to_json(self) -> dict[str, Any]:
        """The cost model as design.json records it."""
        return {"formula": "cost = K * (c_config + R * c_repeat)", "unit": self.unit,
                "c_repeat": self.per_repeat, "c_config": self.per_configuration, "ratio": self.ratio,
                "money": self.money}


def cost_model(per_repeat_money: float | None, config_cost: float | None, cost_ratio: float) -> CostModel:
    """Money with a price table (c_config = config_cost, default 0), else paired-repeat units."""
    if per_repeat_money is not None:
        return CostModel("price-table currency", float(per_repeat_money), float(config_cost or 0.0), True)
    return CostModel("paired repeats (c_config = --cost-ratio)", 1.0, float(cost_ratio), False)


def undefined_reason(comps: VarianceComponents) -> str | None:
    """Why no design can be recommended from these components (None when one can)."""
    if comps.pairs == 0:
        return "no complete pairs in the panel: the variance components are undefined"
    if comps.configurations < 2:
        return (f"fewer than two configurations (K = {comps.configurations}): tau2, the between-configuration "
                "variance, is undefined")
    if not math.isfinite(comps.sigma2_within):
        return comps.reasons.get("sigma2_within") or "sigma2_within is undefined"
    if not math.isfinite(comps.tau2):
        return comps.reasons.get("tau2") or "tau2 is undefined"
    if comps.tau2 <= 0:
        return ("not estimable: tau2 is estimated as 0, at the boundary of its range (the ANOVA estimate truncated "
                "at 0: the configuration means vary no more than their repeats predict), so the panel cannot size "
                "the between-configuration variance a design must beat; power, the required K and a design are not "
                "computed from it (the tau2 interval and REML, and the designs at its ends, show the range)")
    return None


def optimal_repeats(tau2: float, sigma2_within: float, model: CostModel) -> dict[str, Any]:
    """R* = sqrt(ratio * sigma2_within / tau2) of the cost model, with its inputs, or null and a reason."""
    def rstar(ratio: float) -> float | None:
        if not (math.isfinite(tau2) and math.isfinite(sigma2_within)) or tau2 <= 0 or not math.isfinite(ratio):
            return None
        return math.sqrt(ratio * sigma2_within / tau2)
    value = rstar(model.ratio)
    reason = None
    if value is None:
        reason = ("tau2 is undefined" if not math.isfinite(tau2) else
                  "tau2 is estimated as 0: more repeats always beat more configurations, no finite optimum"
                  if tau2 <= 0 else "the cost model has no finite ratio")
    return {"formula": "R* = sqrt((c_config / c_repeat) * sigma2_within / tau2)", "cost_ratio": model.ratio,
            "value": value, "integer": None if value is None else max(1, round(value)),
            "by_cost_ratio": {f"{x:g}": rstar(x) for x in (1.0, 10.0, 100.0)}, "reason": reason}


def missing_of(comps: VarianceComponents) -> tuple[float, float]:
    """(control, treatment) missing-or-invalid rates of the evidence, 0 where undefined: what the
    simulation draws and the closed form counts (analysis.plan.simulate)."""
    rates = comps.missing_rate()

    def rate(arm: str) -> float:
        x = rates.get(arm)
        return float(x) if x is not None and math.isfinite(x) else 0.0
    return rate(comps.contrast.control), rate(comps.contrast.treatment)


def smallest_k(tau2: float, sigma2_within: float, repeats: np.ndarray, effect: float, alpha: float,
               target: float, k_max: int, missing: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """For each R, the smallest K in 2..k_max whose closed-form power reaches target (0: none)."""
    r = np.asarray(repeats, dtype=float)
    lo = np.full(r.shape, 2.0)
    hi = np.full(r.shape, float(k_max))
    comp = pair_completeness(r, missing)   # R is fixed through the search
    reach = closed_form(tau2, sigma2_within, hi, r, effect, alpha, missing, comp)[0] >= target
    if effect != 0 and reach.any():
        # a tighter start where it is valid: twice the normal-theory K (the t needs a little more), kept
        # only where the closed form reaches the target there (the invariant below)
        z = stats.norm.ppf(1.0 - alpha / 2.0) + stats.norm.ppf(target)
        pi, inv_n = comp
        with np.errstate(divide="ignore", invalid="ignore"):
            guess = np.ceil(2.0 * z * z * (tau2 + sigma2_within * inv_n) / (effect * effect * pi)) + 4.0
        guess = np.where(np.isfinite(guess), np.clip(guess, 2.0, float(k_max)), float(k_max))
        tight = closed_form(tau2, sigma2_within, guess, r, effect, alpha, missing, comp)[0] >= target
        hi = np.where(reach & tight, guess, hi)
    while True:   # invariant: power(hi) >= target where reachable; power(lo - 1) < target
        open_ = reach & (lo < hi)
        if not open_.any():
            break
        mid = np.floor((lo + hi) / 2.0)
        ok = closed_form(tau2, sigma2_within, mid, r, effect, alpha, missing, comp)[0] >= target
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1.0, lo)
    return np.where(reach, hi, 0.0).astype(np.int64)


K_SEARCH_CAP = 1_000_000
"""Widest K the cheapest-design search widens to (analysis.plan.advice.cheapest_design)."""
R_SEARCH_CAP = 10_000
"""Widest R it widens to (the plan's --repeats bound)."""


def search_bounds(plan: PlanParams) -> tuple[int, int]:
    """(K max, R max) of the first search: the PlanParams bounds, widened to hold the user's whole grid."""
    return (max(plan.k_search_max, max(plan.configurations)), max(plan.r_search_max, max(plan.repeats)))


def _search(tau2: float, s2: float, effect: float, plan: PlanParams, model: CostModel, k_max: int, r_max: int,
            missing: tuple[float, float]) -> tuple[dict[str, Any] | None, str | None]:
    """Cheapest reaching design over K = 2..k_max, R = 1..r_max, and which bound may cut the optimum."""
    rs = np.arange(1, r_max + 1)
    ks = smallest_k(tau2, s2, rs, effect, plan.alpha, plan.target_power, k_max, missing)
    keep = ks > 0
    best: dict[str, Any] | None = None
    if keep.any():
        rk, kk = rs[keep], ks[keep]
        power, half = closed_form(tau2, s2, kk, rk, effect, plan.alpha, missing)
        cost = model.cost(kk.astype(float), rk.astype(float))
        i = min(range(rk.size), key=lambda j: (round(float(cost[j]), 9), -float(power[j]), int(kk[j])))
        best = {"configurations": int(kk[i]), "repeats": int(rk[i]), "cost": float(cost[i]),
                "power_closed_form": float(power[i]), "halfwidth_closed_form": float(half[i])}
    # an R whose K was not reached costs at least (k_max + 1)(c_config + R c_repeat): cheaper than the
    # best found means a design beyond k_max may be the cheapest
    floor = model.cost(float(k_max + 1), rs[~keep].astype(float))
    if (~keep).any() and (best is None or float(np.min(floor)) < best["cost"]):
        return best, "K"
    if best is not None and best["repeats"] == r_max:
        return best, "R"
    return best, None


def cheapest_design(tau2: float, sigma2_within: float, effect: float, plan: PlanParams,
                    model: CostModel, missing: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any] | None:
    """The cheapest (K, R) by the cost model whose closed-form power reaches target_power, or None.

    Searched over K = 2..K max and R = 1..R max of :func:`search_bounds` (the user's whole grid
    inside); where a bound may cut the optimum (the best R is the largest searched, or an R whose K
    was not reached could still be cheaper) that bound is widened (R x 2 up to R_SEARCH_CAP, K x 4 up
    to K_SEARCH_CAP). `search` records the bounds used and, when a cap still cuts, `cut` says so.
    """
    if not (math.isfinite(tau2) and math.isfinite(sigma2_within)) or effect == 0:
        return None
    k_max, r_max = search_bounds(plan)
    tau2 = max(tau2, 0.0)
    while True:
        best, cut = _search(tau2, sigma2_within, effect, plan, model, k_max, r_max, missing)
        if cut == "K" and k_max < K_SEARCH_CAP:
            k_max = min(k_max * 4, K_SEARCH_CAP)
        elif cut == "R" and r_max < R_SEARCH_CAP:
            r_max = min(r_max * 2, R_SEARCH_CAP)
        else:
            break
    if best is None:
        return None
    best["search"] = {"configurations_max": k_max, "repeats_max": r_max,
                      "cut": None if cut is None else
                      (f"a design with more than {k_max} configurations might be cheaper (the search stops there)"
                       if cut == "K" else
                       f"the cheapest design found uses the largest R searched ({r_max}); more repeats might be "
                       "cheaper (the search stops there)")}
    return best


def recommend(comps: VarianceComponents, plan: PlanParams, model: CostModel,
              per_repeat: Mapping[str, Any] | None) -> tuple[tuple[dict[str, Any], ...], str | None]:
    """One cheapest (K, R) per nonzero effect, or no design and the reason."""
    why = undefined_reason(comps)
    if why:
        return (), why
    missing = missing_of(comps)
    k_max, r_max = search_bounds(plan)
    recs = []
    for effect in plan.effects:
        if effect == 0:
            continue
        best = cheapest_design(comps.tau2, comps.sigma2_within, effect, plan, model, missing)
        rec: dict[str, Any] = {"effect": effect, "cost_unit": model.unit, "tau2_estimator": TAU2_CHOICE,
                               "missing_rates": {"control": missing[0], "treatment": missing[1]}}
        if best is None:
            rec.update(configurations=None, repeats=None, power_closed_form=None, halfwidth_closed_form=None,
                       cost=None, reason=(f"not reached (K searched up to {K_SEARCH_CAP}, "
                                          f"R up to {R_SEARCH_CAP}, from {k_max} and {r_max})"))
        else:
            rec.update(best)
            k, r = best["configurations"], best["repeats"]
            rec["rows"] = 2 * k * r
            if per_repeat is not None:
                rec["money"] = best["cost"]
                rec["hours_sequential"] = k * r * per_repeat["mean_seconds"] / 3600.0
        recs.append(rec)
    return tuple(recs), None if recs else "no nonzero effect in the grid"


def design_ranges(scenarios: Sequence[tuple[str, float, float]], plan: PlanParams, model: CostModel,
                  missing: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    """Cheapest design and R* per (label, tau2, sigma2_within) and effect; K and R ranges per effect.

    A scenario whose design is not reached (tau2 infinite: an interval without a finite upper end)
    is counted in the range's `unreached` with its label, never silently left out."""
    rows: list[dict[str, Any]] = []
    ranges: dict[str, Any] = {}
    for effect in plan.effects:
        if effect == 0:
            continue
        ks: list[int] = []
        reps: list[int] = []
        unreached: list[str] = []
        for label, tau2, s2 in scenarios:
            best = cheapest_design(tau2, s2, effect, plan, model, missing)
            rows.append({"source": label, "effect": effect, "tau2": tau2, "sigma2_within": s2,
                         "r_star": optimal_repeats(tau2, s2, model)["value"],
                         **(best or {"configurations": None, "repeats": None, "cost": None,
                                     "power_closed_form": None, "halfwidth_closed_form": None})})
            if best:
                ks.append(best["configurations"])
                reps.append(best["repeats"])
            else:
                unreached.append(label)
        ranges[f"{effect:g}"] = {"configurations": [min(ks), max(ks)] if ks else None,
                                 "repeats": [min(reps), max(reps)] if reps else None,
                                 "scenarios": len(scenarios), "unreached": unreached}
    return {"designs": rows, "ranges": ranges}


def disagreements(grid: pl.DataFrame, boot: pl.DataFrame, effect: float, threshold: float) -> dict[str, Any]:
    """Grid cells at `effect` where the resampling power and the closed form differ by more than threshold."""
    if not boot.height:
        return {"threshold": threshold, "cells_compared": 0, "cells": []}
    b = boot.filter(pl.col("effect") == effect).join(
        grid.filter(pl.col("effect") == effect).select("configurations", "repeats",
                                                         pl.col("power").alias("power_parametric")),
        on=["configurations", "repeats"], how="left").sort("configurations", "repeats")
    cells = [{"configurations": k, "repeats": r, "power_resampling": p, "power_parametric": pp,
              "power_closed_form": cf}
             for k, r, p, pp, cf in b.select("configurations", "repeats", "power", "power_parametric",
                                             "power_closed_form").iter_rows()
             if abs(p - cf) > threshold]
    return {"threshold": threshold, "cells_compared": b.height, "cells": cells}


def type1_small_k(grid: pl.DataFrame, boot: pl.DataFrame, plan: PlanParams) -> dict[str, Any] | None:
    """Simulated rejection rates at effect 0 and the smallest grid K, per variant (min..max over R)."""
    if 0.0 not in plan.effects or not grid.height:
        return None
    k = min(plan.configurations)
    out: dict[str, Any] = {"configurations": k, "alpha": plan.alpha}
    for name, frame in (("parametric", grid), ("resampling", boot)):
        z = frame.filter((pl.col("effect") == 0.0) & (pl.col("configurations") == k)) if frame.height else frame
        power = z["power"].to_numpy() if z.height else np.zeros(0)
        mcse = z["power_mcse"].to_numpy() if z.height else np.zeros(0)
        out[name] = [float(power.min()), float(power.max())] if power.size else None
        out[f"{name}_mcse"] = float(mcse.max()) if mcse.size else None
    return out
