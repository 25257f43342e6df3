"""What `generate.py plan` prints and saves as OUT/design.md, and the legend of design_power.md.

No null reaches a reader: a K the search did not reach reads "not reached (max K searched = N)".
"""

from __future__ import annotations

import math
from typing import Any

POWER_LEGEND = {
    "configurations": "K, configurations in each simulated study",
    "repeats": "R, paired repeats per configuration (one row of each arm)",
    "effect": "true equal-configuration mean effect Δ ({name})",
    "power": "parametric simulation: share of simulated studies whose t-style dispersion interval excludes 0",
    "power_mcse": "Monte Carlo standard error of `power`, sqrt(p (1 − p) / sims)",
    "power_signflip": "parametric simulation: share whose sign-flip test has p ≤ alpha",
    "power_closed_form": ("closed form: noncentral t with Var = tau2/K + sigma2_within/(K R), the expected missing "
                          "rows counted (analysis.plan.simulate)"),
    "halfwidth_median": "median half-width of the simulated dispersion intervals",
    "power_resampling": "resampling variant (configurations and their repeats resampled from the evidence)",
}


def num(x: Any, fmt: str = ".4f") -> str:
    """A number, or 'not computed' when absent."""
    return "not computed" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def k_text(k: Any, limit: int, where: str = "searched") -> str:
    """A required K, or 'not reached (max K searched = N)'."""
    return str(k) if k is not None else f"not reached (max K {where} = {limit})"


def _components(design: Any) -> list[str]:
    c = design.components
    u = design.uncertainty or {}
    miss = ", ".join(f"{a} {num(r, '.3f')}" for a, r in c.missing_rate().items())
    out = [f"variance components ({c.configurations} configurations, {c.pairs} pairs; {c.method}):",
           f"  tau2 = {num(c.tau2)}{' (at its boundary: not estimable, see below)' if c.tau2 == 0 else ''}"
           f"  sigma2_within = {num(c.sigma2_within)}  check-level ICC = {num(c.icc, '.3f')}"
           f"  missing-or-invalid rate: {miss}"]
    for field, why in sorted(c.reasons.items()):
        out.append(f"  {field}: not computed ({why})")
    t = u.get("tau2") or {}
    if t and t.get("reml") is None:
        why = sorted(set((t.get("reasons") or {}).values())) or ["undefined"]
        out.append(f"  tau2 by REML and its profile-likelihood interval: not computed ({'; '.join(why)})")
    elif t:
        lo, hi = t["interval"]
        out.append(f"  tau2 by REML = {num(t['reml'])} (sigma2_within {num(t['sigma2_within_reml'])}); "
                   f"{t['level']:.0%} profile-likelihood interval of tau2 [{num(lo)}, "
                   f"{num(hi) if hi is not None else 'no finite upper end'}]")
    p = u.get("pairing") or {}
    if p.get("rows"):
        out.append("  by the pairing of j and q rows inside a configuration: " + "; ".join(
            f"{r['pairing']} sigma2_within {num(r['sigma2_within'])}"
            + (f" [{num(r['sigma2_within_range'][0])}, {num(r['sigma2_within_range'][1])} "
               f"for {p['range_level']:.0%} of {p['draws']} draws]"
               if r["pairing"] == "random" else "")
            + f", tau2 {num(r['tau2'])}, R* {num(r['r_star'], '.2f')}" for r in p["rows"]))
        out.append(f"  {p['statement']}")
    elif p.get("reasons"):
        out.append(f"  pairing range: not computed ({'; '.join(p['reasons'].values())})")
    return out


def _power(design: Any) -> list[str]:
    out: list[str] = []
    if not design.grid.height:
        return out
    best = design.grid.sort("configurations", "repeats", "effect")
    top_k, top_r = int(best["configurations"].max()), int(best["repeats"].max())
    row = best.filter((best["configurations"] == top_k) & (best["repeats"] == top_r))
    out.append(f"power at K={top_k}, R={top_r} (dispersion interval excludes 0; simulated, closed form): "
               + "; ".join(f"effect {e:+g}: {p:.3f} ± {s:.3f}, {cf:.3f}" for e, p, s, cf in
                           row.select("effect", "power", "power_mcse", "power_closed_form").iter_rows()))
    zero = design.grid.filter(design.grid["effect"] == 0)
    if zero.height:
        out.append(f"calibration at effect 0: rejection rates {zero['power'].min():.3f}..{zero['power'].max():.3f} "
                   f"(alpha {design.plan.alpha:g})")
    t1 = design.type1_small_k
    if t1:
        out.append(f"simulated type-I rate at K={t1['configurations']} (effect 0, over R): parametric "
                   + "..".join(f"{x:.3f}" for x in t1["parametric"])
                   + (", resampling " + "..".join(f"{x:.3f}" for x in t1["resampling"]) if t1.get("resampling")
                      else "")
                   + f" (alpha {t1['alpha']:g}, MC s.e. up to {num(t1['parametric_mcse'], '.3f')})")
    from analysis.plan.advice import search_bounds  # scipy: imported when a design is summarised, not by --help

    top = max(design.plan.configurations)
    for effect, per_r in design.required.items():
        if float(effect) == 0:
            continue
        out.append(f"smallest K for power {design.plan.target_power:g} at effect {float(effect):+g} "
                   "(closed form; simulated grid): "
                   + ", ".join(f"R={r}: {k_text(v['closed_form'], search_bounds(design.plan)[0])}; "
                               f"{k_text(v['simulated_grid'], top, 'in the grid')}" for r, v in per_r.items()))
    return out


def _recommendations(design: Any) -> list[str]:
    cm = design.cost_model or {}
    o = design.optimal_repeats
    out = [f"cost model: {cm.get('formula', '')}, c_repeat = {num(cm.get('c_repeat'), '.4g')}, "
           f"c_config = {num(cm.get('c_config'), '.4g')} ({cm.get('unit', '')})",
           f"optimal repeats R* = {num(o['value'], '.2f')} at cost ratio {num(o['cost_ratio'], '.4g')}"
           + (f" ({o['reason']})" if o.get("reason") else
              " (variance-optimal; the recommendation below is the cheapest integer design by the printed cost)")]
    ranges = (design.uncertainty or {}).get("ranges") or {}
    if design.recommended:
        out.append(f"tau2 of the point recommendation: {design.recommended[0].get('tau2_estimator', 'ANOVA')}")
    for rec in design.recommended:
        if rec.get("configurations") is None:
            out.append(f"recommended for effect {rec['effect']:+g}: {rec.get('reason', 'none')}")
            continue
        sim = rec.get("simulated")
        line = (f"recommended for effect {rec['effect']:+g}: K = {rec['configurations']}, R = {rec['repeats']}"
                + (f" (simulated power {sim['power_parametric']:.3f} ± {sim['power_parametric_mcse']:.3f} MC s.e., "
                   f"{sim['sims']} studies; closed form with the missing rows "
                   f"{num(rec.get('power_closed_form'), '.3f')})" if sim else
                   f" (closed-form power with the missing rows {num(rec.get('power_closed_form'), '.3f')})")
                + f"; {rec['rows']} rows, cost {rec['cost']:.2f} ({rec['cost_unit']})")
        if "hours_sequential" in rec:
            line += f", {rec['hours_sequential']:.1f} h sequential"
        out.append(line)
        cut = (rec.get("search") or {}).get("cut")
        if cut:
            out.append(f"  search bound: {cut}")
        cf = rec.get("closed_form_design") or {}
        if sim and cf.get("configurations") != rec["configurations"]:
            out.append(f"  the closed form's K = {cf['configurations']} simulated below the target, so K was stepped "
                       f"up at R = {rec['repeats']} until the simulation reached it ({sim['steps']} more simulations)")
        if sim and not sim.get("reached", True):
            out.append(f"  not reached in the simulation: {sim['reason']}")
        rg = ranges.get(f"{rec['effect']:g}") or {}
        if rg.get("configurations"):
            out.append(f"  over the uncertainty (every pairing crossed with tau2 by ANOVA, REML and REML's interval "
                       f"ends: {rg.get('scenarios', '?')} cases, closed form) the cheapest design moves to "
                       f"K = {rg['configurations'][0]}..{rg['configurations'][1]}, "
                       f"R = {rg['repeats'][0]}..{rg['repeats'][1]}"
                       + (f"; not reached under {', '.join(rg['unreached'])}" if rg.get("unreached") else ""))
        if sim:
            out.append(f"  simulated at this design ({sim['sims']} studies): power parametric "
                       f"{sim['power_parametric']:.3f} ± {sim['power_parametric_mcse']:.3f}, resampling "
                       f"{sim['power_resampling']:.3f} ± {sim['power_resampling_mcse']:.3f} (MC s.e.); "
                       f"type-I rate parametric {sim['type1_parametric']:.3f}, "
                       f"resampling {sim['type1_resampling']:.3f}")
        dis = rec.get("disagreements") or {}
        if dis.get("cells_compared"):
            cells = dis["cells"]
            out.append(f"  resampling vs closed form differ by more than {dis['threshold']:g} in power in "
                       f"{len(cells)} of {dis['cells_compared']} grid cells at this effect"
                       + (": " + ", ".join(f"K={c['configurations']} R={c['repeats']} "
                                           f"({c['power_resampling']:.2f} vs {c['power_closed_form']:.2f})"
                                           for c in cells) if cells else ""))
        out.append(f"  note: {rec['not_a_ci']}")
    return out


def summary_lines(design: Any) -> list[str]:
    """What the plan prints: components and their uncertainty, power, required K, R*, recommendations."""
    out = _components(design)
    for key, why in sorted(design.reasons.items()):
        out.append(f"{key}: {why}")
    return out + _power(design) + _recommendations(design)


def design_markdown(design: Any, lines: list[str]) -> str:
    """OUT/design.md: the console summary, then the designs under each source of uncertainty."""
    text = ["# v2 design (`python generate.py plan`)", "",
            "Ours, not the paper's: a planning calculation from the variance components fitted to the evidence.",
            "", "```text", *lines, "```", ""]
    rows = (design.uncertainty or {}).get("designs") or []
    if rows:
        text += ["## The cheapest design under each source of uncertainty", "",
                 "| effect | source | tau2 | sigma2_within | R* | K | R | cost | closed-form power |",
                 "|---:|:---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            text.append(f"| {r['effect']:+g} | {r['source']} | {num(r['tau2'])} | {num(r['sigma2_within'])} | "
                        f"{num(r['r_star'], '.2f')} | {k_text(r['configurations'], design.plan.k_search_max)} | "
                        f"{r['repeats'] if r['repeats'] is not None else 'not reached'} | {num(r['cost'], '.2f')} | "
                        f"{num(r['power_closed_form'], '.3f')} |")
        text.append("")
    return "\n".join(text)


def power_legend(columns: list[str], name: str) -> str:
    """The column legend printed above design_power.md's table."""
    return "Columns:\n\n" + "".join(f"- `{c}`: {POWER_LEGEND[c].format(name=name)}\n" for c in columns) + "\n"
