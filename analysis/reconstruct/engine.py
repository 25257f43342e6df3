"""Deterministic integer solver behind the reconstruction.

Methods note. Every printed per-cell number constrains integers: a cell mean of n rows
of k checks is T/(n k); a paired effect over P complete pairs is D/(P k). The solver
works in three small exact steps, no floating point:

1. ``solve_paired`` searches the GRIM candidate totals of the control mean, the
   treatment mean and the paired effect of one configuration together with the
   totals of its unpaired rows, so that paired treatment - paired control = D. Among
   solutions it keeps the one closest to the printed values (sum of absolute errors
   in exact rationals), ties to the lexicographically smallest (T_c, T_t, D). A
   printed value with no integer total (a GRIM failure) is replaced by its nearest
   total and reported as inconsistent.
2. ``distribute`` splits a total over rows by the *near-binary rule* (rows are
   "effectively binary", paper section 4): with g rows required at >= half recall,
   those g rows start at ceil(k/2) and the others at 0; the remainder is added
   greedily, filling one row to k before starting the next (high group first, the
   low group capped at ceil(k/2) - 1). Rows are returned in descending order. Free cells may
   first spread a share lam of their total evenly (rule R2b, see icc_fit).
3. ``pick_subset`` chooses rows whose checks sum to a printed total (exact search over
   value multiplicities, larger values first; earliest rows of each value).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from analysis.reconstruct.granularity import grim_totals, nearest_total


class ReconstructionError(ValueError):
    """The printed primitives admit no integer solution under the stated structure."""


@dataclass(frozen=True, slots=True)
class CellTotal:
    """An integer total chosen for one printed mean."""

    total: int
    """Checks passed summed over the cell's rows (or the paired difference total)."""
    denom: int
    """n * k (rows or pairs times checks per row)."""
    consistent: bool
    """False when no integer total prints as the published value (GRIM failure)."""


def cell_total(value: float, decimals: int, n: int, k: int, *, signed: bool = False) -> CellTotal:
    """The candidate total closest to the printed value (nearest total if none is consistent)."""
    cands = grim_totals(value, decimals, n, k, signed=signed)
    v = Fraction(str(value))
    if cands:
        best = min(cands, key=lambda t: (abs(Fraction(t, n * k) - v), t))
        return CellTotal(best, n * k, True)
    return CellTotal(nearest_total(value, n, k, signed=signed), n * k, False)


@dataclass(frozen=True, slots=True)
class PairedSolution:
    """Integer outcome totals of one configuration's control and treatment arm."""

    control: CellTotal
    """Total over the valid control rows."""
    treatment: CellTotal
    """Total over the valid treatment rows."""
    diff: CellTotal
    """Paired total: sum over complete pairs of treatment - control checks."""
    control_unpaired: int
    """Checks of the control rows without a treatment partner."""
    treatment_unpaired: int
    """Checks of the treatment rows without a control partner."""


def _cands(value: float, decimals: int, n: int, k: int, signed: bool) -> tuple[tuple[int, ...], bool]:
    c = grim_totals(value, decimals, n, k, signed=signed)
    return (c, True) if c else ((nearest_total(value, n, k, signed=signed),), False)


def solve_paired(c_mean: tuple[float, int], t_mean: tuple[float, int], effect: tuple[float, int],
                 n_c: int, n_t: int, pairs: int, k: int) -> PairedSolution:
    """Exact search for (T_c, T_t, D, u_c, u_t) matching the three printed numbers of a Table 3 row."""
    if pairs > min(n_c, n_t):
        raise ReconstructionError(f"{pairs} complete pairs need at least that many rows of each arm "
                                  f"(have {n_c} control, {n_t} treatment); fix the row counts")
    cc, okc = _cands(c_mean[0], c_mean[1], n_c, k, False)
    tc, okt = _cands(t_mean[0], t_mean[1], n_t, k, False)
    dc, okd = _cands(effect[0], effect[1], pairs, k, True)
    uc_max, ut_max = (n_c - pairs) * k, (n_t - pairs) * k
    vc, vt, vd = (Fraction(str(x[0])) for x in (c_mean, t_mean, effect))
    best = None
    for tc_ in cc:
        for tt_ in tc:
            for d in dc:
                # paired treatment - paired control = d; paired = total - unpaired
                # choose u_c then u_t = tt_ - (tc_ - u_c) - d
                for uc in range(uc_max + 1):
                    pc = tc_ - uc
                    if pc < 0 or pc > pairs * k:
                        continue
                    pt = pc + d
                    ut = tt_ - pt
                    if not (0 <= pt <= pairs * k and 0 <= ut <= ut_max):
                        continue
                    err = (abs(Fraction(tc_, n_c * k) - vc) + abs(Fraction(tt_, n_t * k) - vt)
                           + abs(Fraction(d, pairs * k) - vd))
                    key = (err, tc_, tt_, d, uc)
                    if best is None or key < best[0]:
                        best = (key, tc_, tt_, d, uc, ut)
    if best is None:
        raise ReconstructionError(
            f"no integer outcomes give control {c_mean[0]} ({n_c} rows), treatment {t_mean[0]} ({n_t} rows) "
            f"and paired effect {effect[0]} over {pairs} pairs; check the transcription of this table row")
    _, tc_, tt_, d, uc, ut = best
    return PairedSolution(CellTotal(tc_, n_c * k, okc), CellTotal(tt_, n_t * k, okt),
                          CellTotal(d, pairs * k, okd), uc, ut)


def distribute(total: int, n: int, k: int, ge_half: int | None = None, lam: Fraction = Fraction(0)) -> list[int]:
    """Near-binary split of `total` checks over n rows; exactly `ge_half` rows reach ceil(k/2) when given.

    Without `ge_half`, a share `lam` of the total (rounded down) is first spread evenly over the rows
    (rule R2b, fitted to the printed ICC); the rest fills rows to k one at a time.
    """
    if n == 0:
        if total:
            raise ReconstructionError(f"cannot place {total} checks on zero rows")
        return []
    if not 0 <= total <= n * k:
        raise ReconstructionError(f"total {total} is outside [0, {n * k}] for {n} rows of {k} checks")
    half = -(-k // 2)
    if ge_half is None:
        even = int(lam * total)
        base, extra = divmod(even, n)
        rows = [base + 1] * extra + [base] * (n - extra)
        left = total - even
        for i in range(n):
            add = min(left, k - rows[i])
            rows[i] += add
            left -= add
        return sorted(rows, reverse=True)
    g = ge_half
    lo_cap = half - 1
    if not (0 <= g <= n) or total < g * half or total > g * k + (n - g) * lo_cap:
        raise ReconstructionError(f"{total} checks over {n} rows cannot have exactly {g} rows at >= {half}/{k}")
    high = [half] * g
    low = [0] * (n - g)
    extra = total - g * half
    for i in range(g):
        add = min(extra, k - half)
        high[i] += add
        extra -= add
    for i in range(n - g):
        add = min(extra, lo_cap)
        low[i] += add
        extra -= add
    return sorted(high + low, reverse=True)


def pick_subset(values: Sequence[int], count: int, total: int) -> list[int]:
    """Indices of exactly `count` values summing to `total` (exact search over value multiplicities).

    The multiplicity of each distinct value is chosen greedily from the largest value down with
    backtracking (memoised on (value index, count left, total left)); within a value the earliest
    indices are taken.
    """
    avail: dict[int, int] = {}
    for v in values:
        avail[v] = avail.get(v, 0) + 1
    distinct = sorted(avail, reverse=True)
    memo: dict[tuple[int, int, int], tuple[int, ...] | None] = {}

    def solve(i: int, cnt: int, tot: int) -> tuple[int, ...] | None:
        if i == len(distinct):
            return () if cnt == 0 and tot == 0 else None
        key = (i, cnt, tot)
        if key not in memo:
            v, res = distinct[i], None
            for x in range(min(avail[v], cnt), -1, -1):
                if v * x > tot:
                    continue
                sub = solve(i + 1, cnt - x, tot - v * x)
                if sub is not None:
                    res = (x, *sub)
                    break
            memo[key] = res
        return memo[key]

    plan = solve(0, count, total)
    if plan is None:
        raise ReconstructionError(f"no {count} of the {len(values)} candidate rows sum to {total} checks")
    out: list[int] = []
    for v, x in zip(distinct, plan, strict=True):
        out += [i for i, y in enumerate(values) if y == v][:x]
    return sorted(out)
