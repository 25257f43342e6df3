"""`python generate.py plan`: compute a design from evidence and write design.json, figure, table, section.

Only `write_plan` writes files; `make_design` computes, `design_json`/`power_table` build data,
`analysis.plan.figure.power_figure` returns a matplotlib Figure and `analysis.plan.summary` the text.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from analysis.estimators.common import contrast_of, json_ready, runs_frame
from analysis.estimators.variance_components import (
    difference_groups,
    variance_components,
)
from analysis.estimators.variance_uncertainty import (
    RANDOM_RANGE_LEVEL,
    pair_outcomes,
    pairing_groups,
    tau2_uncertainty_groups,
    variance_pairing_range,
)
from analysis.params import PlanParams
from analysis.plan.advice import (
    NOT_CI,
    TAU2_CHOICE,
    CostModel,
    cost_model,
    design_ranges,
    disagreements,
    missing_of,
    optimal_repeats,
    recommend,
    smallest_k,
    type1_small_k,
    undefined_reason,
)
from analysis.plan.cost import Price, cell_cost, repeat_cost, row_tokens
from analysis.plan.design import (
    Design,
    required_configurations,
    simulate_grid,
)
from analysis.plan.figure import effect_name, power_figure
from analysis.plan.simulate import closed_form
from analysis.plan.summary import design_markdown, power_legend, summary_lines
from analysis.safeio import write_bytes, write_json, write_text

DESIGN_NAME = "design.json"
"""File the plan writes into OUT; a main build whose OUT holds it gains the 'Designing v2' section."""
DESIGN_VERSION = 1


def make_design(package: Any, plan: PlanParams, *, prices: Sequence[Price] | None = None,
                fixture: Any = None, cost_ratio: float | None = None, config_cost: float | None = None,
                progress: Callable[[str], None] | None = None) -> Design:
    """Fit the components of `package` and compute the whole design (no I/O).

    `config_cost`: money of adding one configuration (price-table currency; default 0), used only
    with `prices`; without prices the cost unit is one paired repeat and a configuration costs
    `cost_ratio` of them (analysis.plan.advice).
    """
    study = package.study
    contrast = contrast_of(study)
    runs = runs_frame(study)
    comps = variance_components(package.rows, runs, contrast, recency_cutoff=study.recency_cutoff,
                                checks=package.checks)
    groups = list(difference_groups(package.rows, runs, contrast, recency_cutoff=study.recency_cutoff).values())
    ratio = plan.cost_ratio if cost_ratio is None else cost_ratio
    reasons: dict[str, str] = {}
    per_repeat = None
    cost = None
    if prices:
        if fixture is None:
            raise ValueError("a price table needs the fixture whose rows it prices")
        from analysis.runner.arms import load_arms

        arms = load_arms()
        tokens = [row_tokens(fixture, arms[a]) for a in (contrast.control, contrast.treatment) if a in arms]
        if len(tokens) < 2:
            reasons["cost"] = (f"arms {contrast.control!r}/{contrast.treatment!r} are not both in the runner's "
                               "arms.toml, so their rows cannot be sized")
        else:
            per_repeat = repeat_cost(tokens, prices)
            cost = {"fixture": {"name": fixture.spec.name, "digest": fixture.digest},
                    "row_tokens": [{"arm": t.arm, "calls": t.calls, "prompt_tokens": t.prompt_tokens,
                                    "output_tokens": t.output_tokens} for t in tokens],
                    "per_repeat": per_repeat,
                    "per_configuration": float(config_cost or 0.0),
                    "cells": [{"configurations": k, "repeats": r,
                               **cell_cost(k, r, per_repeat, float(config_cost or 0.0))}
                              for k in plan.configurations for r in plan.repeats]}
    model = cost_model(per_repeat["mean_money"] if per_repeat else None, config_cost, ratio)
    optimal = optimal_repeats(comps.tau2, comps.sigma2_within, model)
    rng = np.random.Generator(np.random.PCG64(plan.seed))
    boundary = math.isfinite(comps.tau2) and comps.tau2 <= 0
    if math.isfinite(comps.tau2) and math.isfinite(comps.sigma2_within) and not boundary:
        grid, boot = simulate_grid(comps, groups, plan, rng, progress=progress)
        required = required_configurations(comps, grid, plan)
    elif boundary:
        grid = boot = pl.DataFrame()
        required = {}
        reasons["grid"] = ("power not simulated: " + (undefined_reason(comps) or "tau2 is at its boundary, 0"))
    else:
        grid = boot = pl.DataFrame()
        required = {}
        reasons["grid"] = ("cannot simulate: " + (comps.reasons.get("tau2") or comps.reasons.get("sigma2_within")
                                                  or "variance components undefined"))
    recs, why = recommend(comps, plan, model, per_repeat)
    if why:
        reasons["recommended"] = f"cannot recommend a design: {why}"
    uncertainty = design_uncertainty(package, comps, groups, plan, model)
    checked = tuple(_checked(rec, comps, groups, plan, grid, boot, progress, model, per_repeat) for rec in recs)
    return Design(components=comps, plan=plan, grid=grid, grid_resampling=boot, required=required,
                  optimal_repeats=optimal, recommended=checked, cost=cost, reasons=reasons,
                  cost_model=model.to_json(), uncertainty=uncertainty,
                  type1_small_k=type1_small_k(grid, boot, plan), observed_effect=comps.panel_mean)


def _simulated_power(comps: Any, groups: list[np.ndarray], plan: PlanParams, k: int, r: int, effect: float,
                     resampling: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both effects (0 and ``effect``) of one (K, R) design, seeded by (K, R) alone (so the parametric
    draws are the same with and without the resampling variant: they come first in the stream)."""
    cell_plan = plan.replace(configurations=(k,), repeats=(r,), effects=(0.0, effect))
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(plan.seed, spawn_key=(1, k, r))))
    return simulate_grid(comps, groups, cell_plan, rng, resampling=resampling, signflip=False)


def _at(frame: pl.DataFrame, e: float, col: str) -> float:
    return float(frame.filter(pl.col("effect") == e)[col][0])


def _checked(rec: dict[str, Any], comps: Any, groups: list[np.ndarray], plan: PlanParams, grid: pl.DataFrame,
             boot: pl.DataFrame, progress: Callable[[str], None] | None,
             model: CostModel | None = None, per_repeat: Any = None) -> dict[str, Any]:
    """A recommendation checked by the package's own simulation (analysis.plan.advice module note).

    The closed-form design is simulated (parametric variant, the missing-row rates drawn); when its
    simulated power falls short of target_power by more than its Monte Carlo standard error, K steps
    up at the same R (to the closed form's K for the target plus the shortfall, at least K + 1), then
    bisects back between the last K below and the first that reaches it, at most
    PlanParams.check_steps_max simulations in all. The design reported is the smallest K so found
    that reaches the target in the simulation, with both variants and its simulated type-I rate;
    `simulated.reached` is False (and `simulated.reason` says so) when it stays short by more than
    one MC s.e. after the
    steps ran out."""
    out = dict(rec)
    effect = float(rec["effect"])
    out["disagreements"] = disagreements(grid, boot, effect, plan.disagreement)
    out["not_a_ci"] = NOT_CI
    if rec.get("configurations") is None or not grid.height:
        return out
    k0, r = int(rec["configurations"]), int(rec["repeats"])
    k, steps, below = k0, 0, 0
    missing = missing_of(comps)

    def reaches(kk: int) -> tuple[bool, float]:
        power = _at(_simulated_power(comps, groups, plan, kk, r, effect, resampling=False)[0], effect, "power")
        return power >= plan.target_power, power
    par, res = _simulated_power(comps, groups, plan, k, r, effect, resampling=True)
    power = _at(par, effect, "power")
    ok = power >= plan.target_power
    short = power + math.sqrt(power * (1.0 - power) / plan.sims) < plan.target_power   # by more than MC error
    while short and not ok and steps < plan.check_steps_max:
        below = k
        aim = min(0.999, plan.target_power + (plan.target_power - power))
        k_next = int(smallest_k(comps.tau2, comps.sigma2_within, np.array([r]), effect, plan.alpha, aim,
                                max(plan.k_search_max, 4 * k), missing)[0])
        k, steps = max(k + 1, k_next), steps + 1
        ok, power = reaches(k)
    while ok and below and k - below > 1 and steps < plan.check_steps_max:   # back to the smallest K that reaches
        mid = (below + k) // 2
        hit, _ = reaches(mid)
        steps += 1
        if hit:
            k = mid
        else:
            below = mid
    if k != k0:
        par, res = _simulated_power(comps, groups, plan, k, r, effect, resampling=True)
    if progress:
        progress(f"plan: simulated the recommended design K={k} R={r} at effects 0 and {effect:+g}"
                 + (f" (K stepped up from the closed form's {k0} in {steps} steps)" if steps else ""))
    reached = _at(par, effect, "power") + _at(par, effect, "power_mcse") >= plan.target_power
    if k != k0:
        pcf, hcf = closed_form(comps.tau2, comps.sigma2_within, k, r, effect, plan.alpha, missing)
        out.update(configurations=k, power_closed_form=float(pcf), halfwidth_closed_form=float(hcf),
                   rows=2 * k * r)
        if model is not None:
            out["cost"] = float(model.cost(float(k), float(r)))
            if "money" in out:
                out["money"] = out["cost"]
        if per_repeat is not None and "hours_sequential" in out:
            out["hours_sequential"] = k * r * per_repeat["mean_seconds"] / 3600.0
    out["closed_form_design"] = {"configurations": k0, "repeats": r, "power_closed_form": rec["power_closed_form"],
                                 "cost": rec["cost"]}
    out["simulated"] = {"power_parametric": _at(par, effect, "power"), "power_resampling": _at(res, effect, "power"),
                        "power_parametric_mcse": _at(par, effect, "power_mcse"),
                        "power_resampling_mcse": _at(res, effect, "power_mcse"),
                        "power_mcse": max(_at(par, effect, "power_mcse"), _at(res, effect, "power_mcse")),
                        "type1_parametric": _at(par, 0.0, "power"), "type1_resampling": _at(res, 0.0, "power"),
                        "type1_mcse": max(_at(par, 0.0, "power_mcse"), _at(res, 0.0, "power_mcse")),
                        "sims": plan.sims, "steps": steps, "reached": reached,
                        "rule": ("the closed-form design (missing rows counted) simulated with the parametric "
                                 "variant; where it falls short of the target by more than one MC s.e., K stepped up "
                                 "at the same R until the simulated power reaches the target")}
    if not reached:
        out["simulated"]["reason"] = (f"the simulated power stays below {plan.target_power:g} by more than its MC "
                                      f"s.e. after {steps} steps up in K (PlanParams.check_steps_max)")
    return out


def design_uncertainty(package: Any, comps: Any, groups: list[np.ndarray], plan: PlanParams,
                       model: CostModel) -> dict[str, Any]:
    """tau2 by ANOVA and REML with its interval under every pairing, and the designs they give.

    The uncertainty is crossed: under each pairing of j and q rows (shipped, sorted, one seeded
    random draw, reversed) the components by ANOVA, by REML, and at both ends of REML's profile
    interval of tau2 (with that pairing's REML sigma2_within); the range is over all of them.
    Sorted and reversed are the least and largest within sum of squares of any pairing, so the
    other pairings' components lie between theirs (analysis.estimators.variance_uncertainty)."""
    study = package.study
    tau = tau2_uncertainty_groups(groups, plan.tau2_level)
    prng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(plan.seed, spawn_key=(2,))))
    pairing = variance_pairing_range(package.rows, runs_frame(study), contrast_of(study),
                                     recency_cutoff=study.recency_cutoff, rng=prng, draws=plan.pairing_draws)
    kind = getattr(study, "kind", None)
    crossed = crossed_components(package, comps, groups, plan, tau, pairing)
    scenarios = [(f"{c['pairing']}: {name}", tau2, s2) for c in crossed for name, tau2, s2 in (
        ("ANOVA", c["anova"]["tau2"], c["anova"]["sigma2_within"]),
        ("REML", c["reml"]["tau2"], c["reml"]["sigma2_within"]),
        ("tau2 interval low", c["interval"][0], c["reml"]["sigma2_within"]),
        ("tau2 interval high", c["interval"][1], c["reml"]["sigma2_within"]))]
    ranges = design_ranges(scenarios, plan, model, missing_of(comps))
    return json_ready({
        "tau2": {"anova": comps.tau2, "reml": tau.tau2_reml, "sigma2_within_reml": tau.sigma2_within_reml,
                 "interval": [tau.tau2_lo, tau.tau2_hi], "level": tau.level, "method": tau.method,
                 "reasons": dict(tau.reasons)},
        "pairing": {"rows": [{"pairing": p.pairing, "sigma2_within": p.sigma2_within, "tau2": p.tau2,
                              "sigma2_within_range": [p.sigma2_within_lo, p.sigma2_within_hi],
                              "r_star": optimal_repeats(p.tau2, p.sigma2_within, model)["value"]}
                             for p in pairing.rows],
                    "random_expected_sigma2_within": pairing.random_expected, "draws": pairing.draws,
                    "range_level": RANDOM_RANGE_LEVEL,
                    "reasons": dict(pairing.reasons), "statement": pairing_statement(kind)},
        "crossed": crossed, "tau2_estimator": TAU2_CHOICE,
        **ranges})


def crossed_components(package: Any, comps: Any, groups: list[np.ndarray], plan: PlanParams, tau: Any,
                       pairing: Any) -> list[dict[str, Any]]:
    """Per pairing: ANOVA (tau2, sigma2_within), REML (tau2, sigma2_within) and REML's tau2 interval."""
    if not pairing.rows:
        return [{"pairing": "shipped", "anova": {"tau2": comps.tau2, "sigma2_within": comps.sigma2_within},
                 "reml": {"tau2": tau.tau2_reml, "sigma2_within": tau.sigma2_within_reml},
                 "interval": [tau.tau2_lo, tau.tau2_hi]}]
    study = package.study
    outcomes, total = pair_outcomes(package.rows, runs_frame(study), contrast_of(study),
                                    recency_cutoff=study.recency_cutoff)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(plan.seed, spawn_key=(3,))))
    out = []
    for row in pairing.rows:
        if row.pairing == "shipped":
            t = tau
        else:
            t = tau2_uncertainty_groups(pairing_groups(outcomes, total, row.pairing, rng), plan.tau2_level)
        out.append({"pairing": row.pairing if row.pairing != "random" else "random (one seeded draw for REML)",
                    "anova": {"tau2": row.tau2, "sigma2_within": row.sigma2_within},
                    "reml": {"tau2": t.tau2_reml, "sigma2_within": t.sigma2_within_reml},
                    "interval": [t.tau2_lo, t.tau2_hi]})
    return out


def pairing_statement(kind: str | None) -> str:
    """Why the pairing range is shown, by what the study.toml says the evidence is."""
    if kind == "reconstruction":
        return ("The paper prints how many j and q rows of a configuration passed, not which j row went with "
                "which q row; the reconstruction places each arm's paired rows on repeats 1, 2, ... in the order "
                "its row rule lays them out (mostly largest first, some rows moved ahead by a heading rule), so the "
                "shipped pairing is near the sorted one but not equal to it (compare their sigma2_within). "
                "sigma2_within, tau2 and R* depend on that choice, so they are shown under the shipped, sorted, "
                "random and reversed pairings; the recommendation uses the shipped pairing and the range crosses "
                "every pairing with REML and its tau2 interval.")
    return ("The rows of one repeat of both arms were run together, so the pairing by repeat is the data; "
            "the re-paired values are shown only as a sensitivity (how much of sigma2_within comes from the "
            "pairing), and the recommendation uses the study's own pairing.")


def components_json(design: Design) -> dict[str, Any]:
    c = design.components
    return json_ready({
        "tau2": c.tau2, "tau2_untruncated": c.tau2_untruncated, "tau2_truncated": c.tau2_truncated,
        "sigma2_within": c.sigma2_within, "icc": c.icc, "design_effect": c.design_effect,
        "icc_rows": c.icc_rows, "checks_total": c.checks_total,
        "missing_rate": c.missing_rate(), "missing": [m for m in c.missing],
        "configurations": c.configurations, "pairs": c.pairs, "within_df": c.within_df,
        "pairs_per_configuration": list(c.pairs_per_configuration), "panel_mean": c.panel_mean,
        "msb": c.msb, "msw": c.msw, "n0": c.n0, "method": c.method, "reasons": dict(c.reasons),
        "contrast": c.contrast})


def design_json(design: Design, evidence: dict[str, Any]) -> dict[str, Any]:
    """The design.json document (docs/RESULTS_KEYS.md, section design.json)."""
    p = design.plan
    cols = ["configurations", "repeats", "effect", "power", "power_mcse", "power_closed_form",
            "halfwidth_median", "power_signflip", "power_signflip_mcse", "halfwidth_closed_form",
            "panel_configurations_mean"]

    def rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
        return json_ready(frame.select(cols)) if frame.height else []
    return json_ready({
        "version": DESIGN_VERSION, "evidence": evidence,
        "variance_components": components_json(design),
        "grid": rows(design.grid), "grid_resampling": rows(design.grid_resampling),
        "alpha": p.alpha, "sims": p.sims, "seed": p.seed, "target_power": p.target_power,
        "signflip": {"exact_max_configurations": p.signflip_exact_max, "patterns_above": p.signflip_patterns},
        "required_configurations": design.required, "optimal_repeats": design.optimal_repeats,
        "recommended": list(design.recommended), "cost": design.cost, "reasons": dict(design.reasons),
        "cost_model": dict(design.cost_model), "uncertainty": dict(design.uncertainty),
        "type1_small_k": design.type1_small_k, "observed_effect": design.observed_effect,
        "effect_name": effect_name(design),
        "label": "ours, not the paper's: a planning calculation from the fitted components",
    })


def power_table(design: Design) -> pl.DataFrame:
    """Grid table: both variants side by side with the closed form."""
    if not design.grid.height:
        return pl.DataFrame()
    b = design.grid_resampling.select("configurations", "repeats", "effect",
                                      pl.col("power").alias("power_resampling"))
    return (design.grid.select("configurations", "repeats", "effect", "power", "power_mcse",
                               "power_signflip", "power_closed_form", "halfwidth_median")
            .join(b, on=["configurations", "repeats", "effect"], how="left")
            .sort("effect", "repeats", "configurations"))


def write_plan(design: Design, out: Path, evidence: dict[str, Any], lines: list[str] | None = None) -> list[Path]:
    """Write OUT/design.json, OUT/design.md (the console summary), OUT/design_power.csv|md|png|svg."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    doc = design_json(design, evidence)
    p = out / DESIGN_NAME
    write_json(p, doc)
    paths.append(p)
    p = out / "design.md"
    write_text(p, design_markdown(design, summary_lines(design) if lines is None else lines))
    paths.append(p)
    table = power_table(design)
    if table.height:
        p = out / "design_power.csv"
        write_text(p, table.write_csv())
        paths.append(p)
        p = out / "design_power.md"
        write_text(p, "# Power of each simulated design\n\n" + power_legend(table.columns, effect_name(design))
                   + markdown_table(table))
        paths.append(p)
        fig = power_figure(design)
        for suffix in ("png", "svg"):
            p = out / f"design_power.{suffix}"
            buf = io.BytesIO()
            fig.savefig(buf, format=suffix, dpi=120, metadata={"Date": None} if suffix == "svg" else {})
            write_bytes(p, buf.getvalue())
            paths.append(p)
    return paths


def markdown_table(table: pl.DataFrame) -> str:
    """A plain Markdown pipe table of numbers (3 decimals)."""
    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return "—"
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    head = "| " + " | ".join(table.columns) + " |\n| " + " | ".join("---" for _ in table.columns) + " |\n"
    return head + "".join("| " + " | ".join(cell(v) for v in row) + " |\n" for row in table.iter_rows())
