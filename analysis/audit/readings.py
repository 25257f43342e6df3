"""Alternative readings of claims the default recomputation misses (what would make them print as published).

Methods note. Every function returns, per claim id, the readings tried (``derive.Reading``) and, when
no reading of the printed cells can produce the value, the consistency finding (``inconsistent``):
- GRIM failures of printed means (granularity.check_means): the exact mean over the printed row count,
  and per-row recalls rounded to 3 decimals before averaging;
- Table 1 cells whose row count rule R12 chose: that count, and any other count from 1 to 60;
- the 4.7.1 Spearman correlations: every order of the fills printed equal, with tied printed effects at
  average ranks, then also every order of the tied effects (float means of per-pair differences
  order exactly equal effects by their last bit);
- the k-versus-m gap of Table 1: equal weight per model (the printed cells at face value: 0.060), and pooling rows
  with R12's row counts; "pooled with some counts" is not tried, since any value between the smallest and largest
  per-model gap passes it (a test that cannot fail). The claim needs row counts the paper does not print, so it is
  a row-level claim (not in ``printed.PRINTED``).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

from scipy.stats import spearmanr

from analysis.audit.derive import Reading
from analysis.reconstruct.claims import Claims, matches_printed
from analysis.reconstruct.granularity import MEAN_SPECS, T3_KEYS, check_means, check_proportions, grim_totals
from analysis.reconstruct.layout import PANEL, SUPPORT

Found = dict[str, tuple[list[Reading], str]]


def grim_readings(claims: Claims) -> Found:
    """Printed means no integer total of the printed row count reaches, and printed a-of-b fractions."""
    out: Found = {}
    means = check_means(claims, MEAN_SPECS).filter(~check_means(claims, MEAN_SPECS)["consistent"])
    for r in means.iter_rows(named=True):
        rr = "per-row recalls were rounded" in r["reason"]
        reads = [Reading(f"the exact mean of the printed {r['n']} rows", False, r["reason"].split(";")[0]),
                 Reading("per-row recalls are rounded to 3 decimals before averaging", rr,
                         "prints as published" if rr else "does not print as published")]
        out[r["id"]] = (reads, "" if rr else r["reason"])
    props = check_proportions(claims)
    for r in props.filter(~props["consistent"]).iter_rows(named=True):
        out[r["id"]] = ([Reading("the printed count over its printed denominator", False, r["reason"])], r["reason"])
    return out


def row_count_readings(claims: Claims, engine_findings: dict[str, str]) -> Found:
    """Table 1 cells that miss only because of the row count R12 chose."""
    from analysis.reconstruct.populations import support_repeats
    out: Found = {}
    for key, _ in SUPPORT:
        n = support_repeats(claims, key)
        for a in "fnklm":
            cid = f"t1.{key}.{a}"
            c = claims.by_id.get(cid)
            if cid not in engine_findings or c is None or not isinstance(c.value, (int, float)):
                continue
            ok = [m for m in range(1, 61) if grim_totals(c.value, c.decimals or 0, m, 14)]
            reads = [Reading(f"{n} rows per arm (rule R12, which fits the model's other cells)", False,
                             engine_findings[cid].split(";")[1].strip() if ";" in engine_findings[cid] else "")]
            reads.append(Reading("the model's sweep has another row count", bool(ok),
                                 f"n in {{{', '.join(map(str, ok[:8]))}{', ...' if len(ok) > 8 else ''}}} prints "
                                 f"{c.printed}; {engine_findings[cid].split(';')[-1].strip()}"))
            out[cid] = (reads, "" if ok else engine_findings[cid])
    return out


def _label(key: str) -> str:
    return dict(PANEL)[key].split("/", 1)[1]


def spearman_readings(claims: Claims) -> Found:
    """The three 4.7.1 fill-effect Spearman correlations over Table 3's printed fills and effects."""
    by = claims.by_id
    keys = list(T3_KEYS)
    fills = {k: float(by[f"t3.{k}.j_fill"].value) for k in keys}  # type: ignore[arg-type]
    effs = {k: float(by[f"t3.{k}.paired_q_minus_j"].value) for k in keys}  # type: ignore[arg-type]
    jm = {k: float(by[f"t3.{k}.j_mean"].value) for k in keys}  # type: ignore[arg-type]
    fail = [k for k in keys if jm[k] < 0.5]
    pops = {"threshold.all20.fill_effect.spearman": keys, "threshold.fail8.fill_effect.spearman": fail,
            "threshold.fail8_excl_borderline.fill_effect.spearman": [k for k in fail if abs(jm[k] - 0.5) > 0.02]}
    out: Found = {}
    fragments: set[str] = set()
    for cid, pop in reversed(pops.items()):
        c = by.get(cid)
        if c is None or not isinstance(c.value, (int, float)):
            continue
        fill_only = _orders(pop, fills, effs, break_effects=False)
        both = _orders(pop, fills, effs, break_effects=True)
        hit_f = [d for rho, d in fill_only
                 if matches_printed(Fraction(rho).limit_denominator(10**9), c.value, c.decimals or 0)]
        hit_b = [d for rho, d in both
                 if matches_printed(Fraction(rho).limit_denominator(10**9), c.value, c.decimals or 0)]
        # prefer the fill orders the smaller populations need, and the fewest broken effect ties
        hit_b.sort(key=lambda d: (-sum(f in d for f in fragments), d.count("<"), d))
        hit_f.sort(key=lambda d: (-sum(f in d for f in fragments), d))
        if hit_f:
            fragments.update(hit_f[0].split("; "))
        vals = sorted({round(r, 3) for r, _ in fill_only})
        reads = [Reading("fills printed equal are ordered " + (hit_f[0] if hit_f else "in any order")
                         + ", with exactly tied effects at average ranks", bool(hit_f),
                         "" if hit_f else f"rho in {{{', '.join(f'{v:.3f}' for v in vals)}}}")]
        if not hit_f:
            reads.append(Reading("exactly equal effects are ranked by floating-point tie-breaking (float means of "
                                 "per-pair differences differ in the last bit), "
                                 + (hit_b[0] if hit_b else "any order"),
                                 bool(hit_b), "" if hit_b else "never prints as published"))
        out[cid] = (reads, "" if (hit_f or hit_b) else "no order of tied fills or tied effects gives it")
    return out


def _orders(pop: Sequence[str], fills: dict[str, float], effs: dict[str, float],
            break_effects: bool) -> list[tuple[float, str]]:
    def groups(vals: dict[str, float]) -> list[list[str]]:
        g: dict[float, list[str]] = {}
        for k in pop:
            g.setdefault(vals[k], []).append(k)
        return [v for v in g.values() if len(v) > 1]
    fg = groups(fills)
    eg = groups(effs) if break_effects else []
    out = []
    for fp in itertools.product(*[list(itertools.permutations(g)) for g in fg]):
        for ep_all in itertools.product(*[[(), *itertools.permutations(g)] for g in eg]):
            ep = [p for p in ep_all if p]
            x = {k: fills[k] for k in pop}
            y = {k: effs[k] for k in pop}
            for perm in fp:
                for i, k in enumerate(perm):
                    x[k] += i * 1e-6
            for perm in ep:
                for i, k in enumerate(perm):
                    y[k] += i * 1e-9
            rho = float(spearmanr([x[k] for k in pop], [y[k] for k in pop])[0])
            desc = "; ".join(" < ".join(_label(k) for k in perm) for perm in fp)
            if ep:
                desc += " (fills); effects " + "; ".join(" < ".join(_label(k) for k in perm) for perm in ep)
            out.append((rho, desc))
    return out


def k_m_gap_readings(claims: Claims) -> Found:
    """Mean gap m - k of Table 1: equal weight per model (default) and pooled over R12's rows."""
    from analysis.reconstruct.populations import support_repeats
    c = claims.by_id.get("t1.k_vs_m.mean_gap")
    if c is None or not isinstance(c.value, (int, float)):
        return {}
    pairs = []
    for key, _ in SUPPORT:
        m, k = claims.by_id[f"t1.{key}.m"].value, claims.by_id[f"t1.{key}.k"].value
        if isinstance(m, (int, float)) and isinstance(k, (int, float)):
            pairs.append((support_repeats(claims, key), float(m) - float(k)))
    equal = sum(d for _, d in pairs) / len(pairs)
    pooled = sum(n * d for n, d in pairs) / sum(n for n, _ in pairs)
    lo, hi = min(d for _, d in pairs), max(d for _, d in pairs)
    # A reading "rows pooled with some row counts" would pass for any value in [lo, hi]: it cannot fail, so it is
    # not a reading. Only the two weightings with stated counts are tried.
    reads = [Reading("each model weighs equally (the printed cells at face value)",
                     matches_printed(Fraction(equal), c.value, c.decimals or 0), f"{equal:.3f}"),
             Reading("rows pooled over models with R12's row counts", matches_printed(Fraction(pooled), c.value,
                                                                                      c.decimals or 0),
                     f"{pooled:.3f}; a row-weighted mean needs Table 1 row counts the paper does not print (any "
                     f"value in [{lo:.3f}, {hi:.3f}] has some positive counts, so that alone tests nothing)")]
    return {c.id: (reads, "")}
