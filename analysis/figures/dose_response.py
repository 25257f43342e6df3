"""Recall against load over the load ladder: one line per arm with its interval (issue 24).

One panel per load factor that the rungs vary (graded values per chunk, distractors, tokens per
chunk, folds); the base rung sits on every axis at its own level. The numbers are the
``dose_response`` block the results stage computed once (the evidence's, else the companion pilot's),
read through analysis.tables.dose_response.dose_source; nothing is recomputed.
"""

from __future__ import annotations

from typing import Any

from analysis.figures.common import FigureSpec, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.results.extras import DOSE_RESPONSE_REGISTRATION
from analysis.results.pilot import V2_PILOT_REGISTRATION
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.dose_response import FACTOR_NAMES, dose_source, pilot_dose_block
from analysis.tables.labels import arm_label

TITLE = "Recall against load on the load ladder, per arm, with 95% intervals"
AXIS_ORDER = ("graded_per_chunk", "distractors", "chunk_tokens", "folds")


def _panels(rungs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(factor, rungs on that axis sorted by the factor) for every factor the rungs vary."""
    axes = [a for a in AXIS_ORDER if any(r["axis"] == a for r in rungs)]
    if not axes:  # one rung, or only rungs differing in several factors: order of the ladder
        return [("rung", rungs)]
    out = []
    for a in axes:
        on = [r for r in rungs if r["axis"] in (a, "base")]
        out.append((a, sorted(on, key=lambda r: r[a])))
    return out


@figure(section="dose_response", reads=(DOSE_RESPONSE_REGISTRATION, V2_PILOT_REGISTRATION))
def dose_response(ctx: ReportContext) -> FigureSpec:
    """Mean exact recall per rung and arm with its interval, one panel per load factor."""
    with style():
        src = dose_source(ctx.estimates.block_value(DOSE_RESPONSE_REGISTRATION), pilot_dose_block(ctx))
        if isinstance(src, str):
            return FigureSpec("dose_response", TITLE, empty_figure(TITLE, src), f"Not in this evidence: {src}", src)
        label, block = src
        rungs = list(block["rungs"])
        arms = list(dict.fromkeys(a for r in rungs for a in r["arms"]))
        panels = _panels(rungs)
        palette = list(OKABE_ITO.values())
        fig, axes = new_figure(len(panels), height=3.2, width=max(4.0, 3.2 * len(panels)))
        for ax, (factor, on) in zip(axes, panels, strict=True):
            xs = list(range(len(on)))
            for i, arm in enumerate(arms):
                pts = [(x, r["arms"].get(arm) or {}) for x, r in zip(xs, on, strict=True)]
                pts = [(x, c) for x, c in pts if c.get("recall") is not None]
                if not pts:
                    continue
                shift = (i - (len(arms) - 1) / 2) * 0.08
                x = [p[0] + shift for p in pts]
                y = [p[1]["recall"] for p in pts]
                lo = [p[1]["recall"] - (p[1]["lo"] if p[1].get("lo") is not None else p[1]["recall"]) for p in pts]
                hi = [(p[1]["hi"] if p[1].get("hi") is not None else p[1]["recall"]) - p[1]["recall"] for p in pts]
                ax.errorbar(x, y, yerr=[lo, hi], color=palette[i % len(palette)], marker="o", capsize=3,
                            label=arm_label(arm))
            ticks = [str(r[factor]) if factor != "rung" else r["rung"] for r in on]
            ax.set_xticks(xs, ticks)
            ax.set_xlabel(FACTOR_NAMES.get(factor, factor))
            ax.set_ylim(-0.03, 1.05)
            ax.set_ylabel("mean exact recall")
        # outside the axes: recall near 0 or 1 would put the markers under an inside legend
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=len(arms), fontsize=7)
        fig.suptitle(f"Load ladder ({label})", fontsize=9)
    alt = (f"Mean exact recall per rung of the load ladder ({label}), one line per arm ({', '.join(arms)}) with "
           "Wilson intervals at n_eff = rows, one panel per load factor varied ("
           + ", ".join(FACTOR_NAMES.get(f, f) for f, _ in panels) + "); the values are in the dose-response table.")
    return FigureSpec("dose_response", TITLE, fig, alt)
