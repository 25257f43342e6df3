"""Unrounded fills inside the printed 1% rounding that give every printed 4.7.1 fill statistic (finding 2, issue 19).

Methods note. Table 3 prints each configuration's j fill to whole percent, so every fill lies in
[printed - 0.005, printed + 0.005). The search looks for ONE set of fills in that box (kept 0.0001 inside it)
that gives, at printed precision and with the paired effects the printed cells imply, all of:
the three Pearson correlations (all 20, the 8 j-failing, the 6 non-borderline j-failing), the Spearman
correlations of the two j-failing populations, and the 0.002 fill margin of the gain >= 0.20 split. The
all-20 Spearman is left to the tie readings (analysis.audit.readings), because it also needs the order of
exactly tied effects, which no fill changes.

Deterministic: every order of the fills printed equal is tried in a fixed order; an order is kept when its
ranks give both Spearman values, then ``scipy.optimize.least_squares`` (trust-region reflective, bounded to
the box, started at the printed fills spread by 0.002 in that order) fits the three Pearson values and the
margin, with a penalty that keeps the order. The first order whose solution meets every target is returned.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import rankdata

from analysis.reconstruct.claims import matches_printed

INSIDE = 0.0001
"""How far inside the rounding box every fill is kept (so it still prints as published)."""


@dataclass(frozen=True, slots=True)
class FillSearch:
    """The outcome of the search."""

    found: bool
    """True when one set of fills meets every target."""
    fills: Mapping[str, float]
    """Configuration -> fill found (empty when none)."""
    achieved: Mapping[str, float]
    """Target name -> the value the fills give (empty when none)."""
    tried: int
    """Orders of tied fills tried."""


def _close(x: float, value: float, decimals: int) -> bool:
    return matches_printed(Fraction(float(x)).limit_denominator(10**12), value, decimals)


def search_fills(configs: Sequence[str], fills: Sequence[float], effects: Sequence[float],
                 populations: Mapping[str, Sequence[int]], targets: Mapping[str, tuple[str, str, float, int]],
                 margin: tuple[int, int, float, int], fill_decimals: int = 2) -> FillSearch:
    """Search one set of fills (module note).

    `populations`: name -> indices; `targets`: name -> (population, 'pearson'|'spearman', printed value,
    decimals); `margin`: (index of the lowest gainer, index of the highest non-gainer, printed margin, decimals).
    """
    f0 = np.asarray(fills, dtype=float)
    e = np.asarray(effects, dtype=float)
    half = 0.5 * 10.0**-fill_decimals - INSIDE
    lo, hi = f0 - half, f0 + half
    pops = {k: np.asarray(v, dtype=int) for k, v in populations.items()}

    def stat(x: np.ndarray, pop: str, kind: str) -> float:
        i = pops[pop]
        if kind == "pearson":
            return float(np.corrcoef(x[i], e[i])[0, 1])
        return float(np.corrcoef(rankdata(x[i]), rankdata(e[i]))[0, 1])  # Spearman: average ranks for ties

    def meets(x: np.ndarray) -> dict[str, float] | None:
        got = {name: stat(x, pop, kind) for name, (pop, kind, _, _) in targets.items()}
        ok = all(_close(got[n], v, d) for n, (_, _, v, d) in targets.items())
        gap = float(x[margin[0]] - x[margin[1]])
        if ok and _close(gap, margin[2], margin[3]) and bool(np.all(x >= lo) and np.all(x <= hi)):
            return {**got, "margin": gap}
        return None

    groups: dict[float, list[int]] = {}
    for i, f in enumerate(f0):
        groups.setdefault(float(f), []).append(i)
    ties = [g for _, g in sorted(groups.items()) if len(g) > 1]
    spear = {n: t for n, t in targets.items() if t[1] == "spearman"}
    pear = {n: t for n, t in targets.items() if t[1] == "pearson"}
    tried = 0
    for perm in itertools.product(*[list(itertools.permutations(g)) for g in ties]):
        tried += 1
        x0 = f0.copy()
        order = []
        for p in perm:
            for r, i in enumerate(p):
                x0[i] = f0[i] + (r - (len(p) - 1) / 2) * 0.002
            order += [(p[r], p[r + 1]) for r in range(len(p) - 1)]
        if x0[margin[0]] <= x0[margin[1]]:
            continue
        if not all(_close(stat(x0, pop, kind), v, d) for pop, kind, v, d in spear.values()):
            continue

        def residuals(x: np.ndarray, order: list[tuple[int, int]] = order) -> list[float]:
            r = [(stat(x, pop, kind) - v) * 100 for pop, kind, v, _ in pear.values()]
            r.append((x[margin[0]] - x[margin[1]] - margin[2]) * 100)
            r += [max(0.0, x[a] - x[b] + 2e-4) * 1000 for a, b in order]
            return r

        sol = least_squares(residuals, np.clip(x0, lo, hi), bounds=(lo, hi), xtol=1e-14, ftol=1e-14, gtol=1e-14)
        got = meets(sol.x)
        if got is not None and all(sol.x[a] < sol.x[b] for a, b in order):
            return FillSearch(True, dict(zip(configs, (float(v) for v in sol.x), strict=True)), got, tried)
    return FillSearch(False, {}, {}, tried)
