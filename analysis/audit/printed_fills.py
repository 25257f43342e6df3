"""The fill search over the printed cells, as one reading per fill statistic (finding 2, issue 19).

Methods note. ``fill_pins`` finds the Table 3 fills another printed cell fixes for the same rows;
``printed_fill_search`` runs ``fill_search.search_fills`` over Table 3 (exact GRIM effects), with every printed
4.7.1 fill correlation (Pearson and Spearman, all three populations) and the 0.002 margin as targets;
``fill_readings`` turns its outcome into one ``Reading`` per covered claim: the same set of fills (and order of
exactly equal effects) for all, or, when none exists, a non-matching reading for all that says they are not
jointly reachable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.audit.derive import Reading
from analysis.audit.fill_search import FillSearch, search_fills
from analysis.audit.printed import CORR, PrintedCells
from analysis.reconstruct.layout import PANEL


@dataclass(frozen=True, slots=True)
class PrintedFillSearch:
    """The fill search over the printed cells."""

    result: FillSearch
    """What search_fills found."""
    pins: dict[str, tuple[float, float, str]]
    """Configuration -> (lo, hi, the pinning cell in words)."""
    covered: tuple[str, ...]
    """Claim ids the search covers (its targets and the margin)."""
    margin_id: str
    """The margin claim's id."""


def fill_pins(pc: PrintedCells) -> dict[str, tuple[float, float, str]]:
    """Table 3 fills another printed cell fixes for the same rows: configuration -> (lo, hi, which cell).

    A 4.6 fill-examples row (``fillex.<key>.carried_chars``) of a Table 3 configuration describes the same j rows
    when it prints no row count of its own (its note restates Table 3's) or prints Table 3's j row count; its
    mean carried characters, rounded to a whole character, then bound the fill: [chars - 0.5, chars + 0.5] / the
    declared j ceiling. granite-4.1-8b and ling-2.6-flash print 16 rows against Table 3's 12: different rows.
    """
    ceiling = pc.by.get("design.arms.j.ceiling_chars")
    if ceiling is None or not isinstance(ceiling.value, (int, float)):
        return {}
    short = {cfg.split("/", 1)[1]: (key, cfg) for key, cfg in PANEL}
    out = {}
    for c in pc.claims:
        if not (c.id.startswith("fillex.") and c.id.endswith(".carried_chars")) or c.config not in short:
            continue
        key, cfg = short[c.config]
        rows = pc.by.get(c.id.removesuffix("carried_chars") + "rows")
        if (rows is not None and rows.value != pc.v(f"t3.{key}.j_rows")) or not isinstance(c.value, (int, float)):
            continue
        h = 0.5 * 10.0 ** -(c.decimals or 0)
        out[cfg] = ((float(c.value) - h) / float(ceiling.value), (float(c.value) + h) / float(ceiling.value),
                    f"{c.id} {c.printed} / {ceiling.printed}")
    return out


FILL_CHOICE = ("the fills are unrounded values inside the printed 1% rounding, within [0, 1] and inside the cells "
               "that pin them (one set for all seven fill statistics)")


def printed_fill_search(pc: PrintedCells) -> PrintedFillSearch | None:
    """search_fills over the printed cells (module note); None when the claims lack the margin or its split."""
    t = pc.table3
    cfgs = t["configuration"].to_list()
    fa = pc.fills
    idx = {c: i for i, c in enumerate(cfgs)}
    pops = {"all": list(range(len(cfgs))), "failing": [idx[c] for c in fa.failing.units],
            "failing_excl_borderline": [idx[c] for c in fa.failing_excl_borderline.units]}
    targets = {}
    for cid, pop in CORR.items():
        for m in ("pearson", "spearman"):
            c = pc.by.get(f"{cid}.{m}")
            if c is not None and isinstance(c.value, (int, float)):
                targets[c.id] = (pop, m, float(c.value), c.decimals or 0)
    sep = fa.gains[2].separation
    mc = pc.by.get("threshold.fail8.gain_ge_0_20.fill_margin")
    if mc is None or not sep.positive or not sep.negative or not isinstance(mc.value, (int, float)):
        return None
    lowest_gainer = min(sep.positive, key=lambda c: (t["fill"][idx[c]], c))
    highest_rest = max(sep.negative, key=lambda c: (t["fill"][idx[c]], c))
    pins = fill_pins(pc)
    found = search_fills(cfgs, t["fill"].to_list(), t["effect"].to_list(), pops, targets,
                         (idx[lowest_gainer], idx[highest_rest], float(mc.value), mc.decimals or 0),
                         pins={idx[c]: (a, b) for c, (a, b, _) in pins.items() if c in idx})
    return PrintedFillSearch(found, pins, (*targets, mc.id), mc.id)


def fill_readings(pc: PrintedCells) -> dict[str, Reading]:
    """The fill search as one reading for each claim it covers (all of them, or none: module note).

    When no single set of fills gives every covered claim, each gets a non-matching reading that says so: the
    printed values are not jointly reachable under a stated choice (``derive.from_printed`` then calls the ones
    the face value misses inconsistent).
    """
    s = printed_fill_search(pc)
    if s is None:
        return {}
    found, pins, covered, margin_id = s.result, s.pins, s.covered, s.margin_id
    pinned = "; ".join(f"{c.split('/', 1)[1]} pinned by {w}" for c, (_, _, w) in pins.items())
    if not found.found:
        why = (f"no single set found ({found.reason}; {found.tried} readings tried{'; ' + pinned if pinned else ''}):"
               " these printed values are not jointly reachable under any choice tried")
        return {cid: Reading(FILL_CHOICE, False, why) for cid in covered}
    fills = ", ".join(f"{c.split('/', 1)[1]} {100 * v:.3f}%" for c, v in found.fills.items())
    eff = ("exactly equal effects at average ranks" if not found.effect_order else
           "exactly equal effects ranked " + "; ".join(" < ".join(c.split("/", 1)[1] for c in g)
                                                       for g in found.effect_order)
           + " (float tie-breaking; only Spearman over a population holding them depends on it)")
    return {cid: Reading(FILL_CHOICE + (f", and {eff}" if found.effect_order and _ties_in(pc, cid, found) else ""),
                         True, f"gives {found.achieved['margin' if cid == margin_id else cid]:.4f}; fills: {fills}"
                         + (f" ({pinned})" if pinned else "") + f"; {eff}")
            for cid in covered}


def _ties_in(pc: PrintedCells, cid: str, found: Any) -> bool:
    """True when claim `cid` is a Spearman over a population holding effects the found order breaks."""
    if not cid.endswith(".spearman"):
        return False
    fa = pc.fills
    pop = {"all": set(pc.table3["configuration"]), "failing": set(fa.failing.units),
           "failing_excl_borderline": set(fa.failing_excl_borderline.units)}[CORR[cid.removesuffix(".spearman")]]
    return any(len(set(g) & pop) > 1 for g in found.effect_order)
