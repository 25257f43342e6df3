"""GRIM-style granularity checks of the paper's printed means and proportions.

Methods note: a mean of n rows of k binary checks is T / (n k) for an integer total T
(GRIM, Brown & Heathers 2017). A printed value v at d decimals is consistent when some T
in [0, n k] satisfies |T/(n k) - v| <= 0.5e-d (exact rationals; a tie is accepted and
flagged). A paired mean effect over P pairs is D / (P k) with D in [-P k, P k]. A printed
"a of b" fraction is checked against a/b. No spreads (SDs) are printed, so DEBIT-style
checks have nothing to test. Rank statistics over rounded covariates are checked by trying every
order of the printed ties (``check_fill_ranks``). An inconsistent claim is a finding, reported with
its reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import polars as pl

from analysis.reconstruct.claims import Claim, Claims, matches_printed


def grim_totals(value: float, decimals: int, n: int, k: int, *, signed: bool = False) -> tuple[int, ...]:
    """Integer totals T (of n*k checks) whose T/(n*k) prints as value; signed allows T < 0."""
    if n <= 0 or k <= 0:
        return ()
    denom = n * k
    v = Fraction(str(value))
    half = Fraction(1, 2 * 10**decimals)
    lo_t = -denom if signed else 0
    first = max(lo_t, int((v - half) * denom) - 1)
    last = min(denom, int((v + half) * denom) + 1)
    return tuple(t for t in range(first, last + 1) if abs(Fraction(t, denom) - v) <= half)


def is_tie(total: int, denom: int, value: float, decimals: int) -> bool:
    """True when total/denom sits exactly half a unit from the printed value (a rounding tie)."""
    return abs(Fraction(total, denom) - Fraction(str(value))) == Fraction(1, 2 * 10**decimals)


def nearest_total(value: float, n: int, k: int, *, signed: bool = False) -> int:
    """The integer total whose mean is closest to value (ties to the smaller total)."""
    denom = n * k
    t = round(Fraction(str(value)) * denom)
    lo = -denom if signed else 0
    return min(max(t, lo), denom)


def rowround_consistent(value: float, decimals: int, total: int, n: int, k: int) -> bool:
    """Is value reachable when each row's recall is first rounded to `decimals` and the mean rounded half-up?

    Tested over every split of `total` into n rows of at most k (exact search, small n only).
    """
    if n > 12:
        return False
    q = Fraction(1, 10**decimals)

    def rnd(x: Fraction) -> Fraction:  # half-up at `decimals`
        return Fraction(int(x / q + Fraction(1, 2)), 1) * q if x >= 0 else -rnd(-x)

    target = Fraction(str(value))
    seen: set[Fraction] = set()

    def rec(left: int, rows: int, cap: int, acc: Fraction) -> bool:
        if rows == 0:
            return left == 0 and rnd(acc / n) == target
        key = (left, rows, cap, acc)
        if key in seen:
            return False
        seen.add(key)  # type: ignore[arg-type]
        for c in range(min(cap, left), -1, -1):
            if c * rows < left:  # rows are non-increasing: the rest cannot reach the total
                break
            if rec(left - c, rows - 1, c, acc + rnd(Fraction(c, k))):
                return True
        return False

    return rec(total, n, k, Fraction(0))


@dataclass(frozen=True, slots=True)
class MeanSpec:
    """A printed mean whose denominator the page gives."""

    claim: str
    """Claim id of the printed mean."""
    n: int | str
    """Row (or pair) count, or the claim id that prints it."""
    k: int
    """Checks per row (14 for S5, 7 for the single-chunk scenario)."""
    signed: bool = False
    """True for a paired difference (total may be negative)."""


def _t3(cfg: str) -> list[MeanSpec]:
    return [MeanSpec(f"t3.{cfg}.j_mean", f"t3.{cfg}.j_rows", 14),
            MeanSpec(f"t3.{cfg}.q_mean", f"t3.{cfg}.q_rows", 14),
            MeanSpec(f"t3.{cfg}.paired_q_minus_j", f"t3.{cfg}.complete_pairs", 14, True)]


T3_KEYS = ("deepseek_v4_flash", "deepseek_v4_pro", "gemma_4_26b_a4b_it", "gemma_4_31b_it", "granite_4_1_8b",
           "ling_2_6_1t", "ling_2_6_flash", "minimax_m3", "mistral_small_2603", "nemotron_3_super_120b_a12b",
           "nemotron_3_ultra_550b_a55b", "qwen3_5_122b_a10b", "qwen3_5_35b_a3b", "qwen3_5_397b_a17b", "qwen3_5_9b",
           "qwen3_6_27b", "hy3", "mimo_v2_5", "mimo_v2_5_pro", "glm_5_2")

MEAN_SPECS: tuple[MeanSpec, ...] = tuple(
    [s for c in T3_KEYS for s in _t3(c)]
    + [MeanSpec(f"ladder.{a}.mean", 9 if a == "p" else 10, 14) for a in "jqmo"] + [MeanSpec("ladder.p.mean", 9, 14)]
    + [MeanSpec("anchor.j_large_corpus.mean", "anchor.j_large_corpus.n", 14)]
    + [MeanSpec(f"ceiling.{a}.mean", f"ceiling.{a}.n", 14) for a in "jtmu"]
    + [MeanSpec(f"headings.h{h}.mean", f"headings.h{h}.rows", 14) for h in range(6)]
    + [MeanSpec("granite16.h0.mean", "granite16.h0.rows", 14), MeanSpec("granite16.h5.mean", "granite16.h5.rows", 14)]
    + [MeanSpec("fillex.granite_4_1_8b.recall", "fillex.granite_4_1_8b.rows", 14),
       MeanSpec("fillex.ling_2_6_flash.recall", "fillex.ling_2_6_flash.rows", 14)]
    + [MeanSpec("pf.single_field.mean", "pf.single_field.valid", 14),
       MeanSpec("pf.single_field.clean_mean", "pf.single_field.clean_rows", 14),
       MeanSpec("pf.all.mean", "pf.all.valid", 14), MeanSpec("pf.all.clean_mean", "pf.all.clean_rows", 14)]
)


def _resolve_n(claims: Claims, n: int | str) -> int | None:
    if isinstance(n, int):
        return n
    v = claims.by_id.get(n)
    return int(v.value) if v is not None and isinstance(v.value, (int, float)) else None


def check_means(claims: Claims, specs: tuple[MeanSpec, ...] = MEAN_SPECS) -> pl.DataFrame:
    """GRIM check of every printed mean with a printed denominator; one row per claim."""
    by = claims.by_id
    out = []
    for s in specs:
        c = by.get(s.claim)
        n = _resolve_n(claims, s.n)
        if c is None or n is None or not isinstance(c.value, (int, float)) or c.decimals is None:
            continue
        totals = grim_totals(c.value, c.decimals, n, s.k, signed=s.signed)
        denom = n * s.k
        if totals:
            tie = any(is_tie(t, denom, c.value, c.decimals) for t in totals)
            reason = "tie at the rounding boundary" if tie else ""
        else:
            near = nearest_total(c.value, n, s.k, signed=s.signed)
            rr = (not s.signed) and rowround_consistent(c.value, c.decimals, near, n, s.k)
            reason = (f"no integer total of {n} x {s.k} checks prints as {c.printed}; nearest {near}/{denom} = "
                      f"{float(Fraction(near, denom)):.6f}"
                      + ("; reachable if per-row recalls were rounded to 3 decimals before averaging" if rr else ""))
        out.append({"id": c.id, "kind": "grim", "n": n, "k": s.k, "published": float(c.value),
                    "totals": ",".join(map(str, totals)), "consistent": bool(totals), "reason": reason})
    return pl.DataFrame(out, schema={"id": pl.String, "kind": pl.String, "n": pl.Int64, "k": pl.Int64,
                                     "published": pl.Float64, "totals": pl.String, "consistent": pl.Boolean,
                                     "reason": pl.String})


def check_proportions(claims: Claims) -> pl.DataFrame:
    """Check printed fractions 'a of b' (claims whose id ends in _fraction with a matching count claim)."""
    by = claims.by_id
    out = []
    for c in claims:
        if not c.id.endswith("_fraction") or not isinstance(c.value, (int, float)):
            continue
        base = c.id[: -len("_fraction")]
        cnt = (by.get(base + "_rows") or by.get(base + "_folds")
               or by.get(base.rsplit(".", 1)[0] + ".nonconforming_folds"))
        if cnt is None or cnt.of is None or not isinstance(cnt.value, int):
            continue
        ok = matches_printed(Fraction(cnt.value, cnt.of), c.value, c.decimals or 0)
        out.append({"id": c.id, "kind": "proportion", "n": cnt.of, "k": 1, "published": float(c.value),
                    "totals": str(cnt.value), "consistent": ok,
                    "reason": "" if ok else f"{cnt.value}/{cnt.of} does not print as {c.printed}"})
    return pl.DataFrame(out, schema={"id": pl.String, "kind": pl.String, "n": pl.Int64, "k": pl.Int64,
                                     "published": pl.Float64, "totals": pl.String, "consistent": pl.Boolean,
                                     "reason": pl.String})


def feasible_row_counts(claims: Claims, ids: tuple[str, ...], k: int = 14, n_max: int = 16) -> tuple[int, ...]:
    """Row counts n (1..n_max) for which every listed printed mean has an integer total.

    For cells with no printed n.
    """
    out = []
    for n in range(1, n_max + 1):
        ok = True
        for cid in ids:
            c = claims.by_id[cid]
            if c.value is None:
                continue
            if not grim_totals(c.value, c.decimals, n, k):  # type: ignore[arg-type]
                ok = False
                break
        if ok:
            out.append(n)
    return tuple(out)


def granularity_report(claims: Claims) -> pl.DataFrame:
    """All granularity findings (means and proportions) in one table."""
    return pl.concat([check_means(claims), check_proportions(claims), check_fill_ranks(claims)])


def spearman_reachable(fills: list[float], fill_decimals: int, effects: list[float], *,
                       effect_ties: bool = False) -> tuple[float, ...]:
    """Every Spearman rho (fill vs effect) that unrounded fills inside the printed rounding intervals can give.

    Intervals of different printed values are disjoint, so only fills printed equal can change order; every
    order of each tie group is tried (average ranks for effects, as scipy does). With `effect_ties`, exactly
    equal effects may also be ordered (as float means of per-pair differences order them by their last bit),
    each tie group either tied or in any order.
    """
    import itertools

    from scipy.stats import spearmanr

    step = 10.0 ** (-fill_decimals) / 10

    def tie_groups(vals: list[float]) -> list[list[int]]:
        groups: dict[float, list[int]] = {}
        for i, f in enumerate(vals):
            groups.setdefault(f, []).append(i)
        return [g for g in groups.values() if len(g) > 1]

    ties = tie_groups(fills)
    eties = tie_groups(effects) if effect_ties else []
    out = set()
    for perms in itertools.product(*[list(itertools.permutations(g)) for g in ties]):
        x = list(fills)
        for perm in perms:
            for rank, i in enumerate(perm):
                x[i] = fills[i] + rank * step
        for eperms in itertools.product(*[[(), *itertools.permutations(g)] for g in eties]):
            y = list(effects)
            for perm in eperms:
                for rank, i in enumerate(perm):
                    y[i] = effects[i] + rank * 1e-12
            out.add(round(float(spearmanr(x, y)[0]), 12))
    return tuple(sorted(out))


def check_fill_ranks(claims: Claims) -> pl.DataFrame:
    """Rank-feasibility of the printed fill-effect Spearman correlations (4.7.1) given Table 3's printed cells."""
    by = claims.by_id
    keys = [k for k in T3_KEYS]
    fills = [float(by[f"t3.{k}.j_fill"].value) for k in keys]  # type: ignore[arg-type]
    effs = [float(by[f"t3.{k}.paired_q_minus_j"].value) for k in keys]  # type: ignore[arg-type]
    jm = [float(by[f"t3.{k}.j_mean"].value) for k in keys]  # type: ignore[arg-type]
    fail = [i for i, m in enumerate(jm) if m < 0.5]
    window = float(by["design.threshold.borderline_window"].value)  # type: ignore[arg-type]
    border = [i for i in fail if abs(jm[i] - 0.5) <= window]
    pops = {"threshold.all20.fill_effect.spearman": list(range(len(keys))),
            "threshold.fail8.fill_effect.spearman": fail,
            "threshold.fail8_excl_borderline.fill_effect.spearman": [i for i in fail if i not in border]}
    out = []
    for cid, ii in pops.items():
        c = by.get(cid)
        if c is None:
            continue
        def hit(vals: tuple[float, ...], c: Claim = c) -> bool:
            return any(matches_printed(Fraction(v).limit_denominator(10**9), c.value, c.decimals)  # type: ignore[arg-type]
                       for v in vals)
        vals = spearman_reachable([fills[i] for i in ii], 2, [effs[i] for i in ii])
        shown = ", ".join(f"{v:.3f}" for v in vals)
        ok, reason = hit(vals), ""
        if not ok:
            ok = hit(spearman_reachable([fills[i] for i in ii], 2, [effs[i] for i in ii], effect_ties=True))
            reason = (f"with tied effects at average ranks every order of the tied fills gives rho in {{{shown}}}; "
                      + (f"{c.printed} is reachable only when exactly equal effects are ordered (floating-point "
                         f"tie-breaking of equal effects)" if ok else
                         f"no order of tied fills or tied effects gives {c.printed}"))
        out.append({"id": cid, "kind": "rank", "n": len(ii), "k": 1, "published": float(c.value),  # type: ignore[arg-type]
                    "totals": shown, "consistent": ok, "reason": reason})
    return pl.DataFrame(out, schema={"id": pl.String, "kind": pl.String, "n": pl.Int64, "k": pl.Int64,
                                     "published": pl.Float64, "totals": pl.String, "consistent": pl.Boolean,
                                     "reason": pl.String})
