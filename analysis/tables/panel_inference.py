"""Builder of the panel-inference table (ours, not the paper's): configuration bootstrap and
sign-flip randomisation test of the paired effect, and the row-level GEE, labelled as the unpaired,
row-weighted contrast it is, from the ``beyond_paper`` block the results stage computed once
(``ctx.estimates.beyond_paper``, as results.json holds it); then one row per registered statistic that declares an
``inference_row`` (analysis.results.registry, e.g. ``hodges_lehmann``), from that block's computed value."""

from __future__ import annotations

import polars as pl

from analysis.estimators.estimable import not_estimable
from analysis.estimators.registration import InferenceRow
from analysis.estimators.secondary_results import BEYOND_PAPER_REGISTRATION
from analysis.results.registry import INFERENCE_ROWS, RESULTS_BLOCKS
from analysis.tables.context import ReportContext
from analysis.tables.declare import table
from analysis.tables.formatting import fmt_int, fmt_interval, fmt_num, fmt_signed
from analysis.tables.spec import TableSpec, display_frame, empty_table


def _defined(x: float | None) -> bool:
    return x is not None and x == x


def _interval(r: InferenceRow) -> str:
    """``[lo, hi]``; ``not estimable: <reason>`` where the method gives one and the data cannot; else a dash
    (the method gives no interval: a test)."""
    if _defined(r.lo) and _defined(r.hi):
        return fmt_interval(r.lo, r.hi, "signed")
    return not_estimable(r.reason) if r.reason and r.method != "sign_flip" else "—"


def _p_value(r: InferenceRow) -> str:
    """The p-value; ``not estimable: <reason>`` for a test the data cannot support; else a dash (no test)."""
    if _defined(r.p_value):
        return fmt_num(r.p_value, 4)
    return not_estimable(r.reason) if r.reason and r.method in ("sign_flip", "gee") else "—"


def _units(r: InferenceRow) -> str:
    return f"{fmt_int(r.units)} {r.unit.removesuffix('s') if r.units == 1 else r.unit}"


@table(section="beyond", reads=(BEYOND_PAPER_REGISTRATION, *INFERENCE_ROWS))
def panel_inference(ctx: ReportContext) -> TableSpec:
    """Bootstrap interval, sign-flip p and row-level GEE for the panel effect."""
    title = "Beyond the paper: inference on the paired effect, and the unpaired row-level GEE contrast (ours)"
    cols = ["method", "estimate", "interval", "p-value", "units"]
    b = ctx.estimates.block_value(BEYOND_PAPER_REGISTRATION)
    boot, flip, gee = b.get("bootstrap") or {}, b.get("sign_flip") or {}, b.get("gee") or {}
    if not (boot.get("n") or flip.get("n") or gee.get("clusters")):
        return empty_table("t_beyond_inference", title, cols, "no configuration in the primary panel")
    rows = [
        InferenceRow("bootstrap", f"configuration bootstrap ({boot.get('method', '—')}, "
                     f"{fmt_int(boot.get('resamples'))} resamples)", boot.get("estimate"), boot.get("lo"),
                     boot.get("hi"), None, boot.get("n"), "configurations", boot.get("reason")),
        InferenceRow("sign_flip", "sign-flip randomisation" + (" (exact)" if flip.get("exact") else ""),
                     flip.get("estimate"), None, None, flip.get("p_value"), flip.get("n"), "configurations",
                     flip.get("reason")),
        InferenceRow("gee", "row-level GEE (unpaired, row-weighted contrast of rows, not the paired effect)",
                     gee.get("coefficient"), gee.get("lo"), gee.get("hi"), gee.get("p_value"), gee.get("clusters"),
                     "clusters", gee.get("reason"))]
    for block in RESULTS_BLOCKS:  # the registered statistics that feed this table, in results.json order
        value = ctx.estimates.block_value(block) if block.inference_row is not None else None
        row = block.inference_row(value) if block.inference_row is not None and isinstance(value, dict) else None
        if row is not None:
            rows.append(row)
    data = pl.DataFrame([{"method": r.method, "estimate": r.estimate, "lo": r.lo, "hi": r.hi, "p_value": r.p_value,
                          "units": r.units} for r in rows],
                        schema={"method": pl.String, "estimate": pl.Float64, "lo": pl.Float64, "hi": pl.Float64,
                                "p_value": pl.Float64, "units": pl.Int64})
    out = [{"method": r.label, "estimate": fmt_signed(r.estimate), "interval": _interval(r),
            "p-value": _p_value(r), "units": _units(r)} for r in rows]
    return TableSpec("t_beyond_inference", title, data, display_frame(out, cols),
                     note="Ours, not the paper's. The bootstrap and sign flip are inference on the paired "
                          "equal-configuration effect, with configurations as the units. The GEE is not: it "
                          "contrasts every valid treatment row with every valid control row (unpaired), so each "
                          "configuration weighs by its rows; it uses an exchangeable working correlation within "
                          "configuration, a bias-reduced sandwich and a t(G−1) reference. The bootstrap, sign-flip "
                          "and Hodges–Lehmann results describe these configurations: none is a confidence "
                          "interval for a population of models. A dash marks what a method does not give (a test "
                          "has no interval); \"not estimable\" says why the data cannot give what it would.")
