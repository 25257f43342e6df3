"""`python generate.py plan`: compute a design from evidence and write design.json, figure, table, section.

Only `write_plan` writes files; `make_design` computes, `design_json`/`power_table` build data and
`power_figure` returns a matplotlib Figure.
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
from analysis.params import PlanParams
from analysis.plan.cost import Price, cell_cost, repeat_cost, row_tokens
from analysis.plan.design import (
    Design,
    optimal_repeats,
    recommend,
    required_configurations,
    simulate_grid,
)
from analysis.safeio import write_bytes, write_json, write_text

DESIGN_NAME = "design.json"
"""File the plan writes into OUT; a main build whose OUT holds it gains the 'Designing v2' section."""
DESIGN_VERSION = 1


def make_design(package: Any, plan: PlanParams, *, prices: Sequence[Price] | None = None,
                fixture: Any = None, cost_ratio: float | None = None,
                progress: Callable[[str], None] | None = None) -> Design:
    """Fit the components of `package` and compute the whole design (no I/O)."""
    study = package.study
    contrast = contrast_of(study)
    runs = runs_frame(study)
    comps = variance_components(package.rows, runs, contrast, recency_cutoff=study.recency_cutoff,
                                checks=package.checks)
    groups = list(difference_groups(package.rows, runs, contrast, recency_cutoff=study.recency_cutoff).values())
    ratio = plan.cost_ratio if cost_ratio is None else cost_ratio
    optimal = optimal_repeats(comps, ratio)
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
                    "cells": [{"configurations": k, "repeats": r, **cell_cost(k, r, per_repeat)}
                              for k in plan.configurations for r in plan.repeats]}
    if math.isfinite(comps.tau2) and math.isfinite(comps.sigma2_within):
        rng = np.random.Generator(np.random.PCG64(plan.seed))
        grid, boot = simulate_grid(comps, groups, plan, rng, progress=progress)
        required = required_configurations(comps, grid, plan)
    else:
        grid = boot = pl.DataFrame()
        required = {}
        reasons["grid"] = ("cannot simulate: " + (comps.reasons.get("tau2") or comps.reasons.get("sigma2_within")
                                                  or "variance components undefined"))
    recs, why = recommend(comps, plan, optimal, per_repeat)
    if why:
        reasons["recommended"] = f"cannot recommend a design: {why}"
    return Design(components=comps, plan=plan, grid=grid, grid_resampling=boot, required=required,
                  optimal_repeats=optimal, recommended=recs, cost=cost, reasons=reasons)


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


def power_figure(design: Design) -> Any:
    """Power against K, one panel per effect, one line per R (simulated, closed form dashed)."""
    from matplotlib.figure import Figure

    effects = [e for e in design.plan.effects]
    fig = Figure(figsize=(3.2 * len(effects), 3.2), layout="constrained")
    axes = fig.subplots(1, len(effects), sharey=True, squeeze=False)[0]
    for ax, effect in zip(axes, effects, strict=True):
        for r in design.plan.repeats:
            g = design.grid.filter((pl.col("effect") == effect) & (pl.col("repeats") == r)).sort("configurations")
            if not g.height:
                continue
            line = ax.errorbar(g["configurations"], g["power"], yerr=1.96 * g["power_mcse"], marker="o",
                               ms=3, label=f"R={r}")
            ax.plot(g["configurations"], g["power_closed_form"], ls="--", color=line[0].get_color(), lw=0.8)
        ax.axhline(design.plan.target_power, color="grey", lw=0.6)
        ax.axhline(design.plan.alpha, color="grey", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_xticks(list(design.plan.configurations), [str(k) for k in design.plan.configurations])
        ax.minorticks_off()
        ax.set_title(f"effect {effect:+g}")
        ax.set_xlabel("configurations K")
    axes[0].set_ylabel("power (dispersion interval excludes 0)")
    axes[-1].legend(fontsize=7, title="dashed: closed form", title_fontsize=6)
    return fig


def write_plan(design: Design, out: Path, evidence: dict[str, Any]) -> list[Path]:
    """Write OUT/design.json, OUT/design_power.csv|md and OUT/design_power.png|svg."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    doc = design_json(design, evidence)
    p = out / DESIGN_NAME
    write_json(p, doc)
    paths.append(p)
    table = power_table(design)
    if table.height:
        p = out / "design_power.csv"
        write_text(p, table.write_csv())
        paths.append(p)
        p = out / "design_power.md"
        write_text(p, markdown_table(table))
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
