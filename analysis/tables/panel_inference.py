"""Builder of the panel-inference table (ours, not the paper's): configuration bootstrap,
sign-flip randomisation test and row-level GEE of the paired effect, read from results.json
``beyond_paper``."""

from __future__ import annotations

import polars as pl

from analysis.tables.context import ReportContext, section
from analysis.tables.spec import TableSpec, display_frame, empty_table, fmt_int, fmt_num, fmt_signed


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
