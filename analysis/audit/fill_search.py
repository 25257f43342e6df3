"""Unrounded fills inside the printed 1% rounding that give every printed 4.7.1 fill statistic (finding 2, issue 19).

Methods note. Table 3 prints each configuration's j fill to whole percent, so every fill lies in
[printed - 0.005, printed + 0.005), and, being a share of the ceiling, in [0, 1]. A fill another printed cell
fixes for the same rows is pinned to that cell's rounding box (``pins``: the 4.6 fill-examples table prints
deepseek-v4-pro's 4 Table 3 rows as 4,740 of 9,600 carried characters, so its fill lies in
[4,739.5, 4,740.5] / 9,600). The search looks for ONE set of fills in that box (kept 0.0001 inside the printed
rounding) and, where exactly equal effects matter, ONE order of them, that gives at printed precision and with
the paired effects the printed cells imply, all of: the three Pearson correlations (all 20, the 8 j-failing, the
6 non-borderline j-failing), the three Spearman correlations of the same populations, and the 0.002 fill margin
of the gain >= 0.20 split.

Spearman correlations depend only on orders. Fills printed different cannot change order inside their boxes, so
only the order of fills printed EQUAL is free; exactly equal effects (exact GRIM rationals, e.g. three 0 effects)
are at average ranks unless an order of them is stated (float means of per-pair differences can order exactly
equal effects by their last bit; the note then names the order, which is a second choice). Deterministic: every
order of the equal fills is tried in a fixed order; for each, the effect readings are tried from average ranks
(no choice) to the most broken ties, and the first whose ranks give every Spearman target is kept; then
``scipy.optimize.least_squares`` (trust-region reflective, bounded to the box, started at the printed fills
spread by 0.002 in that order, with the analytic Jacobian ``fit_problem`` derives) fits the three Pearson values
and the margin, with a penalty that keeps the order. The first fill order whose solution meets every target is
returned. When none does, the result says so (``found`` False, ``reason``): the printed values are then not
jointly reachable under any choice tried.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
    """True when one set of fills (and one reading of the tied effects) meets every target."""
    fills: Mapping[str, float]
    """Configuration -> fill found (empty when none)."""
    achieved: Mapping[str, float]
    """Target name -> the value the fills give, and 'margin' (empty when none)."""
    tried: int
    """(order of tied fills, reading of tied effects) pairs tried."""
    effect_order: tuple[tuple[str, ...], ...] = ()
    """Groups of exactly equal effects ranked in this order (lowest first); () = all at average ranks."""
    reason: str = ""
    """Why nothing was found (empty when found)."""
    spearman_orders: int = 0
    """Fill orders whose ranks give every Spearman target (under some reading of the tied effects)."""
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Configuration -> the box searched (printed rounding, [0, 1], pins)."""


def _close(x: float, value: float, decimals: int) -> bool:
    return matches_printed(Fraction(float(x)).limit_denominator(10**12), value, decimals)


def pearson_r(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two 1-d float arrays, bit for bit ``float(np.corrcoef(a, b)[0, 1])``.

    The same numpy operations in the same order as numpy's ``cov`` and ``corrcoef`` (centre on the row means,
    ``dot`` with the conjugated transpose, scale by 1 / (n - 1), divide by the standard deviations, clip to
    [-1, 1]) without their argument handling: the least-squares fit calls it thousands of times per audit."""
    x = np.empty((2, a.shape[0]))
    x[0], x[1] = a, b
    x -= (np.add.reduce(x, axis=1) / x.shape[1])[:, None]
    c = np.dot(x, x.T.conj())
    c *= np.true_divide(1, x.shape[1] - 1)
    sd = np.sqrt(np.diag(c))
    c /= sd[:, None]
    c /= sd[None, :]
    np.clip(c, -1, 1, out=c)
    return float(c[0, 1])


def fit_problem(effects: np.ndarray, populations: Mapping[str, np.ndarray],
                pearson_targets: Sequence[tuple[str, float]], margin: tuple[int, int, float],
                order: Sequence[tuple[int, int]]) -> tuple[Callable[[np.ndarray], list[float]],
                                                           Callable[[np.ndarray], np.ndarray]]:
    """The least-squares fit's residuals of the fills x, and their analytic Jacobian.

    Rows: (Pearson r over each target's population - printed) * 100; (x[lowest gainer] - x[highest rest] -
    printed margin) * 100; for each (a, b) of the kept order, max(0, x_a - x_b + 2e-4) * 1000.

    Jacobian, derived by hand. Over a population (indices I, n of them), with xc = x - xbar, yc = y - ybar,
    Sxx = sum xc^2, Syy = sum yc^2, Sxy = sum xc yc, r = Sxy / sqrt(Sxx Syy). Since sum yc = 0,
    dSxy/dx_i = yc_i; since sum xc = 0, dSxx/dx_i = 2 xc_i; Syy does not depend on x. So
    dr/dx_i = yc_i / sqrt(Sxx Syy) - Sxy / sqrt(Syy) * (1/2) Sxx^(-3/2) * 2 xc_i
            = yc_i / sqrt(Sxx Syy) - r xc_i / Sxx   for i in I, 0 elsewhere; the row is that * 100.
    The margin row is +100 at the lowest gainer, -100 at the highest rest. An order row is +1000 at a and -1000
    at b where its penalty is active (x_a - x_b + 2e-4 > 0), else 0 (the kink's one-sided derivative at 0).
    The 2-point numerical Jacobian this replaces called the residuals n + 1 times per Jacobian (issue 21).
    """
    e = np.asarray(effects, dtype=float)
    pops = [(np.asarray(populations[pop], dtype=int), v) for pop, v in pearson_targets]
    centred = [(i, e[i] - e[i].mean()) for i, _ in pops]
    syy = [float(np.dot(yc, yc)) for _, yc in centred]
    lowest_gainer, highest_rest, printed_margin = margin

    def residuals(x: np.ndarray) -> list[float]:
        r = [(pearson_r(x[i], e[i]) - v) * 100 for i, v in pops]
        r.append((x[lowest_gainer] - x[highest_rest] - printed_margin) * 100)
        r += [max(0.0, x[a] - x[b] + 2e-4) * 1000 for a, b in order]
        return r

    def jacobian(x: np.ndarray) -> np.ndarray:
        jac = np.zeros((len(pops) + 1 + len(order), x.shape[0]))
        for row, ((i, yc), yy) in enumerate(zip(centred, syy, strict=True)):
            xc = x[i] - x[i].mean()
            xx = float(np.dot(xc, xc))
            root = np.sqrt(xx * yy)
            jac[row, i] = (yc / root - (float(np.dot(xc, yc)) / root) * xc / xx) * 100
        jac[len(pops), lowest_gainer] += 100.0
        jac[len(pops), highest_rest] -= 100.0
        for row, (a, b) in enumerate(order, start=len(pops) + 1):
            if x[a] - x[b] + 2e-4 > 0:
                jac[row, a], jac[row, b] = 1000.0, -1000.0
        return jac

    return residuals, jacobian


def _tie_groups(values: np.ndarray) -> list[list[int]]:
    groups: dict[float, list[int]] = {}
    for i, v in enumerate(values):
        groups.setdefault(float(v), []).append(i)
    return [g for _, g in sorted(groups.items()) if len(g) > 1]


Reading = tuple[tuple[int, ...], ...]
"""A reading of the exactly equal effects: one order per ordered tie group."""


def _box(configs: Sequence[str], f0: np.ndarray, fill_decimals: int, pins: Mapping[int, tuple[float, float]] | None
         ) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[float, float]]]:
    """Each fill's box: its printed rounding (less INSIDE), cut by its pin."""
    half = 0.5 * 10.0**-fill_decimals - INSIDE
    lo, hi = np.maximum(f0 - half, 0.0), np.minimum(f0 + half, 1.0)
    for i, (a, b) in (pins or {}).items():
        lo[i], hi[i] = max(lo[i], a), min(hi[i], b)
    return lo, hi, {c: (float(a), float(b)) for c, a, b in zip(configs, lo, hi, strict=True)}


def _effect_readings(e: np.ndarray) -> list[Reading]:
    """Every reading of the exactly equal effects (an order of each tie group, or none), fewest orders first."""
    return sorted((tuple(p for p in choice if p) for choice in itertools.product(
        *[[(), *itertools.permutations(g)] for g in _tie_groups(e)])),
        key=lambda c: (sum(len(p) for p in c), c))


def _start(f0: np.ndarray, perm: tuple[tuple[int, ...], ...], lo: np.ndarray,
           hi: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The start of one order of the fills printed equal, spread 0.002 apart, and its order pairs."""
    x0 = f0.copy()
    order: list[tuple[int, int]] = []
    for p in perm:
        for r, i in enumerate(p):
            x0[i] = f0[i] + (r - (len(p) - 1) / 2) * 0.002
        order += [(p[r], p[r + 1]) for r in range(len(p) - 1)]
    return np.clip(x0, lo, hi), order


def _spearman(x: np.ndarray, y: np.ndarray, i: np.ndarray, x_ranks: np.ndarray | None = None) -> float:
    # average ranks for remaining ties; pearson_r is np.corrcoef bit for bit; `x_ranks`: rankdata(x[i]) known
    return pearson_r(rankdata(x[i]) if x_ranks is None else x_ranks, rankdata(y[i]))


def _reading(x0: np.ndarray, e: np.ndarray, pops: Mapping[str, np.ndarray],
             spear: Mapping[str, tuple[str, str, float, int]],
             readings: Sequence[Reading]) -> tuple[tuple[Reading, np.ndarray] | None, int]:
    """The first reading of the equal effects under which start x0 gives every Spearman target, and the
    readings tried."""
    x0_ranks = {pop: rankdata(x0[pops[pop]]) for pop, _, _, _ in spear.values()}  # the same for every reading
    for tried, reading in enumerate(readings, start=1):
        y = e.copy()
        for p in reading:
            for r, i in enumerate(p):
                y[i] += r * 1e-9  # distinct effects of 14-check means differ by far more
        if all(_close(_spearman(x0, y, pops[pop], x0_ranks[pop]), v, d) for pop, _, v, d in spear.values()):
            return (reading, y), tried
    return None, len(readings)


def search_fills(configs: Sequence[str], fills: Sequence[float], effects: Sequence[float],
                 populations: Mapping[str, Sequence[int]], targets: Mapping[str, tuple[str, str, float, int]],
                 margin: tuple[int, int, float, int], fill_decimals: int = 2,
                 pins: Mapping[int, tuple[float, float]] | None = None) -> FillSearch:
    """Search one set of fills (module note).

    `populations`: name -> indices; `targets`: name -> (population, 'pearson'|'spearman', printed value,
    decimals); `margin`: (index of the lowest gainer, index of the highest non-gainer, printed margin, decimals);
    `pins`: index -> (lo, hi), the box another printed cell gives that fill.
    """
    f0 = np.asarray(fills, dtype=float)
    e = np.asarray(effects, dtype=float)
    lo, hi, box = _box(configs, f0, fill_decimals, pins)
    if np.any(lo > hi):
        bad = [configs[int(i)] for i in np.flatnonzero(lo > hi)]
        return FillSearch(False, {}, {}, 0, reason=f"a pin lies outside the printed rounding ({', '.join(bad)})",
                          bounds=box)
    pops = {k: np.asarray(v, dtype=int) for k, v in populations.items()}
    spear = {n: t for n, t in targets.items() if t[1] == "spearman"}
    pear = [(pop, v) for pop, kind, v, _ in targets.values() if kind == "pearson"]
    effect_readings = _effect_readings(e)
    tried, spearman_orders = 0, 0
    for perm in itertools.product(*[list(itertools.permutations(g)) for g in _tie_groups(f0)]):
        x0, order = _start(f0, perm, lo, hi)
        if x0[margin[0]] <= x0[margin[1]] or any(x0[a] >= x0[b] for a, b in order):
            tried += len(effect_readings)
            continue
        chosen, n = _reading(x0, e, pops, spear, effect_readings)
        tried += n
        if chosen is None:
            continue
        spearman_orders += 1
        found = _fit(configs, e, pops, targets, pear, margin, order, x0, lo, hi, chosen)
        if found is not None:
            return FillSearch(True, found[0], found[1], tried, tuple(tuple(configs[i] for i in p) for p in chosen[0]),
                              spearman_orders=spearman_orders, bounds=box)
    reason = ("no order of the fills printed equal, under any reading of the exactly equal effects, gives every "
              "Spearman target" if spearman_orders == 0 else
              f"{spearman_orders} order(s) of the fills printed equal give every Spearman target, but no fills "
              "inside the box then give every Pearson target and the margin")
    return FillSearch(False, {}, {}, tried, reason=reason, spearman_orders=spearman_orders, bounds=box)


def _fit(configs: Sequence[str], e: np.ndarray, pops: Mapping[str, np.ndarray],
         targets: Mapping[str, tuple[str, str, float, int]], pear: list[tuple[str, float]],
         margin: tuple[int, int, float, int], order: list[tuple[int, int]], x0: np.ndarray, lo: np.ndarray,
         hi: np.ndarray, chosen: tuple[Reading, np.ndarray]) -> tuple[dict[str, float], dict[str, float]] | None:
    """Fit the Pearson targets and the margin from x0 inside the box; the fills and the values they give when
    every target, the margin, the box and the order hold, else None."""
    residuals, jacobian = fit_problem(e, pops, pear, margin[:3], order)
    x = least_squares(residuals, x0, jac=jacobian, bounds=(lo, hi), xtol=1e-14, ftol=1e-14, gtol=1e-14).x
    got = {n: (pearson_r(x[pops[pop]], e[pops[pop]]) if kind == "pearson" else _spearman(x, chosen[1], pops[pop]))
           for n, (pop, kind, _, _) in targets.items()}
    gap = float(x[margin[0]] - x[margin[1]])
    if (all(_close(got[n], v, d) for n, (_, _, v, d) in targets.items()) and _close(gap, margin[2], margin[3])
            and bool(np.all(x >= lo) and np.all(x <= hi)) and all(x[a] < x[b] for a, b in order)):
        return dict(zip(configs, (float(v) for v in x), strict=True)), {**got, "margin": gap}
    return None
