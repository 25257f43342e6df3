"""The plan's figure (design_power.png|svg): power against K per effect, and power against the effect.

Reference lines are labelled (target power, alpha), the recommended designs are marked, the
evidence's observed effect (its equal-configuration mean paired difference, treatment - control,
read from the design, never typed) is drawn on the last panel, and the figure has one legend.
Artists carry gids (target-power, alpha, recommended, observed-effect) so the SVG names them. A label sits
beside its star, never on it; a recommended K outside the K grid the user asked for is said in words in its
panel (gid recommended-beyond), not drawn beyond the grid. Text is at least 8 pt.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from analysis.plan.advice import missing_of
from analysis.plan.simulate import closed_form


def effect_name(design: Any) -> str:
    """'exact-recall difference q − j' for the design's contrast."""
    c = design.components.contrast
    return f"exact-recall difference {c.treatment} − {c.control}"


def _arm_key(design: Any) -> str:
    """What the contrast's arm codes mean (their titles in the runner's arms.toml): ``j: Dedicated schema, …``."""
    from analysis.runner.arms import load_arms

    arms = load_arms()
    c = design.components.contrast
    return "; ".join(f"{a}: {arms[a].title}" if a in arms else a for a in (c.control, c.treatment))


def power_figure(design: Any) -> Any:
    """Power against K, one panel per effect, one line per R; then power against the true effect."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    plan = design.plan
    effects = list(plan.effects)
    name = effect_name(design)
    fig = Figure(figsize=(3.0 * (len(effects) + 1), 3.9), layout="constrained")
    axes = fig.subplots(1, len(effects) + 1, sharey=True, squeeze=False)[0]
    colors: dict[int, Any] = {}
    recs = {float(r["effect"]): r for r in design.recommended if r.get("configurations") is not None}
    for ax, effect in zip(axes, effects, strict=False):
        for r in plan.repeats:
            g = design.grid.filter((pl.col("effect") == effect) & (pl.col("repeats") == r)).sort("configurations")
            if not g.height:
                continue
            line = ax.errorbar(g["configurations"], g["power"], yerr=1.96 * g["power_mcse"], marker="o", ms=3,
                               color=colors.get(r))
            colors[r] = line[0].get_color()
            ax.plot(g["configurations"], g["power_closed_form"], ls="--", color=colors[r], lw=0.8)
        rec = recs.get(float(effect))
        if rec and min(plan.configurations) <= rec["configurations"] <= max(plan.configurations):
            ax.plot([rec["configurations"]], [rec["power_closed_form"]], marker="*", ms=12, color="black",
                    ls="none", gid="recommended")
            # beside the star, never on it: right-aligned text ending 10 points left of its centre
            ax.annotate(f"K={rec['configurations']}, R={rec['repeats']}", (rec["configurations"],
                        rec["power_closed_form"]), textcoords="offset points", xytext=(-10, 0), ha="right",
                        va="center", fontsize=8)
        elif rec:  # outside the K the user asked to see: said in words, not drawn beyond the grid
            ax.text(0.03, 0.97, f"recommended K={rec['configurations']}, R={rec['repeats']}\n(beyond the K grid)",
                    transform=ax.transAxes, ha="left", va="top", fontsize=8, gid="recommended-beyond")
        ax.set_xscale("log")
        ax.set_xticks(list(plan.configurations), [str(k) for k in plan.configurations])
        ax.minorticks_off()
        ax.set_title(f"true effect {effect:+g}", fontsize=9)
        ax.set_xlabel("configurations K")
    axes[0].set_ylabel("power (dispersion interval excludes 0)")
    last = axes[-1]
    top = max([abs(e) for e in effects] + [abs(design.observed_effect) if math.isfinite(design.observed_effect)
                                           else 0.0, 0.05]) * 1.4
    xs = np.linspace(-top if any(e < 0 for e in effects) else 0.0, top, 121)
    for i, rec in enumerate(sorted(recs.values(), key=lambda r: r["effect"])):
        power = [float(closed_form(design.components.tau2, design.components.sigma2_within, rec["configurations"],
                                   rec["repeats"], float(x), plan.alpha, missing_of(design.components))[0])
                 for x in xs]
        last.plot(xs, power, color="black", lw=1.0, alpha=0.35 + 0.65 * abs(rec["effect"]) / top)
        last.plot([rec["effect"]], [rec["power_closed_form"]], marker="*", ms=12, color="black", ls="none",
                  gid="recommended")
        # neighbouring stars sit at one power and close in effect: labels alternate above and below their star,
        # centred, so no label runs into the next star or the next label
        above = i % 2 == 0
        last.annotate(f"K={rec['configurations']}, R={rec['repeats']}", (rec["effect"], rec["power_closed_form"]),
                      textcoords="offset points", xytext=(0, 9 if above else -9), ha="center",
                      va="bottom" if above else "top", fontsize=8)
    if math.isfinite(design.observed_effect):
        last.axvline(design.observed_effect, color="tab:red", lw=1.0, ls="-.", gid="observed-effect")
        last.text(design.observed_effect, 0.5, f" observed {design.observed_effect:+.3f}", color="tab:red",
                  fontsize=8, rotation=90, va="center", ha="right")
    last.set_title("recommended designs", fontsize=9)
    last.set_xlabel(f"true effect ({name})")
    for ax in axes:
        ax.axhline(plan.target_power, color="grey", lw=0.6, gid="target-power")
        ax.axhline(plan.alpha, color="grey", lw=0.6, ls=":", gid="alpha")
    axes[0].text(0.02, plan.target_power, f"target power {plan.target_power:g}",
                 transform=axes[0].get_yaxis_transform(), va="bottom", fontsize=8, color="dimgrey")
    axes[0].text(0.02, plan.alpha, f"alpha {plan.alpha:g}", transform=axes[0].get_yaxis_transform(), va="bottom",
                 fontsize=8, color="dimgrey")
    handles = [Line2D([], [], color=c, marker="o", ms=3, label=f"R = {r} (simulated, 95% MC band)")
               for r, c in colors.items()]
    handles += [Line2D([], [], color="black", ls="--", lw=0.8, label="closed form (noncentral t)"),
                Line2D([], [], color="black", marker="*", ms=10, ls="none", label="recommended (cheapest) design"),
                Line2D([], [], color="grey", lw=0.6, label=f"target power {plan.target_power:g}"),
                Line2D([], [], color="grey", lw=0.6, ls=":", label=f"alpha {plan.alpha:g}")]
    if math.isfinite(design.observed_effect):
        handles.append(Line2D([], [], color="tab:red", ls="-.", label=f"observed effect in the evidence "
                                                                        f"({name}, equal-configuration mean)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(f"Power of a v2 study: effect = {name}\n{_arm_key(design)}", fontsize=10)
    return fig
