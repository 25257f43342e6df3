"""Panel figures: forest plot of per-configuration effects, the assigned-policy ladder, and the
sparse-cell / leave-one-out sensitivity.

Methods note: every plotted number is read from the typed estimates the results stage computed once
(``ctx.estimates``: the panel, its subsets, the bounds with their per-configuration rows, family weighting,
each configuration left out), the objects results.json serialises (panel, bounds_detail, sparse,
sensitivity, families), or from the table builders' full-precision frames; nothing is recomputed here.
"""

from __future__ import annotations

import numpy as np

from analysis.figures.common import FigureSpec, arm_key, empty_figure, new_figure, style
from analysis.figures.declare import figure
from analysis.results.core import (
    BOUNDS_DETAIL_REGISTRATION,
    BOUNDS_REGISTRATION,
    FAMILIES_REGISTRATION,
    PANEL_REGISTRATION,
    SENSITIVITY_REGISTRATION,
    SPARSE_REGISTRATION,
)
from analysis.results.inputs import CONTRACT_SPARSE_K
from analysis.style import OKABE_ITO
from analysis.tables.context import ReportContext
from analysis.tables.formatting import fmt_general, fmt_signed
from analysis.tables.panel import panel_effects_rows, summary_values
from analysis.tables.spec import defined


@figure(section="panel", reads=(PANEL_REGISTRATION, BOUNDS_DETAIL_REGISTRATION))
def forest(ctx: ReportContext) -> FigureSpec:
    """Per-configuration paired effects with pair counts, planned-repeat bounds, panel mean and
    dispersion interval."""
    s = ctx.study
    title = f"Paired effect {s.treatment}−{s.control} per configuration"
    with style():
        eff = panel_effects_rows(ctx.estimates.panel).drop_nulls("effect").sort("effect")
        if eff.height == 0:
            return FigureSpec("forest", title, empty_figure(title, "no panel configuration"),
                              "No panel configuration in this evidence.", "no panel configuration")
        summary = ctx.estimates.panel.summary
        per_bounds = {r["configuration"]: (defined(r["lo"]), defined(r["hi"]))
                      for r in ctx.estimates.bounds.per_configuration.iter_rows(named=True)}
        ci = ctx.estimates.configuration_intervals
        per_ci = {r["configuration"]: (defined(r["lo"]), defined(r["hi"])) for r in ci.frame.iter_rows(named=True)}
        n = eff.height
        height = max(2.4, 0.28 * n + 1.4)
        fig, (ax,) = new_figure(height=height)
        y = np.arange(n)
        lo_d, hi_d = defined(summary.dispersion_lo), defined(summary.dispersion_hi)
        if lo_d is not None and hi_d is not None:
            ax.axvspan(lo_d, hi_d, color=OKABE_ITO["sky"], alpha=0.18, lw=0,
                       label="dispersion interval of the panel mean")
        ax.axvline(0, color=OKABE_ITO["grey"], lw=0.8)
        mean = defined(summary.mean)
        if mean is not None:
            ax.axvline(mean, color=OKABE_ITO["blue"], lw=1.4, label=f"panel mean {fmt_signed(mean)}")
        ci_label: str | None = f"{fmt_general(100 * ci.level)}% t interval over the configuration's pairs"
        bound_label: str | None = "planned-repeat bounds (missing repeats at worst / best)"
        for i, conf in enumerate(eff["configuration"]):
            lo_b, hi_b = per_bounds.get(conf, (None, None))
            if lo_b is not None and hi_b is not None:
                ax.plot([lo_b, hi_b], [i, i], color=OKABE_ITO["orange"], lw=5, alpha=0.45, solid_capstyle="butt",
                        label=bound_label)
                bound_label = None
            lo_c, hi_c = per_ci.get(conf, (None, None))
            if lo_c is not None and hi_c is not None:
                ax.errorbar([(lo_c + hi_c) / 2], [i], xerr=[[(hi_c - lo_c) / 2]], fmt="none", ecolor=OKABE_ITO["black"],
                            elinewidth=1.0, capsize=2.5, label=ci_label)
                ci_label = None
        ax.scatter(eff["effect"], y, s=14 + 6 * eff["pairs"].to_numpy(), color=OKABE_ITO["black"],
                   zorder=3, label="paired effect (marker area ∝ pairs)")
        def has_ci(conf: str) -> bool:
            lo_c, hi_c = per_ci.get(conf, (None, None))
            return lo_c is not None and hi_c is not None

        labels = [f"{c}  (pairs {k}{'' if has_ci(c) else ', no interval'})"
                  for c, k in zip(eff["configuration"], eff["pairs"], strict=True)]
        if not all(has_ci(c) for c in eff["configuration"]):  # said, not left for the reader to guess
            ax.plot([], [], ls="none", label="no interval: not estimable (one pair, or every pair differs equally)")
        ax.set_yticks(y, labels)
        ax.set_xlim(-1.05, 1.05)  # a recall difference lies in [-1, 1]; so do its intervals and bounds
        ax.set_xlabel(f"mean within-repeat difference in exact recall ({s.treatment} minus {s.control})\n"
                      f"{arm_key(s.control, s.treatment)}")
        ax.set_title(title)
        fig.legend(loc="outside lower center", ncol=2)
        band = ("shaded band for the dispersion interval." if lo_d is not None and hi_d is not None else
                "no dispersion band: the interval is not estimable ("
                + (summary.reasons.get("dispersion_lo") or "undefined") + ").")
        if lo_d is None or hi_d is None:
            ax.text(0.01, 0.01, "dispersion interval not estimable", transform=ax.transAxes, fontsize=8,
                    va="bottom", color=OKABE_ITO["grey"])
        alt = (f"Dot plot of {n} configuration{'' if n == 1 else 's'}' paired effects sorted from lowest to "
               f"highest, each with its complete-pair count, its {fmt_general(100 * ci.level)}% t interval over its "
               "pairs "
               f"and its planned-repeat bounds; vertical line at the panel mean, {band}")
    return FigureSpec("forest", title, fig, alt)


@figure(section="arms")
def ladder(ctx: ReportContext) -> FigureSpec:
    """Mean recall of the three ladder rungs on every ladder endpoint, with row counts."""
    from analysis.tables.arm_means import ladder as ladder_table

    title = "Assigned-policy ladder: mean exact recall per arm"
    with style():
        t = ladder_table(ctx)
        if t.is_empty:
            reason = t.empty_reason.split(": ", 1)[-1]
            return FigureSpec("ladder", title, empty_figure(title, reason), t.empty_reason, reason)
        fig, (ax,) = new_figure(height=3.4)
        confs = sorted(set(t.data["configuration"]))
        colours = [OKABE_ITO[c] for c in ("blue", "orange", "green", "purple", "vermillion")]
        arms = list(t.data.filter(t.data["configuration"] == confs[0])["arm"])
        for k, conf in enumerate(confs):  # the arms are categories: points side by side, no joining line
            d = t.data.filter(t.data["configuration"] == conf)
            x = np.arange(d.height) + (k - (len(confs) - 1) / 2) * 0.12
            ax.plot(x, d["mean"], marker="o", ls="none", color=colours[k % len(colours)], label=conf)
            for xi, m, nrow in zip(x, d["mean"], d["rows"], strict=True):
                ax.annotate(f"n={nrow}", (xi, m), textcoords="offset points", xytext=(7, 0), va="center",
                            fontsize=8)
        ax.set_xticks(np.arange(len(arms)), [arm_key(a).replace(": ", "\n", 1) for a in arms])
        ax.set_xlim(-0.5, len(arms) - 0.5)
        ax.set_ylim(-0.05, 1.08)
        ax.set_xlabel("arm, in the ladder's order (control, treatment, plain headings)")
        ax.set_ylabel("mean exact recall")
        ax.set_title(title)
        ax.grid(axis="y")
        fig.legend(loc="outside lower center", ncol=min(3, len(confs)))  # outside: never over a point
    return FigureSpec("ladder", title, fig,
                      "Dot plot of mean recall for the control, treatment and plain-heading arms of the ladder, "
                      "one colour per ladder endpoint, each point labelled with its row count.")


@figure(section="panel", reads=(PANEL_REGISTRATION, SPARSE_REGISTRATION, BOUNDS_REGISTRATION, FAMILIES_REGISTRATION,
                SENSITIVITY_REGISTRATION))
def sensitivity(ctx: ReportContext) -> FigureSpec:
    """Panel mean under the sparse-cell populations, bounds and family weighting; leave-one-out means."""
    title = "Sensitivity of the panel mean"
    with style():
        p = summary_values(ctx.estimates.panel.summary)
        if not p["configurations"]:
            return FigureSpec("sensitivity", title, empty_figure(title, "no panel configuration"),
                              "No panel configuration in this evidence.", "no panel configuration")
        kblock = summary_values(ctx.estimates.sparse_contract.summary)
        equal = summary_values(ctx.estimates.equal_counts.summary)
        eff = panel_effects_rows(ctx.estimates.panel)
        multi = eff.filter(eff["pairs"] > 1)["effect"].drop_nulls()
        variants = [
            (f"all ({p['configurations']})", p["mean"]),
            (f"≥ {CONTRACT_SPARSE_K} pairs ({kblock['configurations']})", kblock["mean"]),
            (f"equal counts ({equal['configurations']})", equal["mean"]),
            (f"no single-pair ({multi.len()})", multi.mean() if multi.len() else None),
            ("family-weighted", defined(ctx.estimates.families.mean)),
        ]
        b = {"lo": defined(ctx.estimates.bounds.lo), "hi": defined(ctx.estimates.bounds.hi)}
        each = ctx.estimates.each_excluded
        loo = {name: {"mean": defined(m)} for name, m in zip(each.configurations, each.mean, strict=True)}
        fig, (ax1, ax2) = new_figure(2, width=8.6, height=max(3.6, 0.23 * len(loo) + 1.6))
        ys = np.arange(len(variants))[::-1]
        for yv, (_label, v) in zip(ys, variants, strict=True):
            if v is None:
                ax1.text(0, yv, "undefined", va="center", ha="center", color=OKABE_ITO["grey"], fontsize=8.5)
            else:
                ax1.plot([v], [yv], "o", color=OKABE_ITO["blue"])
        if b.get("lo") is not None and b.get("hi") is not None:
            ax1.axvspan(b["lo"], b["hi"], color=OKABE_ITO["orange"], alpha=0.2, lw=0,
                        label="planned-repeat bounds")
        ax1.axvline(0, color=OKABE_ITO["grey"], lw=0.8)
        ax1.set_yticks(ys, [v[0] for v in variants])
        s = ctx.study
        ax1.set_xlabel(f"equal-configuration paired mean ({s.treatment} minus {s.control})\n"
                       f"{arm_key(s.control, s.treatment)}")
        ax1.set_title("Populations (configurations)")
        items = sorted(((k, v.get("mean")) for k, v in loo.items() if v.get("mean") is not None),
                       key=lambda kv: (kv[1], kv[0]))
        if items:
            yl = np.arange(len(items))
            ax2.plot([v for _, v in items], yl, "o", color=OKABE_ITO["vermillion"], ms=4)
            ax2.set_yticks(yl, [k for k, _ in items], fontsize=8.5)
            if p.get("mean") is not None:
                ax2.axvline(p["mean"], color=OKABE_ITO["blue"], lw=1.2, label="panel mean, all configurations")
        else:
            ax2.text(0.5, 0.5, "leave-one-out undefined", ha="center", transform=ax2.transAxes)
        ax2.set_xlabel("mean, this configuration left out")
        ax2.set_title("Leave one out")
        if ax1.get_legend_handles_labels()[0] or ax2.get_legend_handles_labels()[0]:
            fig.legend(loc="outside lower center", ncol=2)
    return FigureSpec("sensitivity", title, fig,
                      "Left: panel mean for each sparse-cell population and the family-weighted mean, "
                      "with the planned-repeat bounds shaded. Right: panel mean with each configuration "
                      "left out.")
