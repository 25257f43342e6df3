"""Recall per arm with its Clopper–Pearson interval (ours): a dot per arm at its pooled check recall, a
horizontal bar for its exact binomial interval at the analysis level. The numbers are the results block
``arm_recall`` (analysis.estimators.arm_recall, computed once); nothing is recomputed. The interval treats
an arm's checks as independent (see that module's methods note); an arm without a graded check is named on
the axis with no dot.
"""

from __future__ import annotations

from analysis.estimators.arm_recall import ARM_RECALL_REGISTRATION
from analysis.figures.common import FigureSpec, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.labels import arm_label

NAME = "arm_recall"
TITLE = "Recall of each arm with its exact binomial interval"


@figure(section="beyond", reads=(ARM_RECALL_REGISTRATION,))
def arm_recall(ctx: ReportContext) -> FigureSpec:
    """Pooled check recall of every arm on the primary scenario with its Clopper–Pearson interval."""
    with style():
        value = ctx.estimates.block_value(ARM_RECALL_REGISTRATION)
        arms = (value or {}).get("arms") or []
        if not any(a["checks"] for a in arms):
            why = "no valid row with graded checks on the primary scenario"
            return FigureSpec(NAME, TITLE, empty_figure(TITLE, why), f"Not in this evidence: {why}", why)
        level = f"{100 * value['nominal']:.0f}%"
        ys = list(range(len(arms)))[::-1]  # first arm on top
        fig, (ax,) = new_figure(height=max(2.4, 0.32 * len(arms) + 1.2))
        shown = [(y, a) for y, a in zip(ys, arms, strict=True) if a["recall"] is not None]
        ax.hlines([y for y, _ in shown], [a["lo"] for _, a in shown], [a["hi"] for _, a in shown],
                  color=OKABE_ITO["blue"], linewidth=2)
        ax.plot([a["recall"] for _, a in shown], [y for y, _ in shown], "o", color=OKABE_ITO["vermillion"])
        ax.set_yticks(ys, [arm_label(a["arm"]) if a["recall"] is not None else f"{arm_label(a['arm'])} (no check)"
                           for a in arms])
        ax.set_xlim(-0.02, 1.02)  # a dot at 0 or 1 stays whole
        ax.set_xlabel(f"exact recall on {value['scenario']} (checks passed / graded checks)\n"
                      f"bars: {level} Clopper–Pearson interval")
        fig.suptitle(TITLE)  # over the whole figure: the arm labels leave the axes narrow
        ax.grid(axis="x")
    alt = (f"Dot plot of pooled check recall for {len(shown)} arms on {value['scenario']}, each with a horizontal "
           f"bar for its {level} exact binomial interval: " +
           "; ".join(f"{a['arm']} {a['recall']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}]" for _, a in shown) + ".")
    return FigureSpec(NAME, TITLE, fig, alt)
