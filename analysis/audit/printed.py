"""Derived claims computed from the paper's PRINTED cells alone, with no reconstructed row read (issue 19).

Methods note. ``PrintedCells`` builds, from the claims file only, the frames the estimators read:
- Table 3 (4.7): one row per configuration with its printed pairs, row counts and fill, and the exact
  effect and arm means the printed values imply: a mean of n rows of 14 checks is an integer total over
  n x 14, and where exactly one total prints as published (GRIM) that rational is used; otherwise the
  printed value itself. Families are the model-id prefix (the page's 'eleven model families'); planned
  repeats are the printed 4, or 12 for the three deep runs the text names (layout.DEEP_RUNS).
- the two McNemar tables (4.3, 4.5) as aligned success vectors, and Table 1, the ladder means, the
  audit, fabrication and catch-up counts as printed.
These go through the same estimator code the package analysis uses (``paired.summarize`` and its
subsets, ``families.family_weighted``, ``fill.fill_analysis``, ``exact.counts``); the planned-repeat
bounds, which the estimator computes from rows, use their closed form over the printed cells
(sum of q recalls - sum of j recalls -/+ the unpaired and missing repeats, per configuration).
``PRINTED`` maps each derived claim computable this way to a function returning ``FromPrinted``: the
value at face value, the cells it used, and the alternative readings tried when that value misses.
A claim not in ``PRINTED`` needs row-level data the paper does not print.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import polars as pl

from analysis.audit.derive import Reading
from analysis.estimators import exact, paired
from analysis.estimators import families as families_mod
from analysis.estimators import fill as fill_mod
from analysis.estimators.common import Contrast
from analysis.params import Params
from analysis.reconstruct.claims import Claim, Claims, matches_printed
from analysis.reconstruct.granularity import grim_totals
from analysis.reconstruct.layout import CUTOFF, DEEP_RUNS, PANEL, SUPPORT, family_of

CHECKS = 14
MIMO = "xiaomi/mimo-v2.5"


@dataclass(frozen=True, slots=True)
class FromPrinted:
    """A derived claim computed from printed cells."""

    value: Any
    """The value at face value of the printed cells (exact GRIM rationals where they are unique)."""
    cells: str
    """Which printed cells, in words."""
    readings: tuple[Reading, ...] = ()
    """Alternative readings tried when the value misses (a stated choice each)."""
    matched: bool | None = None
    """An explicit verdict for a claim that is a bound ('more than three times'); None: compare at printed
    precision."""
    inconsistent: str = ""
    """Why no data give the printed value, when a consistency check proves it."""


class _Recording(Mapping[str, Claim]):
    """Claims by id that records every id read (to find computations that read an implied cell)."""

    def __init__(self, by: Mapping[str, Claim], reads: set[str]) -> None:
        self._by, self._reads = by, reads

    def __getitem__(self, cid: str) -> Claim:
        self._reads.add(cid)
        return self._by[cid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)


IMPLIED: dict[str, tuple[str, ...]] = {
    "ladder.mcnemar.q_only_full": ("ladder.n_paired_rows", "ladder.mcnemar.m_only_full", "ladder.mcnemar.both_full",
                                   "ladder.mcnemar.neither_full", "ladder.q.full_rows"),
}
"""Cells the claims file records that the paper does not print as a number (the claim's note says 'Not printed as
a number'), with the printed claims the transcription inferred each from. A computation of claim X that reads
cell C with X in IMPLIED[C] gives X back by construction (derive.IMPLIED); tests/test_audit_printed.py checks this
table against the claims file's notes."""


def implied_cells(cid: str, reads: Iterable[str]) -> tuple[str, ...]:
    """The cells among `reads` that the transcription inferred from claim `cid` (sorted)."""
    return tuple(sorted(c for c in set(reads) if cid in IMPLIED.get(c, ())))


class PrintedCells:
    """The paper's printed cells as the estimators' input frames (module note)."""

    def __init__(self, claims: Claims, params: Params) -> None:
        self.claims = claims
        self.reads: set[str] = set()
        """Claim ids read through ``by`` since the caller last cleared it (cached frames record theirs once)."""
        self.by = _Recording(claims.by_id, self.reads)
        self.params = params

    def v(self, cid: str) -> Any:
        return self.by[cid].value

    def exact_mean(self, cid: str, rows: int, *, signed: bool = False) -> Fraction:
        """The rational total/(rows x 14) that prints as the claim, when exactly one does; else the printed value."""
        c = self.by[cid]
        totals = grim_totals(c.value, c.decimals or 0, int(rows), CHECKS, signed=signed)  # type: ignore[arg-type]
        return Fraction(totals[0], int(rows) * CHECKS) if len(totals) == 1 else Fraction(str(c.value))

    @cached_property
    def table3(self) -> pl.DataFrame:
        """Table 3 as paired.paired_effects_frame would give it, plus fill (module note)."""
        recs = []
        deep, standard = int(self.v("design.deep.rows_per_arm")), int(self.v("design.standard.rows_per_arm"))
        for key, cfg in PANEL:
            p = f"t3.{key}."
            pairs, jr, qr = (int(self.v(p + f)) for f in ("complete_pairs", "j_rows", "q_rows"))
            eff = self.exact_mean(p + "paired_q_minus_j", pairs, signed=True)
            recs.append({"configuration": cfg, "execution_group": f"printed-{key}", "family": family_of(cfg),
                         "published": CUTOFF, "planned_repeats": deep if key in DEEP_RUNS else standard,
                         "pairs": pairs, "diff_sum": int(eff * pairs * CHECKS), "denominator": pairs * CHECKS,
                         "control_rows": jr, "treatment_rows": qr,
                         "control_mean": float(self.exact_mean(p + "j_mean", jr)),
                         "treatment_mean": float(self.exact_mean(p + "q_mean", qr)),
                         "effect": float(eff), "fill": float(self.v(p + "j_fill"))})
        return pl.DataFrame(recs).with_columns(pl.col("published").cast(pl.Date)).sort("configuration")

    @cached_property
    def panel(self) -> paired.Panel:
        f = self.table3
        return paired.Panel(contrast=Contrast("j", "q", "S5"), recency_cutoff=dt.date(CUTOFF.year, CUTOFF.month,
                            CUTOFF.day), checks_total=CHECKS, effects=(), frame=f,
                            summary=paired.summarize(f, self.params.alpha))

    def subset(self, name: str) -> paired.PanelSummary:
        a = self.params.alpha
        return {"ge4_pairs": lambda: paired.min_pairs_subset(self.panel, 4, a),
                "equal_arm_counts": lambda: paired.equal_counts_subset(self.panel, a),
                "excl_mimo_v2_5": lambda: paired.excluded_subset(self.panel, [MIMO], a)}[name]().summary

    @cached_property
    def families(self) -> families_mod.FamilyWeighted:
        return families_mod.family_weighted(self.table3, self.params.alpha)

    def fill_analysis(self, fills: pl.DataFrame | None = None) -> fill_mod.FillAnalysis:
        t = self.table3
        eff = fill_mod.threshold_effects_frame(t["configuration"], t["effect"], t["control_mean"],
                                               t["treatment_mean"], t["pairs"])
        return fill_mod.fill_analysis(eff, t.select("configuration", "fill") if fills is None else fills,
                                      self.params)

    @cached_property
    def fills(self) -> fill_mod.FillAnalysis:
        return self.fill_analysis()

    def bounds(self) -> tuple[float, float]:
        """Planned-repeat bounds (estimators.bounds) in closed form over the printed cells (module note)."""
        lo, hi = [], []
        for r in self.table3.iter_rows(named=True):
            n, jr, qr, planned = r["pairs"], r["control_rows"], r["treatment_rows"], r["planned_repeats"]
            t_only, c_only = qr - n, jr - n
            neither = planned - n - t_only - c_only
            diff = qr * r["treatment_mean"] - jr * r["control_mean"]
            lo.append((diff - t_only - neither) / planned)
            hi.append((diff + c_only + neither) / planned)
        return float(np.mean(lo)), float(np.mean(hi))

    def mcnemar(self, b: int, c: int, both: int, neither: int) -> exact.McNemarCounts:
        """exact.counts over success vectors laid out from a printed 2x2 table."""
        first = [True] * b + [False] * c + [True] * both + [False] * neither
        second = [False] * b + [True] * c + [True] * both + [False] * neither
        return exact.counts(np.array(first, dtype=bool), np.array(second, dtype=bool))

    def t1(self, arm: str) -> list[float]:
        return [float(x) for key, _ in SUPPORT if (x := self.v(f"t1.{key}.{arm}")) is not None]


class ValueFn(Protocol):
    """A computation from the printed cells (loop values are bound as keyword defaults)."""

    def __call__(self, pc: PrintedCells, /) -> Any: ...


Fn = Callable[[PrintedCells], FromPrinted]
PRINTED: dict[str, Fn] = {}


def _reg(cid: str, cells: str, value: ValueFn) -> None:
    PRINTED[cid] = lambda pc: FromPrinted(value(pc), cells)


# ---------------------------------------------------------------- Table 3 and the panel (4.7, 6)
_T3 = "Table 3 cells (exact GRIM effects)"
for _cid, _k in (("panel.mean", "mean"), ("panel.median", "median"), ("panel.iqr.lo", "q1"), ("panel.iqr.hi", "q3"),
                 ("panel.range.lo", "min"), ("panel.range.hi", "max"), ("panel.n_positive", "positive"),
                 ("panel.n_negative", "negative"), ("panel.n_zero", "zero"), ("panel.loo.lo", "loo_min"),
                 ("panel.loo.hi", "loo_max"), ("panel.dispersion_interval.lo", "dispersion_lo"),
                 ("panel.dispersion_interval.hi", "dispersion_hi")):
    _reg(_cid, _T3 + ", paired.summarize", lambda pc, k=_k: getattr(pc.panel.summary, k))
_reg("sparse.n_sparse_configs", "Table 3 complete pairs", lambda pc: pc.panel.summary.configurations
     - pc.subset("ge4_pairs").configurations)
for _s in ("ge4_pairs", "equal_arm_counts", "excl_mimo_v2_5"):
    for _f, _k in (("configs", "configurations"), ("mean", "mean"), ("median", "median")):
        _reg(f"sparse.{_s}.{_f}", _T3 + ", the paired subset estimators",
             lambda pc, s=_s, k=_k: getattr(pc.subset(s), k))
_reg("bounds.planned_repeat.lo", _T3 + " and row counts, planned repeats 4 or 12", lambda pc: pc.bounds()[0])
_reg("bounds.planned_repeat.hi", _T3 + " and row counts, planned repeats 4 or 12", lambda pc: pc.bounds()[1])
for _cid, _k in (("family.mean", "mean"), ("family.lofo.lo", "lofo_min"), ("family.lofo.hi", "lofo_max"),
                 ("family.dispersion_interval.lo", "dispersion_lo"),
                 ("family.dispersion_interval.hi", "dispersion_hi")):
    _reg(_cid, _T3 + ", families.family_weighted", lambda pc, k=_k: getattr(pc.families, k))

# ---------------------------------------------------------------- 4.7.1 threshold and fill
_F = "Table 3 cells and printed fills, fill.fill_analysis"
_reg("threshold.j_fail.configs", _F, lambda pc: pc.fills.rescue.failing)
_reg("threshold.q_rescue.configs", _F, lambda pc: pc.fills.rescue.rescued)


def _side(pc: PrintedCells, side: str) -> list[str]:
    sep = pc.fills.rescue.separation
    return list(sep.positive if side == "positive" else sep.negative) if sep.separates else []


def _t3(pc: PrintedCells, cfg: str) -> dict:
    return pc.table3.filter(pl.col("configuration") == cfg).row(0, named=True)


_reg("threshold.high_fill.configs", _F, lambda pc: len(_side(pc, "positive")))
_reg("threshold.high_fill.crossing", _F, lambda pc: sum(_t3(pc, c)["treatment_mean"] >= 0.5
                                                        for c in _side(pc, "positive")))
_reg("threshold.low_fill.configs", _F, lambda pc: len(_side(pc, "negative")))
_reg("threshold.low_fill.crossing", _F, lambda pc: sum(_t3(pc, c)["treatment_mean"] >= 0.5
                                                       for c in _side(pc, "negative")))
_reg("threshold.low_fill.positive_effect", _F, lambda pc: sum(_t3(pc, c)["effect"] > 0 for c in _side(pc, "negative")))
for _i, _cid in enumerate(("threshold.fail8.nonnegative", "threshold.fail8.gain_ge_0_10",
                           "threshold.fail8.gain_ge_0_20")):
    _reg(_cid, _F, lambda pc, i=_i: pc.fills.gains[i].count)
_reg("borderline.margin.all", _F, lambda pc: pc.fills.rescue.separation.margin)
_reg("borderline.margin.excl_borderline", _F, lambda pc: pc.fills.rescue_excl_borderline.separation.margin)
_reg("borderline.glm_5_2.unpaired_gap", "Table 3 glm-5.2 q and j means",
     lambda pc: _t3(pc, "z-ai/glm-5.2")["treatment_mean"] - _t3(pc, "z-ai/glm-5.2")["control_mean"])
# Correlations and the gain margin: face value of the printed fills, then the fill search (printed_fills.py)
CORR = {"threshold.all20.fill_effect": "all", "threshold.fail8.fill_effect": "failing",
         "threshold.fail8_excl_borderline.fill_effect": "failing_excl_borderline"}
for _cid, _k in CORR.items():
    for _m in ("pearson", "spearman"):
        _reg(f"{_cid}.{_m}", _F, lambda pc, k=_k, m=_m: getattr(getattr(pc.fills, k), m))
_reg("threshold.fail8.gain_ge_0_20.fill_margin", _F, lambda pc: pc.fills.gains[2].separation.margin)

# ---------------------------------------------------------------- Table 1 (4.1)
_T1 = "Table 1 cells"
_reg("t1.f.models_failing", _T1, lambda pc: sum(x < 0.5 for x in pc.t1("f")))
_reg("t1.m.models_succeeding", _T1, lambda pc: sum(x >= 0.5 for x in pc.t1("m")))
_reg("t1.l.models_succeeding", _T1, lambda pc: sum(x >= 0.5 for x in pc.t1("l")))
for _a in "lnk":
    _reg(f"t1.{_a}.range.lo", _T1, lambda pc, a=_a: min(pc.t1(a)))
    _reg(f"t1.{_a}.range.hi", _T1, lambda pc, a=_a: max(pc.t1(a)))


# t1.k_vs_m.mean_gap is not here: each model weighing equally, the printed cells give 0.060, not 0.066; the
# row-weighted mean it may be needs Table 1 row counts the paper does not print (readings.k_m_gap_readings).


# ---------------------------------------------------------------- ladder (4.3) and dependence (4)
def _ladder_n(pc: PrintedCells) -> int:
    return sum(int(pc.v(f"ladder.mcnemar.{c}")) for c in ("both_full", "m_only_full", "q_only_full", "neither_full"))


def _ladder_mean(pc: PrintedCells, arm: str) -> Fraction:
    return pc.exact_mean(f"ladder.{arm}.mean", int(pc.v("ladder.n_paired_rows")))


_LAD = "the ladder means over the printed 10 rows (exact GRIM totals of 140 checks)"
_reg("ladder.q_minus_j", _LAD, lambda pc: _ladder_mean(pc, "q") - _ladder_mean(pc, "j"))
_reg("ladder.m_minus_q", _LAD, lambda pc: _ladder_mean(pc, "m") - _ladder_mean(pc, "q"))
_reg("ladder.n_paired_rows", "the sum of the ladder McNemar table's four cells",
     _ladder_n)
_reg("ladder.q.full_rows", "the ladder McNemar table: both + (10 pairs - the printed cells)",
     lambda pc: int(pc.v("ladder.mcnemar.both_full")) + int(pc.v("ladder.n_paired_rows"))
     - sum(int(pc.v(f"ladder.mcnemar.{c}")) for c in ("both_full", "m_only_full", "neither_full")))
_reg("ladder.m.full_rows", "the ladder McNemar table: both + m only",
     lambda pc: int(pc.v("ladder.mcnemar.both_full")) + int(pc.v("ladder.mcnemar.m_only_full")))
_reg("ladder.mcnemar.p", "the ladder McNemar table, exact.counts", lambda pc: pc.mcnemar(
     int(pc.v("ladder.mcnemar.m_only_full")), int(pc.v("ladder.mcnemar.q_only_full")),
     int(pc.v("ladder.mcnemar.both_full")), int(pc.v("ladder.mcnemar.neither_full"))).p_value)


def _ratio(pc: PrintedCells) -> FromPrinted:
    """'more than three times': the m - q gap over the k - m gap, over the whole rounding box of both."""
    a, b = pc.by["ladder.m_minus_q"], pc.by["t1.k_vs_m.mean_gap"]
    ha, hb = 0.5 * 10.0 ** -(a.decimals or 0), 0.5 * 10.0 ** -(b.decimals or 0)
    lo = (float(a.value) - ha) / (float(b.value) + hb)  # type: ignore[arg-type]
    x = float(a.value) / float(b.value)  # type: ignore[arg-type]
    bound = float(pc.v("ladder.m_minus_q.over_k_m_gap.min_ratio"))
    gaps = [float(m) - float(k) for key, _ in SUPPORT
            if (m := pc.v(f"t1.{key}.m")) is not None and (k := pc.v(f"t1.{key}.k")) is not None]
    own = sum(gaps) / len(gaps) if gaps else float("nan")
    return FromPrinted(x, f"printed {a.printed} / {b.printed} (at least {lo:.2f} inside their rounding; with the "
                          f"gap the Table 1 cells give at face value, {own:.3f}, it is {x * float(b.value) / own:.2f})",  # type: ignore[arg-type]
                       matched=lo > bound)


PRINTED["ladder.m_minus_q.over_k_m_gap.min_ratio"] = _ratio
_reg("icc.s5.valid_rows", "6: parse-failure rows + clean rows (57 + 563)",
     lambda pc: int(pc.v("pf.all.valid")) + int(pc.v("pf.all.clean_rows")))


def _design_effect(pc: PrintedCells) -> FromPrinted:
    c = pc.by["icc.s5.icc"]
    m = int(pc.v("design.graded_facts"))
    x = 1 + (m - 1) * Fraction(str(c.value))
    half = Fraction(1, 2 * 10 ** (c.decimals or 0))
    target = pc.by["icc.s5.design_effect"]
    need = (Fraction(str(target.value)) - 1) / (m - 1)
    ok = abs(need - Fraction(str(c.value))) <= half
    return FromPrinted(x, f"1 + {m - 1} x the printed ICC", readings=(
        Reading("the ICC is the unrounded value behind the printed one", ok,
                f"ICC {float(need):.5f}, inside the rounding of {c.printed}" if ok else "outside its rounding"),))


PRINTED["icc.s5.design_effect"] = _design_effect
_reg("icc.s5.effective_obs_per_row", "14 / the printed design effect",
     lambda pc: int(pc.v("design.graded_facts")) / Fraction(str(pc.v("icc.s5.design_effect"))))

# ---------------------------------------------------------------- ceiling (4.5), fill examples (4.6)
def _ceiling(pc: PrintedCells, missing_j: str | None) -> float:
    b, c, both, neither = (int(pc.v(f"ceiling.mcnemar.{x}")) for x in ("j_only", "t_only", "both", "neither"))
    # the unpartnered t rows that reach 0.5: the printed 3/16 less the complete pairs' t successes
    t_ok = int(pc.v("ceiling.mcnemar.t_ge_half")) - both - c
    extra = int(pc.v("ceiling.mcnemar.unpartnered_t_rows"))
    if missing_j == "failure":
        c, neither = c + t_ok, neither + extra - t_ok
    elif missing_j == "success":
        both, b = both + t_ok, b + extra - t_ok
    return pc.mcnemar(b, c, both, neither).p_value


_CM = "the 4.5 McNemar table, exact.counts"
_reg("ceiling.mcnemar.p", _CM, lambda pc: _ceiling(pc, None))
_reg("ceiling.mcnemar.p_missing_j_as_failure", _CM + " and the unpartnered t row (3/16 - both - t only reach 0.5)",
     lambda pc: _ceiling(pc, "failure"))
_reg("ceiling.mcnemar.p_missing_j_as_success", _CM + " and the unpartnered t row (3/16 - both - t only reach 0.5)",
     lambda pc: _ceiling(pc, "success"))
_reg("ceiling.mcnemar.complete_pairs", "the 4.5 McNemar table", lambda pc: sum(
     int(pc.v(f"ceiling.mcnemar.{x}")) for x in ("j_only", "t_only", "both", "neither")))
_reg("ceiling.mcnemar.j_ge_half", "4.5 and 4.6 rows recalled: anchor + glm-5.2",
     lambda pc: int(pc.v("ceiling.j.rows_recalled")) + int(pc.v("ceiling2.glm_5_2.j_rows")))
_reg("ceiling.mcnemar.t_ge_half", "4.5 and 4.6 rows recalled: anchor + glm-5.2",
     lambda pc: int(pc.v("ceiling.t.rows_recalled")) + int(pc.v("ceiling2.glm_5_2.t_rows")))
_reg("ceiling.j.nonconforming_fraction", "4 of 60 folds", lambda pc: Fraction(
     int(pc.v("ceiling.j.nonconforming_folds")), int(pc.by["ceiling.j.nonconforming_folds"].of or 0)))
_reg("fillex.granite_4_1_8b.rows", "4.7.1 heading split 14 + 2",
     lambda pc: int(pc.v("granite16.h0.rows")) + int(pc.v("granite16.h5.rows")))


def _granite_recall(pc: PrintedCells) -> Fraction:
    n0, n5 = int(pc.v("granite16.h0.rows")), int(pc.v("granite16.h5.rows"))
    return (n0 * pc.exact_mean("granite16.h0.mean", n0) + n5 * pc.exact_mean("granite16.h5.mean", n5)) / (n0 + n5)


_reg("fillex.granite_4_1_8b.recall", "4.7.1 heading split: row-weighted mean (exact GRIM totals)", _granite_recall)

for _k in ("p_described", "qwen3_6_35b_a3b", "granite_4_1_8b", "ling_2_6_flash"):
    _reg(f"fillex.{_k}.fill", "4.6 carried characters / the declared 9,600", lambda pc, k=_k: Fraction(
         int(pc.v(f"fillex.{k}.carried_chars")), int(pc.v("design.arms.j.ceiling_chars"))))
_reg("ceiling2.qwen3_6_35b_a3b.j_fill", "4.5 carried characters / the declared 9,600", lambda pc: Fraction(
     int(pc.v("ceiling.j.carried_chars")), int(pc.v("design.arms.j.ceiling_chars"))))
_reg("fab.t.abstains", "4.5/4.6 t rows (12 + 4) - the 3 at or above 0.5 - the fabricating ones",
     lambda pc: int(pc.v("ceiling.t.n")) + int(pc.v("design.ceiling2.glm_repeats_per_arm"))
     - int(pc.v("ceiling.mcnemar.t_ge_half")) - int(pc.v("fab.t.silent_fabrication")))

# ---------------------------------------------------------------- 4.10 audit, 4.11 fabrication, 6 catch-up
_ARMS = "qjmtu"
_reg("audit.rows", "4.10 per-arm audited rows", lambda pc: sum(int(pc.v(f"audit.{a}.rows")) for a in _ARMS))
_reg("audit.disagree", "4.10 per-arm discrepant rows",
     lambda pc: sum(int(pc.v(f"audit.{a}.discrepant_rows")) for a in _ARMS))
_reg("audit.agree", "4.10 per-arm audited - discrepant rows", lambda pc: sum(
     int(pc.v(f"audit.{a}.rows")) - int(pc.v(f"audit.{a}.discrepant_rows")) for a in _ARMS))
for _a in "qj":
    _reg(f"audit.{_a}.discrepant_fraction", "4.10 discrepant / audited rows",
         lambda pc, a=_a: Fraction(int(pc.v(f"audit.{a}.discrepant_rows")), int(pc.v(f"audit.{a}.rows"))))
_reg("fab.f.failing_rows", "4.11 fabricating + abstaining f rows",
     lambda pc: int(pc.v("fab.f.silent_fabrication")) + int(pc.v("fab.f.abstains")))
_reg("catchup.rows", "6: catch-up rows per arm", lambda pc: sum(int(pc.v(f"catchup.{a}.rows"))
                                                                for a in ("j", "p", "q", "plain")))
_reg("catchup.from_working_arm", "6: the six printed catch-up recalls equal to 1.000",
     lambda pc: sum(float(pc.v(f"catchup.recall_{i}")) == 1.0 for i in range(1, 7)))
_reg("catchup.from_failing_arms", "6: the six printed catch-up recalls equal to 0.000",
     lambda pc: sum(float(pc.v(f"catchup.recall_{i}")) == 0.0 for i in range(1, 7)))


def matches(claim_value: Any, decimals: int | None, x: Any) -> bool:
    """x prints as the claim's value at its printed precision (exact rationals)."""
    if x is None or isinstance(claim_value, str) or decimals is None:
        return x is not None and str(x) == str(claim_value)
    if isinstance(x, float) and not np.isfinite(x):
        return False
    fx = x if isinstance(x, Fraction) else Fraction(float(x))
    return matches_printed(fx, claim_value, decimals)
