"""Builders of the beyond-the-paper tables (ours, not the paper's): panel-level inference and
design-effect-aware cell intervals, read from results.json ``beyond_paper``."""

from __future__ import annotations

import polars as pl

from analysis.tables.context import ReportContext, section
from analysis.tables.spec import TableSpec, display_frame, empty_table, fmt_int, fmt_mean_n, fmt_num, fmt_signed


def panel_inference(ctx: ReportContext) -> TableSpec:
    """Bootstrap interval, sign-flip p and row-level GEE for the panel effect."""
    title = "Beyond the paper: panel-level inference on the paired effect (ours)"
    cols = ["method", "estimate", "interval", "p-value", "units"]
    b = section(ctx.results, "beyond_paper") or {}
    boot, flip, gee = b.get("bootstrap") or {}, b.get("sign_flip") or {}, b.get("gee") or {}
    if not (boot or flip or gee):
        return empty_table("t_beyond_inference", title, cols, "results.json has no beyond_paper block")
    data = pl.DataFrame([
        {"method": "bootstrap", "estimate": boot.get("estimate"), "lo": boot.get("lo"), "hi": boot.get("hi"),
         "p_value": None, "units": boot.get("n")},
        {"method": "sign_flip", "estimate": flip.get("estimate"), "lo": None, "hi": None,
         "p_value": flip.get("p_value"), "units": flip.get("n")},
        {"method": "gee", "estimate": gee.get("coefficient"), "lo": gee.get("lo"), "hi": gee.get("hi"),
         "p_value": gee.get("p_value"), "units": gee.get("clusters")}],
        schema={"method": pl.String, "estimate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64,
                "p_value": pl.Float64, "units": pl.Int64})
    labels = {"bootstrap": f"configuration bootstrap ({boot.get('method', '—')}, "
                           f"{fmt_int(boot.get('resamples'))} resamples)",
              "sign_flip": "sign-flip randomisation" + (" (exact)" if flip.get("exact") else ""),
              "gee": "row-level GEE, exchangeable within configuration"}
    units = {"bootstrap": "configurations", "sign_flip": "configurations", "gee": "clusters"}
    out = [{"method": labels[r["method"]], "estimate": fmt_signed(r["estimate"]),
            "interval": "—" if r["lo"] is None else f"[{fmt_signed(r['lo'])}, {fmt_signed(r['hi'])}]",
            "p-value": fmt_num(r["p_value"], 4), "units": f"{fmt_int(r['units'])} {units[r['method']]}"}
           for r in data.iter_rows(named=True)]
    return TableSpec("t_beyond_inference", title, data, display_frame(out, cols),
                     note="Ours, not the paper's. The bootstrap and sign flip treat configurations as the "
                          "units; the GEE uses rows with a bias-reduced sandwich and a t(G−1) reference.")


def cell_intervals(ctx: ReportContext) -> TableSpec:
    """Design-effect-aware Wilson intervals of the control and treatment cells of the primary scenario."""
    s = ctx.study
    title = (f"Beyond the paper: {s.control} and {s.treatment} cell means with design-effect-aware "
             "intervals (ours)")
    cols = ["configuration", "execution group", "arm", "recall", "effective n", "interval"]
    d = section(ctx.results, "beyond_paper", "design_effect_intervals") or {}
    cells = [c for c in d.get("cells") or [] if c.get("arm") in (s.control, s.treatment)]
    if not cells:
        return empty_table("t_beyond_cells", title, cols, "no design-effect intervals in results.json")
    data = pl.DataFrame(cells).sort("configuration", "execution_group", "arm")
    out = [{"configuration": r["configuration"], "execution group": r["execution_group"], "arm": r["arm"],
            "recall": fmt_mean_n(r["mean"], r["rows"]), "effective n": fmt_num(r["effective_n"], 1),
            "interval": f"[{fmt_num(r['lo'])}, {fmt_num(r['hi'])}]"} for r in data.iter_rows(named=True)]
    return TableSpec("t_beyond_cells", title, data, display_frame(out, cols),
                     note=f"{d.get('method', '')}; design effect {fmt_num(d.get('design_effect'))} from the "
                          "within-row dependence of the checks. Ours, not the paper's.")
