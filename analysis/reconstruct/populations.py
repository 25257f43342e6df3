"""Row populations of the reconstruction, one function per printed table (module note in RECONSTRUCTION.md).

Methods note. Each function turns the primitives of one table into rows with integer
outcomes through ``engine`` (exact GRIM search, near-binary split, pairing) and records
every structural choice as a named rule (``rules``) that RECONSTRUCTION.md lists.
Repeats are filled in descending order of outcome within each arm, so a complete pair
joins the i-th best control row with the i-th best treatment row; unpaired slots are the
last planned repeats.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from analysis.reconstruct.claims import Claims
from analysis.reconstruct.engine import ReconstructionError, cell_total, distribute, solve_paired
from analysis.reconstruct.granularity import grim_totals
from analysis.reconstruct.layout import (
    ANCHOR,
    DEEP_RUNS,
    OUT_OF_WINDOW,
    PANEL,
    SUPPORT,
    SUPPORT_ARMS,
)

K5, K1 = 14, 7


@dataclass
class Builder:
    """Accumulates rows and the findings met on the way."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, str]] = field(default_factory=list)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    runs: list[tuple[str, str, int]] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    lam: Fraction = Fraction(0)
    icc_share: Fraction = Fraction(0)
    icc_moves: int = 0
    claims_read: dict[str, set[str]] = field(default_factory=dict)

    def add(self, *, group: str, config: str, arm: str, repeat: int, passed: int | None, cell: str,
            scenario: str = "S5", valid: bool = True, reason: str | None = None, k: int = K5,
            suffix: str = "") -> dict[str, Any]:
        row = {"row_id": f"{group}/{scenario}/{arm}/{repeat:02d}{suffix}", "scenario": scenario,
               "configuration": config, "execution_group": group, "repeat": repeat, "arm": arm,
               "valid": valid, "invalid_reason": reason, "checks_total": k, "checks_passed": passed,
               "cell": cell}
        self.rows.append(row)
        return row

    def finding(self, cid: str, status: str, note: str) -> None:
        self.findings.append({"id": cid, "status": status, "note": note})


def _v(c: Claims, cid: str) -> Any:
    return c.by_id[cid].value


def _vd(c: Claims, cid: str) -> tuple[float, int]:
    cl = c.by_id[cid]
    return (cl.value, cl.decimals)  # type: ignore[return-value]


def _place(b: Builder, *, group: str, config: str, arm: str, values: list[int], repeats: list[int],
           cell: str, scenario: str = "S5", k: int = K5) -> list[dict[str, Any]]:
    return [b.add(group=group, config=config, arm=arm, repeat=r, passed=v, cell=cell, scenario=scenario, k=k)
            for r, v in zip(repeats, values, strict=True)]


# ---------------------------------------------------------------- Table 3 (primary panel)
def _panel_arm_values(key: str, arm: str, paired_total: int, pairs: int, unpaired_total: int, unpaired: int,
                      c: Claims, lam: Fraction = Fraction(0)) -> tuple[list[int], list[int]]:
    """Near-binary paired and unpaired outcomes of one Table 3 arm, honouring the 4.7.1 deep-table counts."""
    ge = {("granite_4_1_8b", "q"): "deep.granite_4_1_8b.q.rows_ge_half",
          ("ling_2_6_flash", "j"): "deep.ling_2_6_flash.j.rows_ge_half",
          ("ling_2_6_flash", "q"): "deep.ling_2_6_flash.q.rows_ge_half",
          ("glm_5_2", "j"): "borderline.glm_5_2.j_rows_ge_half",
          ("glm_5_2", "q"): "borderline.glm_5_2.q_rows_ge_half"}.get((key, arm))
    unp = distribute(unpaired_total, unpaired, K5)
    g = None
    if ge is not None:
        g = int(_v(c, ge)) - sum(1 for x in unp if 2 * x >= K5)
    if key == "granite_4_1_8b" and arm == "j":
        # 4.7.1: the 2 five-heading rows average 0.643 (granite16.h5: 18 checks); the other 10 rows
        # carry none; rows >= 0.5 = 6 in all -> both five-heading rows and 4 heading-less rows.
        h5_total = cell_total(*_vd(c, "granite16.h5.mean"), int(_v(c, "granite16.h5.rows")), K5).total
        h5 = distribute(h5_total, int(_v(c, "deep.granite_4_1_8b.j.rows_h5")), K5,
                        ge_half=int(_v(c, "deep.granite_4_1_8b.j.rows_h5")))
        rest = int(_v(c, "deep.granite_4_1_8b.j.rows_ge_half")) - len(h5)
        h0 = distribute(paired_total - h5_total, pairs - len(h5), K5, ge_half=rest)
        return h5 + h0, unp  # the five-heading rows first (rule R17 tags them)
    return distribute(paired_total, pairs, K5, ge_half=g, lam=lam if arm == "q" else Fraction(0)), unp


def _panel(b: Builder, c: Claims) -> None:
    """Table 3: the twenty partition runs (rules R1-R4 in RECONSTRUCTION.md)."""
    for i, (key, config) in enumerate(PANEL, start=1):
        group = f"partition-{i:02d}"
        p = f"t3.{key}."
        n_j, n_q, pairs = (int(_v(c, p + s)) for s in ("j_rows", "q_rows", "complete_pairs"))
        planned = int(_v(c, "design.deep.rows_per_arm" if key in DEEP_RUNS else "design.standard.rows_per_arm"))
        b.runs.append((config, group, planned))
        b.groups[group] = ("j", "q")
        sol = solve_paired(_vd(c, p + "j_mean"), _vd(c, p + "q_mean"), _vd(c, p + "paired_q_minus_j"),
                           n_j, n_q, pairs, K5)
        for arm, tot in (("j", sol.control), ("q", sol.treatment)):
            if not tot.consistent:
                b.finding(p + f"{arm}_mean", "inconsistent",
                          f"no total of {tot.denom} checks prints as {_v(c, p + arm + '_mean')}; the paired effect "
                          f"and the other arm force {tot.total}/{tot.denom} = "
                          f"{float(Fraction(tot.total, tot.denom)):.4f}")
        b.totals[p + "j"], b.totals[p + "q"], b.totals[p + "d"] = sol.control.total, sol.treatment.total, sol.diff.total
        pj = sol.control.total - sol.control_unpaired
        pq = sol.treatment.total - sol.treatment_unpaired
        jv, ju = _panel_arm_values(key, "j", pj, pairs, sol.control_unpaired, n_j - pairs, c)
        qv, qu = _panel_arm_values(key, "q", pq, pairs, sol.treatment_unpaired, n_q - pairs, c, b.lam)
        reps = list(range(1, pairs + 1))
        placed = _place(b, group=group, config=config, arm="j", values=jv, repeats=reps, cell=p + "j")
        if key not in DEEP_RUNS:  # deep runs print rows >= 0.5, so their q split is not free
            for r in _place(b, group=group, config=config, arm="q", values=qv, repeats=reps, cell=p + "q"):
                r["free"] = True
        else:
            _place(b, group=group, config=config, arm="q", values=qv, repeats=reps, cell=p + "q")
        if key == "granite_4_1_8b":
            for r in placed[: int(_v(c, "deep.granite_4_1_8b.j.rows_h5"))]:
                r["h5"] = True
        nxt = pairs + 1
        # one-arm repeats: the arm with extra rows keeps them; the other arm's slot is a catch-up row
        for arm, extra, other in (("j", ju, "q"), ("q", qu, "j")):
            for v in extra:
                b.add(group=group, config=config, arm=arm, repeat=nxt, passed=v, cell=p + arm)
                b.add(group=group, config=config, arm=other, repeat=nxt, passed=None, cell=p + other,
                      valid=False, reason="catchup")
                nxt += 1
        for repeat in range(nxt, planned + 1):  # both arms missing: infrastructure failures, no outcome
            for arm in ("j", "q"):
                b.add(group=group, config=config, arm=arm, repeat=repeat, passed=None, cell=p + arm,
                      valid=False, reason="infrastructure")


def _out_of_window(b: Builder) -> None:
    """The three out-of-window configurations: 4 repeats, every j and q row 7/14 (rule R5)."""
    for i, config in enumerate(OUT_OF_WINDOW, start=len(PANEL) + 1):
        group = f"partition-{i:02d}"
        b.runs.append((config, group, 4))
        b.groups[group] = ("j", "q")
        for arm in ("j", "q"):
            _place(b, group=group, config=config, arm=arm, values=[7] * 4, repeats=[1, 2, 3, 4],
                   cell=f"oow.{config}.{arm}")


# ---------------------------------------------------------------- anchor ladder (4.3) and S1 (4.4)
def _split_full(total: int, n: int, k: int, full: int) -> list[int]:
    """Exactly `full` rows at k; the rest near-binary but capped at k - 1."""
    rest = total - full * k
    if rest < 0 or rest > (n - full) * (k - 1):
        raise ReconstructionError(f"{total} checks over {n} rows cannot have exactly {full} full rows")
    out, left = [], rest
    for _ in range(n - full):
        v = min(left, k - 1)
        out.append(v)
        left -= v
    return [k] * full + out


def _ladder(b: Builder, c: Claims) -> None:
    """Two anchor sweeps of 5 repeats, arms j q m o p on S5 and S1 (rules R6-R8)."""
    groups = ("anchor-a", "anchor-b")
    reps = [(g, r) for g in groups for r in range(1, 6)]
    for g in groups:
        b.groups[g] = ("o", "m", "j", "q", "p")
    both_ = ("both_full", "m_only_full", "q_only_full", "neither_full")
    n = sum(int(_v(c, f"ladder.mcnemar.{x}")) for x in both_)  # the printed 2x2 covers every ladder pair
    n_p = int(_v(c, "fillex.p_described.rows"))
    tot = {a: cell_total(*_vd(c, f"ladder.{a}.mean"), n_p if a == "p" else n, K5).total for a in "jqmop"}
    both = int(_v(c, "ladder.mcnemar.both_full"))
    m_only = int(_v(c, "ladder.mcnemar.m_only_full"))
    q_only = int(_v(c, "ladder.mcnemar.q_only_full"))
    q_full, m_full = both + q_only, both + m_only
    qv = _split_full(tot["q"], n, K5, q_full)
    mv = _split_full(tot["m"], n, K5, m_full)
    # pairing by the printed 2x2 (both, m only, q only, neither): q's full rows first meet m's full rows
    neither = n - both - m_only - q_only
    pairs = _pair_by_table(qv, mv, K5, both, q_only, m_only, neither, full=True)
    for (g, r), (qx, mx) in zip(reps, pairs, strict=True):
        b.add(group=g, config=ANCHOR, arm="q", repeat=r, passed=qx, cell="ladder.q")
        b.add(group=g, config=ANCHOR, arm="m", repeat=r, passed=mx, cell="ladder.m")
    for a in "jo":
        for (g, r), v in zip(reps, distribute(tot[a], n, K5, lam=b.lam if a == "o" else Fraction(0)), strict=True):
            row = b.add(group=g, config=ANCHOR, arm=a, repeat=r, passed=v, cell=f"ladder.{a}")
            row["free"] = a == "o"
    pv = distribute(tot["p"], n_p, K5)
    for (g, r), v in zip(reps[:n_p], pv, strict=True):
        b.add(group=g, config=ANCHOR, arm="p", repeat=r, passed=v, cell="ladder.p")
    for g, r in reps[n_p:]:
        b.add(group=g, config=ANCHOR, arm="p", repeat=r, passed=None, cell="ladder.p", valid=False, reason="catchup")
    # S1: one row per ladder block and arm (n = 10; GRIM agrees: 0.300 of 7 checks needs 10 rows, 21/70).
    for a in "jpqom":
        cid = f"scenario.single_chunk.{a}"
        t = cell_total(*_vd(c, cid), n, K1)
        for (g, r), v in zip(reps, distribute(t.total, n, K1), strict=True):
            b.add(group=g, config=ANCHOR, arm=a, repeat=r, passed=v, cell=cid, scenario="S1", k=K1)


# ---------------------------------------------------------------- reduced-ceiling runs (4.5, 4.6)
def _pair_by_table(first: list[int], second: list[int], k: int, both: int, f_only: int, s_only: int,
                   neither: int, *, full: bool = False) -> list[tuple[int, int]]:
    """Pair two outcome lists so the paired 2x2 (success = recall >= 0.5, or == 1 with full) has the printed cells."""
    hi = (lambda v: v == k) if full else (lambda v: 2 * v >= k)
    fh = [v for v in first if hi(v)]
    fl = [v for v in first if not hi(v)]
    sh = [v for v in second if hi(v)]
    sl = [v for v in second if not hi(v)]
    if (len(fh), len(sh)) != (both + f_only, both + s_only) or len(fl) != s_only + neither:
        raise ReconstructionError("the outcomes do not admit the printed paired 2x2 table; check its transcription")
    return [*zip(fh[:both], sh[:both], strict=True), *zip(fh[both:], sl[:f_only], strict=True),
            *zip(fl[:s_only], sh[both:], strict=True), *zip(fl[s_only:], sl[f_only:f_only + neither], strict=True)]


def _ceiling(b: Builder, c: Claims) -> None:
    """Anchor ceiling runs (8 + 4 repeats) and the glm-5.2 run (4 repeats) (rules R9-R11)."""
    glm = "z-ai/glm-5.2"
    b.groups["ceiling-anchor-a"] = ("j", "t")
    b.groups["ceiling-anchor-b"] = ("j", "t", "m", "u")
    b.groups["ceiling-glm"] = ("j", "t")
    n_j, n_t = int(_v(c, "ceiling.j.n")), int(_v(c, "ceiling.t.n"))
    jt = cell_total(*_vd(c, "ceiling.j.mean"), n_j, K5).total
    tt = cell_total(*_vd(c, "ceiling.t.mean"), n_t, K5).total
    jv = distribute(jt, n_j, K5, ge_half=int(_v(c, "ceiling.j.rows_recalled")))
    tv = distribute(tt, n_t, K5, ge_half=int(_v(c, "ceiling.t.rows_recalled")))
    # glm: j recalls perfectly on 4 of 4 rows; t has 2 of 4 rows >= half (near-binary: 14, 14, 0, 0)
    gj = [K5] * int(_v(c, "ceiling2.glm_5_2.j_rows"))
    gt_n = int(c.by_id["ceiling2.glm_5_2.t_rows"].of or 4)
    gt = distribute(int(_v(c, "ceiling2.glm_5_2.t_rows")) * K5, gt_n, K5)
    glm_both = sum(1 for v in gt if 2 * v >= K5)
    both, j_only = int(_v(c, "ceiling.mcnemar.both")), int(_v(c, "ceiling.mcnemar.j_only"))
    t_only, neither = int(_v(c, "ceiling.mcnemar.t_only")), int(_v(c, "ceiling.mcnemar.neither"))
    a_pairs = _pair_by_table(jv, tv[: n_t - 1] if 2 * tv[-1] < K5 else tv, K5, both - glm_both,
                             j_only - (len(gj) - glm_both), t_only, neither)
    unpartnered_t = tv[-1]
    slots = [("ceiling-anchor-a", r) for r in range(1, 9)] + [("ceiling-anchor-b", r) for r in range(1, 5)]
    # a_pairs fills the slots in order and leaves the last one to the unpartnered t row below
    for (g, r), (x, y) in zip(slots, a_pairs, strict=False):
        b.add(group=g, config=ANCHOR, arm="j", repeat=r, passed=x, cell="ceiling.j")
        b.add(group=g, config=ANCHOR, arm="t", repeat=r, passed=y, cell="ceiling.t")
    g, r = slots[-1]
    b.add(group=g, config=ANCHOR, arm="t", repeat=r, passed=unpartnered_t, cell="ceiling.t")
    b.add(group=g, config=ANCHOR, arm="j", repeat=r, passed=None, cell="ceiling.j", valid=False, reason="catchup")
    for a in "mu":
        n = int(_v(c, f"ceiling.{a}.n"))
        t = cell_total(*_vd(c, f"ceiling.{a}.mean"), n, K5).total
        vals = distribute(t, n, K5, ge_half=int(_v(c, f"ceiling.{a}.rows_recalled")))
        _place(b, group="ceiling-anchor-b", config=ANCHOR, arm=a, values=vals, repeats=[1, 2, 3, 4],
               cell=f"ceiling.{a}")
    _place(b, group="ceiling-glm", config=glm, arm="j", values=gj, repeats=[1, 2, 3, 4], cell="ceiling2.glm_5_2.j")
    _place(b, group="ceiling-glm", config=glm, arm="t", values=gt, repeats=[1, 2, 3, 4], cell="ceiling2.glm_5_2.t")


# ---------------------------------------------------------------- Table 1 supporting arms (4.1)
def support_repeats(c: Claims, key: str) -> int:
    """Rule R12: the smallest n >= 4 that makes the most of the model's printed cells GRIM-consistent."""
    best = None
    for n in range(4, 21):
        ok = 0
        for a in SUPPORT_ARMS:
            cl = c.by_id[f"t1.{key}.{a}"]
            if cl.value is None or grim_totals(cl.value, cl.decimals, n, K5):  # type: ignore[arg-type]
                ok += 1
        if best is None or ok > best[0]:
            best = (ok, n)
    return best[1]  # type: ignore[index]


def _support(b: Builder, c: Claims) -> None:
    """Table 1: one supporting sweep per model, every measured arm on every repeat (rules R12-R13)."""
    for key, config in SUPPORT:
        n = support_repeats(c, key)
        group = f"support-{key.replace('_', '-')}"
        arms = tuple(a for a in SUPPORT_ARMS if c.by_id[f"t1.{key}.{a}"].value is not None)
        b.groups[group] = arms + (("j",) if config == ANCHOR else ())
        for a in arms:
            cid = f"t1.{key}.{a}"
            t = cell_total(*_vd(c, cid), n, K5)
            if not t.consistent:
                from analysis.reconstruct.granularity import feasible_row_counts
                common = feasible_row_counts(c, tuple(f"t1.{key}.{x}" for x in SUPPORT_ARMS), n_max=60)
                b.finding(cid, "reachable under a choice" if common else "inconsistent",
                          f"no total of {n} rows x 14 checks prints as {_v(c, cid)} "
                          f"(n = {n} by rule R12, which fits the model's other cells); nearest {t.total}/{t.denom} = "
                          f"{t.total / t.denom:.4f}; the smallest row count shared by all five printed cells is "
                          f"{common[0] if common else 'above 60'}")
            for r in _place(b, group=group, config=config, arm=a, values=distribute(t.total, n, K5, lam=b.lam),
                            repeats=list(range(1, n + 1)), cell=cid):
                r["free"] = True
        if config == ANCHOR:
            _anchor_corpus_extra(b, c, group, n)


def _anchor_corpus_extra(b: Builder, c: Claims, group: str, n: int) -> None:
    """Rule R14: the 28-row anchor j corpus = 10 ladder + 11 ceiling + the j rows of the anchor support sweep."""
    have = [r for r in b.rows if r["configuration"] == ANCHOR and r["arm"] == "j" and r["valid"]
            and r["scenario"] == "S5"]
    need = int(_v(c, "anchor.j_large_corpus.n")) - len(have)
    if need != n:
        raise ReconstructionError(f"anchor corpus needs {need} more j rows but the support sweep has {n} repeats")
    total = cell_total(*_vd(c, "anchor.j_large_corpus.mean"), need + len(have), K5).total
    rest = total - sum(r["checks_passed"] for r in have)
    ge = int(_v(c, "ceiling2.qwen3_6_35b_a3b.j_rows")) - sum(1 for r in have if 2 * r["checks_passed"] >= K5)
    _place(b, group=group, config=ANCHOR, arm="j", values=distribute(rest, need, K5, ge_half=ge),
           repeats=list(range(1, need + 1)), cell="anchor.j_large_corpus")


# ---------------------------------------------------------------- original 4-repeat runs (4.6, 4.7.1)
def _originals(b: Builder, c: Claims) -> None:
    """Rule R15: the 4 extra j rows of granite (16-row fill example) and ling (16 rows), in their own groups."""
    for key, config, total_cid, n_cid in (
            ("granite_4_1_8b", "ibm-granite/granite-4.1-8b",
             "fillex.granite_4_1_8b.recall", "fillex.granite_4_1_8b.rows"),
            ("ling_2_6_flash", "inclusionai/ling-2.6-flash",
             "fillex.ling_2_6_flash.recall", "fillex.ling_2_6_flash.rows")):
        group = f"original-{key.replace('_', '-')}"
        b.groups[group] = ("j",)
        if key == "granite_4_1_8b":  # rows and total from the printed heading split (14 x 0.194 + 2 x 0.643)
            n16 = int(_v(c, "granite16.h0.rows")) + int(_v(c, "granite16.h5.rows"))
            total16 = (cell_total(*_vd(c, "granite16.h0.mean"), int(_v(c, "granite16.h0.rows")), K5).total
                       + cell_total(*_vd(c, "granite16.h5.mean"), int(_v(c, "granite16.h5.rows")), K5).total)
        else:
            n16 = int(_v(c, n_cid))
            total16 = cell_total(*_vd(c, total_cid), n16, K5).total
        n = n16 - int(_v(c, f"t3.{key}.j_rows"))
        rest = total16 - b.totals[f"t3.{key}.j"]
        _place(b, group=group, config=config, arm="j", values=distribute(rest, n, K5),
               repeats=list(range(1, n + 1)), cell=f"fillex.{key}")


def _catchup_outcomes(b: Builder) -> None:
    """Rule R3: a catch-up row recalls 1.000 when the valid rows of its cell average >= 0.5 (a working arm),
    else 0.000 (paper 6: 'two removed from an arm that was working and four from arms that were failing')."""
    cells: dict[str, list[int]] = {}
    for r in b.rows:
        if r["valid"] and r["checks_passed"] is not None:
            cells.setdefault(r["cell"], []).append(r["checks_passed"])
    for r in b.rows:
        if r["invalid_reason"] == "catchup":
            vals = cells[r["cell"]]
            r["checks_passed"] = r["checks_total"] if 2 * sum(vals) >= r["checks_total"] * len(vals) else 0


def build_rows(c: Claims, lam: Fraction = Fraction(0)) -> Builder:
    """All populations, in a fixed order (`lam`: the even share of rule R2b)."""
    b = Builder(lam=lam)
    with rule(c, "R1", "R2", "R3", "R4", "R17"):
        _panel(b, c)
    with rule(c, "R5"):
        _out_of_window(b)
    with rule(c, "R6-R8"):
        _ladder(b, c)
    with rule(c, "R9-R11", "R3"):
        _ceiling(b, c)
    with rule(c, "R12", "R13", "R14"):
        _support(b, c)
    with rule(c, "R15"):
        _originals(b, c)
    with rule(c, "R3"):
        _catchup_outcomes(b)
    return b


def rule(c: Claims, *ids: str) -> Any:
    """The reads inside the block belong to rules `ids` (checked when `c` is a TrackedClaims)."""
    from contextlib import nullcontext
    tracked = getattr(c, "rule", None)
    return tracked(*ids) if callable(tracked) else nullcontext()
