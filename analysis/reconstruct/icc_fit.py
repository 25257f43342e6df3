"""Rules R2b/R2c: the within-row dependence, FITTED to the printed ICC and design effect (paper section 4).

Methods note. Per-row check counts are not printed, so the one-way ICC of the valid S5 rows is
not determined by the primitives. Two steps move it, both only in *free* cells (cells of arms
q, o and the Table 1 arms whose split the page leaves open; single-field arms are left alone so
the heading fit keeps its material):
- R2b: a share lam = i/1000 of each free cell's total is spread evenly before the near-binary
  fill; i is the largest grid point whose ICC is still above the target window;
- R2c: then single checks are moved, one at a time, between two rows of the next free cell
  (round robin in build order): from its highest to its lowest row while the ICC is more than
  0.0005 above the window, then between the closest rows at least 2 checks apart (a move that
  would overshoot the window is undone and the next cell tried) until the ICC enters the window.
The window is the intersection of the printed ICC (0.750) and the ICC range the printed design
effect (10.745 = 1 + 13 ICC) allows. The audit reports the ICC, design effect and effective
observations per row as FITTED.
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from analysis.estimators.dependence import icc_oneway
from analysis.reconstruct.claims import Claims
from analysis.reconstruct.engine import ReconstructionError
from analysis.reconstruct.populations import Builder, build_rows

GRID = 1000
FREE_ARMS = ("q", "o", "f", "n", "k", "l", "m")
MAX_MOVES = 2000
COARSE = 0.0005  # above window + this, move between the extreme rows; closer, between the nearest rows 2 apart


def _coarse(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    top = max(rows, key=lambda r: r["checks_passed"])
    low = min(rows, key=lambda r: r["checks_passed"])
    return (top, low) if top["checks_passed"] - low["checks_passed"] >= 2 else None


def _fine(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    srt = sorted(rows, key=lambda r: r["checks_passed"], reverse=True)
    best = None
    for a, b in itertools.pairwise(srt):
        gap = a["checks_passed"] - b["checks_passed"]
        if gap >= 2 and (best is None or gap < best[0]):
            best = (gap, a, b)
    return (best[1], best[2]) if best else None


def _s5(b: Builder) -> list[dict[str, Any]]:
    return [r for r in b.rows if r["valid"] and r["scenario"] == "S5" and r["checks_passed"] is not None]


def _icc(b: Builder) -> float:
    return icc_oneway(np.array([r["checks_passed"] for r in _s5(b)]), 14).icc


def window(claims: Claims) -> tuple[float, float]:
    """ICC values that print as both the published ICC and the published design effect (k = 14)."""
    icc, deff = claims["icc.s5.icc"], claims["icc.s5.design_effect"]
    hi_icc, lo_icc = float(icc.value) + 0.5 * 10.0 ** -icc.decimals, float(icc.value) - 0.5 * 10.0 ** -icc.decimals  # type: ignore[arg-type, operator]
    d_lo = (float(deff.value) - 0.5 * 10.0 ** -deff.decimals - 1) / 13  # type: ignore[arg-type, operator]
    d_hi = (float(deff.value) + 0.5 * 10.0 ** -deff.decimals - 1) / 13  # type: ignore[arg-type, operator]
    return max(lo_icc, d_lo), min(hi_icc, d_hi)


def _free_cells(b: Builder) -> list[list[dict[str, Any]]]:
    cells: dict[str, list[dict[str, Any]]] = {}
    for r in _s5(b):
        if r["arm"] in FREE_ARMS and r.get("free"):
            cells.setdefault(r["cell"], []).append(r)
    return [rows for rows in cells.values() if len(rows) > 1]


def fitted_rows(claims: Claims) -> Builder:
    """Rows whose within-row dependence prints as the published ICC and design effect."""
    from analysis.reconstruct.populations import rule
    with rule(claims, "R2b-R2c"):
        lo_w, hi_w = window(claims)
    lo, hi = 0, GRID  # invariant: icc(lo) > hi_w >= icc(hi)
    if _icc(build_rows(claims, Fraction(lo, GRID))) <= hi_w:
        raise ReconstructionError("the near-binary split already lies below the printed ICC; nothing to fit")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _icc(build_rows(claims, Fraction(mid, GRID))) > hi_w:
            lo = mid
        else:
            hi = mid
    b = build_rows(claims, Fraction(lo, GRID))
    b.icc_share = Fraction(lo, GRID)
    cells = _free_cells(b)
    moves, i, misses = 0, 0, 0
    while _icc(b) > hi_w:
        if moves >= MAX_MOVES or not cells or misses > len(cells):
            raise ReconstructionError("could not bring the ICC into the printed window by single-check moves")
        rows = cells[i % len(cells)]
        i += 1
        move = _coarse(rows) if _icc(b) - hi_w > COARSE else _fine(rows)
        if move is None:
            misses += 1
            continue
        top, low = move
        top["checks_passed"] -= 1
        low["checks_passed"] += 1
        if _icc(b) < lo_w:  # overshot the window: undo and try the next cell
            top["checks_passed"] += 1
            low["checks_passed"] -= 1
            misses += 1
            continue
        moves, misses = moves + 1, 0
    b.icc_moves = moves
    return b
