"""Survival of graded values: Kaplan–Meier curves per arm and where values are lost (issue 14).

Methods note: the data are the survival table's (analysis.tables.survival.survival_source: the
evidence when it has folds.jsonl, else the v2 pilot). Left: Kaplan–Meier survival of captured
values by folds since entry (time to the first loss), one step line per arm with its 1 - alpha interval
shaded, the row taken as the cluster (analysis.estimators.survival); the legend gives the rows and
the values at risk at entry (an arm with no captured value is listed in the panel instead of
drawn). Right: every value with an entry fold, per arm, in exclusive classes: not captured at
entry (entry fold did not parse / appeared at a later fold / other), first lost at a clipped fold,
at a parse failure (not clipped), at another fold (a lost value back in the final carrier stays
here), or never lost. The classes of captured values add up to the captured count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from matplotlib.ticker import MaxNLocator

from analysis.estimators.survival import curves_reason
from analysis.figures.common import FigureSpec, arm_key, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.results.extras import FACT_SURVIVAL_REGISTRATION
from analysis.results.pilot import V2_PILOT_REGISTRATION
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.spec import plural_noun
from analysis.tables.survival import level_text, survival_source


def _n(x: Any, noun: str) -> str:
    """``1 row``, ``3 rows``: a count with its noun in agreement (the KM legend)."""
    return f"{int(x)} {plural_noun(int(x), noun)}"

MAX_FOLD_TICKS = 20
"""Most x ticks of the Kaplan–Meier panel: one per fold up to this many folds, then an integer locator."""
CLASSES = (
    ("not captured: entry fold did not parse", "vermillion"),
    ("not captured: appeared at a later fold", "grey"),
    ("not captured: other", "orange"),
    ("lost at a clipped fold", "purple"),
    ("lost at a parse failure", "yellow"),
    ("lost at another fold", "sky"),
    ("never lost", "green"),
)


def loss_classes(facts: pl.DataFrame) -> pl.DataFrame:
    """Per arm, the count of values in each exclusive class of :data:`CLASSES` (values with an entry fold)."""
    f = facts.filter(pl.col("entry_fold").is_not_null())
    cap = pl.col("captured").fill_null(False)
    ev = pl.col("event").fill_null(False)
    clip = pl.col("loss_clipped").fill_null(False)
    cls = (pl.when(~cap & pl.col("entry_parse_failed").fill_null(False)).then(pl.lit(CLASSES[0][0]))
           .when(~cap & pl.col("appeared_late").fill_null(False)).then(pl.lit(CLASSES[1][0]))
           .when(~cap).then(pl.lit(CLASSES[2][0]))
           .when(ev & clip).then(pl.lit(CLASSES[3][0]))
           .when(ev & pl.col("loss_parse_failed").fill_null(False)).then(pl.lit(CLASSES[4][0]))
           .when(ev).then(pl.lit(CLASSES[5][0]))
           .otherwise(pl.lit(CLASSES[6][0])))
    return f.with_columns(cls.alias("class")).group_by("arm", "class").len().sort("arm", "class")


def set_fold_ticks(ax: Any, top: int) -> None:
    """One x tick per fold while at most :data:`MAX_FOLD_TICKS`; past that a capped integer locator,
    so a row with 1,000,000 folds draws as fast as one with 20 (ticks cost time linear in their number)."""
    if top <= MAX_FOLD_TICKS:
        ax.set_xticks(range(max(top, 1) + 1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=MAX_FOLD_TICKS, integer=True))


@figure(section="survival", reads=(FACT_SURVIVAL_REGISTRATION, V2_PILOT_REGISTRATION))
def fact_survival(ctx: ReportContext) -> FigureSpec:
    """Kaplan–Meier survival per arm and where values are lost."""
    title = "Survival of graded values across folds, and where they are lost"
    with style():
        src = survival_source(ctx)
        if isinstance(src, str):
            return FigureSpec("fact_survival", title, empty_figure(title, src), f"Not in this evidence: {src}", src)
        s, label, package = src.survival, src.label, src.package
        why = curves_reason(s.km)
        if why:  # no curve is estimable: the figure is left out and one sentence says why
            reason = f"No survival curve is estimated: {why}"
            return FigureSpec("fact_survival", title, empty_figure(title, reason), reason, reason)
        facts = src.timeline.facts.join(package.rows.select("row_id", "arm"), on="row_id", how="inner")
        facts = facts.filter(pl.col("row_id").is_in(
            package.rows.filter(pl.col("valid").fill_null(False) & (pl.col("scenario") == s.contrast.scenario))
            .get_column("row_id").implode()))
        arms = s.arms.get_column("arm").to_list()
        palette = list(OKABE_ITO.values())
        fig, (ax, bx) = new_figure(2, height=4.6)
        missing = []
        for i, arm in enumerate(arms):
            km = s.km.filter(pl.col("arm") == arm)
            if km.height == 0:
                r = s.arms.filter(pl.col("arm") == arm).row(0, named=True)
                missing.append(f"{arm}: {r['captured']} of {r['entered']} captured")
                continue
            colour = palette[i % len(palette)]
            ax.fill_between(km["folds_since_entry"], km["ci_rows_lo"], km["ci_rows_hi"], step="post",
                            color=colour, alpha=0.15, linewidth=0)
            ax.step(km["folds_since_entry"], km["survival"], where="post", color=colour,
                    label=f"{arm} (n = {_n(km['at_risk_rows'][0], 'row')}, {_n(km['at_risk'][0], 'value')})")
        if missing:
            ax.text(0.03, 0.05, "No curve (no value captured at entry):\n" + "\n".join(missing),
                    transform=ax.transAxes, fontsize=8, va="bottom")
        ax.set_ylim(-0.03, 1.05)
        top = int(facts.get_column("distance").fill_null(0).to_numpy().max(initial=1))
        ax.set_xlim(-0.1, max(top, 1) + 0.1)
        set_fold_ticks(ax, top)
        ax.set_xlabel("folds since entry")
        ax.set_ylabel("share of captured values never lost")
        ax.set_title(f"Kaplan–Meier, {label}")
        if len(missing) < len(arms):  # below the axes: a legend inside would cover a curve near 0 or 1
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, title_fontsize=8,
                      title=f"shaded: {level_text(ctx.params)} interval, rows as clusters")
        counts = loss_classes(facts)
        y = np.arange(len(arms))
        left = np.zeros(len(arms))
        for name, colour in CLASSES:
            vals = np.array([counts.filter((pl.col("arm") == a) & (pl.col("class") == name))["len"].sum()
                             for a in arms], dtype=float)
            bx.barh(y, vals, left=left, color=OKABE_ITO[colour], label=name)
            left += vals
        bx.set_yticks(y, arms)
        bx.invert_yaxis()
        bx.set_xlabel("graded values (all rows)")
        bx.set_title("Where values end up")
        bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, ncol=1)
        fig.supxlabel(arm_key(*arms), fontsize=8.5)
    alt = (f"Left: Kaplan–Meier survival of captured graded values by folds since entry (time to the first "
           f"loss), per arm ({label}), shaded with the {level_text(ctx.params)} interval that takes the row as the "
           "cluster; the legend "
           "gives the rows and values at risk at entry. Right: stacked bars per arm of values not captured at "
           "entry (entry fold did not parse, appeared at a later fold, other), first lost at clipped folds, at "
           "parse failures or elsewhere (also when back in the final carrier), and never lost.")
    return FigureSpec("fact_survival", title, fig, alt)
