"""Claim id -> recomputation from the v1 package (through the estimators).

Methods note. Each entry is a function of an AuditContext returning a number. Table and
cell claims go through ``cells.cell_summary`` (pooled over the execution groups the
reconstruction assigns to that table), panel claims through ``build_results`` (paired,
bounds, families), McNemar p-values through ``exact.paired_mcnemar`` on the reconstructed
pairs, exploratory claims through the secondary-analysis keys of results.json
(analysis.estimators.secondary_results).
"""
from __future__ import annotations

import contextlib
from typing import Any, Protocol

import polars as pl

from analysis.audit.context import AuditContext, NotDeterminable
from analysis.estimators.common import as_float, valid_outcome_rows
from analysis.reconstruct.layout import ANCHOR, PANEL, SUPPORT


class Fn(Protocol):
    """A recomputation: called with the context alone (loop values are bound as keyword defaults)."""

    def __call__(self, ctx: AuditContext, /) -> Any: ...


REGISTRY: dict[str, Fn] = {}

LADDER = ("anchor-a", "anchor-b")
CEIL = ("ceiling-anchor-a", "ceiling-anchor-b")
GLM = "z-ai/glm-5.2"
CORPUS = ("anchor-a", "anchor-b", "ceiling-anchor-a", "ceiling-anchor-b", "support-qwen3-6-35b-a3b")


def _reg(cid: str, fn: Fn) -> None:
    REGISTRY[cid] = fn


def _eff(ctx: AuditContext, config: str) -> dict:
    e = ctx.results["panel"]["effects"].get(config)
    if e is None:
        raise NotDeterminable(f"{config} is not in the reconstructed panel")
    return e


def _fill(ctx: AuditContext, config: str) -> float:
    return ctx.results["fill"]["per_configuration"][config]["fill"]


# ---------------------------------------------------------------- Table 3 and panel (4.7)
for _key, _cfg in PANEL:
    _p = f"t3.{_key}."
    for _field, _name in (("j_mean", "control_mean"), ("q_mean", "treatment_mean"), ("complete_pairs", "pairs"),
                          ("paired_q_minus_j", "effect"), ("j_rows", "control_rows"), ("q_rows", "treatment_rows")):
        _reg(_p + _field, lambda ctx, c=_cfg, n=_name: _eff(ctx, c)[n])
    _reg(_p + "j_fill", lambda ctx, c=_cfg: _fill(ctx, c))

for _cid, _k in (("panel.mean", "mean"), ("panel.median", "median"), ("panel.iqr.lo", "q1"), ("panel.iqr.hi", "q3"),
                 ("panel.range.lo", "min"), ("panel.range.hi", "max"), ("panel.n_positive", "positive"),
                 ("panel.n_negative", "negative"), ("panel.n_zero", "zero"), ("panel.loo.lo", "loo_min"),
                 ("panel.loo.hi", "loo_max"), ("panel.dispersion_interval.lo", "dispersion_lo"),
                 ("panel.dispersion_interval.hi", "dispersion_hi")):
    _reg(_cid, lambda ctx, k=_k: ctx.results["panel"][k])
_reg("design.panel_configs", lambda ctx: ctx.results["panel"]["configurations"])
_reg("sparse.n_sparse_configs", lambda ctx: ctx.results["panel"]["configurations"]
     - ctx.results["sparse"]["min_pairs_4"]["configurations"])
for _s, _k in (("ge4_pairs", "min_pairs_4"), ("equal_arm_counts", "equal_counts")):
    for _f in ("configs", "mean", "median"):
        _reg(f"sparse.{_s}.{_f}",
             lambda ctx, k=_k, f=_f: ctx.results["sparse"][k]["configurations" if f == "configs" else f])


def _excl_mimo(ctx: AuditContext, what: str) -> Any:
    eff = {c: e["effect"] for c, e in ctx.results["panel"]["effects"].items() if c != "xiaomi/mimo-v2.5"}
    import numpy as np
    x = np.array(sorted(eff.values()))
    return {"configs": len(x), "mean": float(x.mean()), "median": float(np.median(x))}[what]


for _f in ("configs", "mean", "median"):
    _reg(f"sparse.excl_mimo_v2_5.{_f}", lambda ctx, f=_f: _excl_mimo(ctx, f))
_reg("bounds.planned_repeat.lo", lambda ctx: ctx.results["bounds"]["lo"])
_reg("bounds.planned_repeat.hi", lambda ctx: ctx.results["bounds"]["hi"])
for _cid, _k in (("family.mean", "mean"), ("family.lofo.lo", "lofo_min"), ("family.lofo.hi", "lofo_max"),
                 ("family.dispersion_interval.lo", "dispersion_lo"), ("family.dispersion_interval.hi", "dispersion_hi"),
                 ("design.families", "families")):
    _reg(_cid, lambda ctx, k=_k: ctx.results["families"][k])
_reg("design.out_of_window_configs", lambda ctx: len(ctx.results["panel_detail"]["out_of_window"]))
_reg("design.endpoints_swept", lambda ctx: len(ctx.package.study.partition_runs))
_reg("design.graded_facts", lambda ctx: int(ctx.rows.filter(pl.col("scenario") == "S5")["checks_total"].max()))
_reg("design.single_chunk.graded_facts",
     lambda ctx: int(ctx.rows.filter(pl.col("scenario") == "S1")["checks_total"].max()))
_reg("design.standard.rows_per_arm", lambda ctx: min(r.planned_repeats for r in ctx.package.study.partition_runs))
_reg("design.deep.rows_per_arm", lambda ctx: max(r.planned_repeats for r in ctx.package.study.partition_runs))
for _a in ("f", "n", "j", "p", "t"):
    _reg(f"design.arms.{_a}.ceiling_chars",
         lambda ctx, a=_a: int(ctx.rows.filter(pl.col("arm") == a)["declared_chars"].max()))
_reg("design.arms.q.total_chars", lambda ctx: int(ctx.rows.filter(pl.col("arm") == "q")["declared_chars"].max()))

# ---------------------------------------------------------------- 4.7.1 threshold / fill
_reg("threshold.j_fail.configs", lambda ctx: ctx.results["fill"]["rescue"]["failing"])
_reg("threshold.q_rescue.configs", lambda ctx: ctx.results["fill"]["rescue"]["rescued"])


def _split(ctx: AuditContext, side: str) -> list[str]:
    """Configurations above ('positive') or below ('negative') the fill cut, only when fill separates them."""
    sep = ctx.results["fill"]["rescue"]["separation"]
    if not sep["separates"]:
        raise NotDeterminable("fill does not separate the threshold classes in the reconstruction")
    return sep[side]


_reg("threshold.high_fill.configs", lambda ctx: len(_split(ctx, "positive")))
_reg("threshold.high_fill.crossing", lambda ctx: sum(1 for c in _split(ctx, "positive")
                                                     if ctx.results["panel"]["effects"][c]["treatment_mean"] >= 0.5))
_reg("threshold.low_fill.configs", lambda ctx: len(_split(ctx, "negative")))
_reg("threshold.low_fill.crossing", lambda ctx: sum(1 for c in _split(ctx, "negative")
                                                    if ctx.results["panel"]["effects"][c]["treatment_mean"] >= 0.5))
_reg("threshold.low_fill.positive_effect", lambda ctx: sum(1 for c in _split(ctx, "negative")
                                                           if ctx.results["panel"]["effects"][c]["effect"] > 0))
for _cid, _k in (("threshold.fail8.fill_effect", "failing"),
                 ("threshold.fail8_excl_borderline.fill_effect", "failing_excl_borderline"),
                 ("threshold.all20.fill_effect", "all")):
    for _m in ("pearson", "spearman"):
        _reg(f"{_cid}.{_m}", lambda ctx, k=_k, m=_m: ctx.results["fill"]["correlations"][k][m])
for _cid, _i in (("threshold.fail8.nonnegative", 0), ("threshold.fail8.gain_ge_0_10", 1),
                 ("threshold.fail8.gain_ge_0_20", 2)):
    _reg(_cid, lambda ctx, i=_i: ctx.results["fill"]["gains"][i]["count"])
_reg("borderline.glm_5_2.unpaired_gap", lambda ctx: _eff(ctx, GLM)["treatment_mean"] - _eff(ctx, GLM)["control_mean"])
_reg("borderline.glm_5_2.j_rows_ge_half", lambda ctx: ctx.cell(GLM, ["partition-20"], "j")["rows_partial"])
_reg("borderline.glm_5_2.q_rows_ge_half", lambda ctx: ctx.cell(GLM, ["partition-20"], "q")["rows_partial"])
_reg("borderline.margin.all", lambda ctx: ctx.results["fill"]["rescue"]["separation"]["margin"])
_reg("borderline.margin.excl_borderline",
     lambda ctx: ctx.results["fill"]["rescue_excl_borderline"]["separation"]["margin"])

_DEEP = {"granite_4_1_8b": ("ibm-granite/granite-4.1-8b", "partition-05"),
         "ling_2_6_flash": ("inclusionai/ling-2.6-flash", "partition-07")}
for _key, (_cfg, _grp) in _DEEP.items():
    for _a in "jq":
        _reg(f"deep.{_key}.{_a}.rows_ge_half", lambda ctx, c=_cfg, g=_grp, a=_a: ctx.cell(c, [g], a)["rows_partial"])
        for _h in range(6):
            _reg(f"deep.{_key}.{_a}.rows_h{_h}", lambda ctx, c=_cfg, g=_grp, a=_a, h=_h: ctx.all_rows(c, [g], a).filter(
                 pl.col("valid"), pl.col("headings_carried") == h).height)
    _reg(f"deep.{_key}.q.fill", lambda ctx, c=_cfg, g=_grp: ctx.cell(c, [g], "q")["mean_fill"])


def _granite16(ctx: AuditContext, h: int, what: str) -> Any:
    sub = ctx.rows.filter(pl.col("configuration") == "ibm-granite/granite-4.1-8b", pl.col("arm") == "j",
                          pl.col("valid"), pl.col("execution_group").is_in(["partition-05", "original-granite-4-1-8b"]),
                          pl.col("headings_carried") == h)
    return sub.height if what == "rows" else as_float((sub["checks_passed"] / sub["checks_total"]).mean())


for _h in (0, 5):
    for _w in ("rows", "mean"):
        _reg(f"granite16.h{_h}.{_w}", lambda ctx, h=_h, w=_w: _granite16(ctx, h, w))

# ---------------------------------------------------------------- Table 1 (4.1)
for _key, _cfg in SUPPORT:
    for _a in "fnklm":
        _reg(f"t1.{_key}.{_a}",
             lambda ctx, k=_key, c=_cfg, a=_a: ctx.cell(c, [f"support-{k.replace('_', '-')}"], a)["mean_recall"])


def _t1(ctx: AuditContext, arm: str) -> list[float]:
    out = []
    for key, cfg in SUPPORT:
        with contextlib.suppress(NotDeterminable):
            out.append(ctx.cell(cfg, [f"support-{key.replace('_', '-')}"], arm)["mean_recall"])
    return out


_reg("t1.f.models_failing", lambda ctx: sum(1 for x in _t1(ctx, "f") if x < 0.5))
_reg("t1.m.models_succeeding", lambda ctx: sum(1 for x in _t1(ctx, "m") if x >= 0.5))
_reg("t1.l.models_succeeding", lambda ctx: sum(1 for x in _t1(ctx, "l") if x >= 0.5))
for _a in "lnk":
    _reg(f"t1.{_a}.range.lo", lambda ctx, a=_a: min(_t1(ctx, a)))
    _reg(f"t1.{_a}.range.hi", lambda ctx, a=_a: max(_t1(ctx, a)))
_reg("design.supporting_configs", lambda ctx: len(_t1(ctx, "m")))


def _k_m_gap(ctx: AuditContext) -> float:
    pairs = []
    for key, cfg in SUPPORT:
        g = [f"support-{key.replace('_', '-')}"]
        with contextlib.suppress(NotDeterminable):
            pairs.append((ctx.cell(cfg, g, "m")["mean_recall"], ctx.cell(cfg, g, "k")["mean_recall"]))
    return sum(m - k for m, k in pairs) / len(pairs)


_reg("t1.k_vs_m.mean_gap", _k_m_gap)

# ---------------------------------------------------------------- ladder (4.3) and scenarios (4.4)
for _a in "jqmop":
    _reg(f"ladder.{_a}.mean", lambda ctx, a=_a: ctx.cell(ANCHOR, LADDER, a)["mean_recall"])
    _reg(f"scenario.single_chunk.{_a}", lambda ctx, a=_a: ctx.cell(ANCHOR, LADDER, a, "S1")["mean_recall"])
_reg("ladder.q_minus_j", lambda ctx: ctx.paired_diff(ANCHOR, LADDER, "j", "q")[0])
_reg("ladder.m_minus_q", lambda ctx: ctx.paired_diff(ANCHOR, LADDER, "q", "m")[0])
_reg("ladder.n_paired_rows", lambda ctx: ctx.paired_diff(ANCHOR, LADDER, "j", "q")[1])
_reg("ladder.q.full_rows", lambda ctx: ctx.cell(ANCHOR, LADDER, "q")["rows_full"])
_reg("ladder.m.full_rows", lambda ctx: ctx.cell(ANCHOR, LADDER, "m")["rows_full"])
_reg("ladder.sweeps", lambda ctx: ctx.rows.filter(pl.col("configuration") == ANCHOR, pl.col("arm") == "q",
                                                  pl.col("execution_group").is_in(list(LADDER)))["execution_group"].n_unique())


def _lad(ctx: AuditContext) -> Any:
    return ctx.mcnemar("m", "q", [(ANCHOR, g) for g in LADDER], 1.0).complete


_reg("ladder.mcnemar.m_only_full", lambda ctx: _lad(ctx).b)
_reg("ladder.mcnemar.q_only_full", lambda ctx: _lad(ctx).c)
_reg("ladder.mcnemar.both_full", lambda ctx: _lad(ctx).both)
_reg("ladder.mcnemar.neither_full", lambda ctx: _lad(ctx).neither)
_reg("ladder.mcnemar.p", lambda ctx: _lad(ctx).p_value)
_reg("anchor.j_large_corpus.mean", lambda ctx: ctx.cell(ANCHOR, CORPUS, "j")["mean_recall"])
_reg("anchor.j_large_corpus.n", lambda ctx: ctx.cell(ANCHOR, CORPUS, "j")["rows"])
_reg("fillex.qwen3_6_35b_a3b.carried_chars", lambda ctx: ctx.cell(ANCHOR, CORPUS, "j")["mean_carried_chars"])
_reg("fillex.qwen3_6_35b_a3b.fill", lambda ctx: ctx.cell(ANCHOR, CORPUS, "j")["mean_fill"])
_reg("ceiling2.qwen3_6_35b_a3b.j_rows", lambda ctx: ctx.cell(ANCHOR, CORPUS, "j")["rows_partial"])
_reg("ceiling2.qwen3_6_35b_a3b.j_fill", lambda ctx: ctx.cell(ANCHOR, CEIL, "j")["mean_fill"])
_reg("fillex.p_described.rows", lambda ctx: ctx.cell(ANCHOR, LADDER, "p")["rows"])
_reg("fillex.p_described.carried_chars", lambda ctx: ctx.cell(ANCHOR, LADDER, "p")["mean_carried_chars"])
_reg("fillex.p_described.fill", lambda ctx: ctx.cell(ANCHOR, LADDER, "p")["mean_fill"])
_reg("fillex.deepseek_v4_pro.carried_chars",
     lambda ctx: ctx.cell("deepseek/deepseek-v4-pro", ["partition-02"], "j")["mean_carried_chars"])
for _key, _cfg, _grp in (("granite_4_1_8b", "ibm-granite/granite-4.1-8b", "partition-05"),
                         ("ling_2_6_flash", "inclusionai/ling-2.6-flash", "partition-07")):
    _gs = [_grp, f"original-{_key.replace('_', '-')}"]
    _reg(f"fillex.{_key}.rows", lambda ctx, c=_cfg, g=_gs: ctx.cell(c, g, "j")["rows"])
    _reg(f"fillex.{_key}.carried_chars", lambda ctx, c=_cfg, g=_gs: ctx.cell(c, g, "j")["mean_carried_chars"])
    _reg(f"fillex.{_key}.fill", lambda ctx, c=_cfg, g=_gs: ctx.cell(c, g, "j")["mean_fill"])
    _reg(f"fillex.{_key}.recall", lambda ctx, c=_cfg, g=_gs: ctx.cell(c, g, "j")["mean_recall"])

# ---------------------------------------------------------------- ceiling (4.5, 4.6)
for _a in "jtmu":
    _reg(f"ceiling.{_a}.n", lambda ctx, a=_a: ctx.cell(ANCHOR, CEIL, a)["rows"])
    _reg(f"ceiling.{_a}.rows_recalled", lambda ctx, a=_a: ctx.cell(ANCHOR, CEIL, a)["rows_partial"])
    _reg(f"ceiling.{_a}.mean", lambda ctx, a=_a: ctx.cell(ANCHOR, CEIL, a)["mean_recall"])
    _reg(f"ceiling.{_a}.carried_chars", lambda ctx, a=_a: ctx.cell(ANCHOR, CEIL, a)["mean_carried_chars"])
    _reg(f"ceiling.{_a}.folds_clipped", lambda ctx, a=_a: ctx.cell(ANCHOR, CEIL, a)["folds_clipped"])
_reg("ceiling.u.folds_total", lambda ctx: ctx.cell(ANCHOR, CEIL, "u")["folds"])
_reg("ceiling.j.folds_total", lambda ctx: ctx.cell(ANCHOR, CEIL, "j")["folds"])
_reg("ceiling.j.nonconforming_folds", lambda ctx: int(ctx.all_rows(ANCHOR, CEIL, "j")["parse_failures"].sum()))
_reg("ceiling.t.nonconforming_folds", lambda ctx: int(ctx.all_rows(ANCHOR, CEIL, "t")["parse_failures"].sum()))
_reg("ceiling.j.nonconforming_fraction", lambda ctx: int(ctx.all_rows(ANCHOR, CEIL, "j")["parse_failures"].sum())
     / int(ctx.all_rows(ANCHOR, CEIL, "j")["folds"].sum()))
_reg("ceiling2.glm_5_2.j_rows", lambda ctx: ctx.cell(GLM, ["ceiling-glm"], "j")["rows_partial"])
_reg("ceiling2.glm_5_2.t_rows", lambda ctx: ctx.cell(GLM, ["ceiling-glm"], "t")["rows_partial"])
_reg("ceiling2.glm_5_2.j_fill", lambda ctx: ctx.cell(GLM, ["ceiling-glm"], "j")["mean_fill"])
_reg("design.ceiling2.glm_repeats_per_arm", lambda ctx: ctx.cell(GLM, ["ceiling-glm"], "j")["rows"])
_CR = [(ANCHOR, g) for g in CEIL] + [(GLM, "ceiling-glm")]


def _cm(ctx: AuditContext) -> Any:
    return ctx.mcnemar("j", "t", _CR, 0.5)


_reg("ceiling.mcnemar.j_only", lambda ctx: _cm(ctx).complete.b)
_reg("ceiling.mcnemar.t_only", lambda ctx: _cm(ctx).complete.c)
_reg("ceiling.mcnemar.both", lambda ctx: _cm(ctx).complete.both)
_reg("ceiling.mcnemar.neither", lambda ctx: _cm(ctx).complete.neither)
_reg("ceiling.mcnemar.complete_pairs", lambda ctx: _cm(ctx).complete.pairs)
_reg("ceiling.mcnemar.p", lambda ctx: _cm(ctx).complete.p_value)
_reg("ceiling.mcnemar.p_missing_j_as_failure", lambda ctx: _cm(ctx).missing_as_failure.p_value)
_reg("ceiling.mcnemar.p_missing_j_as_success", lambda ctx: _cm(ctx).missing_as_success.p_value)
_reg("ceiling.mcnemar.unpartnered_t_rows", lambda ctx: _cm(ctx).second_only)
_reg("ceiling.mcnemar.j_ge_half",
     lambda ctx: ctx.cell(ANCHOR, CEIL, "j")["rows_partial"] + ctx.cell(GLM, ["ceiling-glm"], "j")["rows_partial"])
_reg("ceiling.mcnemar.t_ge_half",
     lambda ctx: ctx.cell(ANCHOR, CEIL, "t")["rows_partial"] + ctx.cell(GLM, ["ceiling-glm"], "t")["rows_partial"])
_reg("design.ceiling_runs", lambda ctx: len(_CR))


def _t_rows(ctx: AuditContext) -> pl.DataFrame:
    return ctx.rows.filter(pl.col("arm") == "t", pl.col("valid"), pl.col("scenario") == "S5")


_reg("carrier.t.stop_calls", lambda ctx: int(_t_rows(ctx)["finish_stop"].sum()))
_reg("carrier.t.rows_near_ceiling", lambda ctx: _t_rows(ctx).filter(
     (pl.col("declared_chars") - pl.col("carried_chars")).abs() <= 0.005 * pl.col("declared_chars")).height)

# ---------------------------------------------------------------- headings (4.8)
def _hd(ctx: AuditContext, table: str, h: int, what: str) -> Any:
    for lvl in ctx.results["headings_detail"][table]:
        if lvl["headings"] == h:
            return {"rows": lvl["rows"], "mean": lvl["mean"], "rows_ge_half": lvl["rows_at_threshold"]}[what]
    raise NotDeterminable(f"no headings level {h}")


for _h in range(6):
    for _w in ("rows", "mean", "rows_ge_half"):
        _reg(f"headings.h{_h}.{_w}", lambda ctx, h=_h, w=_w: _hd(ctx, "table_single_field_arms", h, w))
_reg("headings.pooled.rows", lambda ctx: ctx.results["headings"]["rows"])
_reg("headings.pooled.r", lambda ctx: ctx.results["headings"]["pooled_r"])


def _arm_h(ctx: AuditContext, arm: str, h: int | None, config: str | None = None) -> int:
    sub = valid_outcome_rows(ctx.rows, "S5", [arm]).filter(pl.col("headings_carried").is_not_null())
    if config is not None:
        sub = sub.filter(pl.col("configuration") == config, pl.col("execution_group").str.starts_with("partition-"))
    return sub.height if h is None else sub.filter(pl.col("headings_carried") == h).height


_reg("headings.q.rows_h5", lambda ctx: _arm_h(ctx, "q", 5))
_reg("headings.k.rows_h5", lambda ctx: _arm_h(ctx, "k", 5))
_reg("headings.j.rows", lambda ctx: _arm_h(ctx, "j", None))
for _h in (0, 1, 5):
    _reg(f"headings.j.rows_h{_h}", lambda ctx, h=_h: _arm_h(ctx, "j", h))
_reg("headings.deepseek_v4_pro.j.rows_h5", lambda ctx: _arm_h(ctx, "j", 5, "deepseek/deepseek-v4-pro"))
_reg("headings.gemma_4_31b_it.j.rows_h5", lambda ctx: _arm_h(ctx, "j", 5, "google/gemma-4-31b-it"))
_reg("headings.deepseek_v4_flash.j.headings_per_row", lambda ctx: float(ctx.rows.filter(
     pl.col("configuration") == "deepseek/deepseek-v4-flash", pl.col("arm") == "j",
     pl.col("execution_group") == "partition-01")["headings_carried"].mean()))
for _name, _key in (("all", "within_all_arms"), ("single_field", "within_single_field_arms"),
                    ("j", "within_control_arm")):
    for _f in ("cells", "rows", "slope", "r"):
        _reg(f"within.{_name}.{_f}", lambda ctx, k=_key, f=_f: ctx.results["headings_detail"][k][f])

# ---------------------------------------------------------------- 4.10 audit, 4.11 fabrication, 6
_ca = lambda ctx: ctx.results["carrier_audit"]  # noqa: E731
_reg("audit.rows", lambda ctx: _ca(ctx)["audited_rows"])
_reg("audit.agree", lambda ctx: _ca(ctx)["agree_rows"])
_reg("audit.disagree", lambda ctx: _ca(ctx)["audited_rows"] - _ca(ctx)["agree_rows"])
_reg("audit.answer_correct_carrier_absent", lambda ctx: _ca(ctx)["absent_answered_rows"])


def _ca_arm(ctx: AuditContext, arm: str, f: str) -> Any:
    for a in _ca(ctx)["per_arm"]:
        if a["arm"] == arm:
            return a[f]
    raise NotDeterminable(f"no audited {arm} rows")


for _a in "qjmtu":
    _reg(f"audit.{_a}.rows", lambda ctx, a=_a: _ca_arm(ctx, a, "audited_rows"))
    _reg(f"audit.{_a}.discrepant_rows", lambda ctx, a=_a: _ca_arm(ctx, a, "present_missed_rows"))
    _reg(f"audit.{_a}.discrepant_fraction", lambda ctx, a=_a: _ca_arm(ctx, a, "share"))


def _fab(ctx: AuditContext, arm: str, f: str) -> Any:
    for a in ctx.results["failure_modes"]["fabrication"]["per_arm"]:
        if a["arm"] == arm:
            return a[f]
    raise NotDeterminable(f"no failing {arm} rows")


for _a in "jqntf":
    _reg(f"fab.{_a}.silent_fabrication", lambda ctx, a=_a: _fab(ctx, a, "fabricates"))
    _reg(f"fab.{_a}.abstains", lambda ctx, a=_a: _fab(ctx, a, "abstains"))
_reg("fab.f.failing_rows", lambda ctx: _fab(ctx, "f", "failing_rows"))


def _pf(ctx: AuditContext, group: str, f: str) -> Any:
    for g in ctx.results["failure_modes"]["parse_failures"]:
        if g["group"] == group:
            return g[f]
    raise NotDeterminable(f"no parse-failure group {group}")


for _g, _name in (("single_field", "single_field_schema"), ("all", "all")):
    for _f, _k in (("rows", "failure_rows"), ("valid", "failure_valid"), ("mean", "failure_mean"),
                   ("clean_mean", "clean_mean"), ("clean_rows", "clean_rows")):
        _reg(f"pf.{_g}.{_f}", lambda ctx, n=_name, k=_k: _pf(ctx, n, k))


def _catch(ctx: AuditContext) -> pl.DataFrame:
    return ctx.rows.filter(pl.col("invalid_reason") == "catchup", pl.col("scenario") == "S5")


_reg("catchup.rows", lambda ctx: _catch(ctx).height)
for _a in "jpq":
    _reg(f"catchup.{_a}.rows", lambda ctx, a=_a: _catch(ctx).filter(pl.col("arm") == a).height)
_reg("catchup.plain.rows", lambda ctx: _catch(ctx).filter(pl.col("arm").is_in(["o", "m", "l", "u"])).height)
for _i in range(6):
    _reg(f"catchup.recall_{_i + 1}", lambda ctx, i=_i: sorted(
         (_catch(ctx)["checks_passed"] / _catch(ctx)["checks_total"]).to_list(), reverse=True)[i])
_reg("catchup.from_working_arm",
     lambda ctx: _catch(ctx).filter(pl.col("checks_passed") == pl.col("checks_total")).height)
_reg("catchup.from_failing_arms", lambda ctx: _catch(ctx).filter(pl.col("checks_passed") == 0).height)

# ---------------------------------------------------------------- 4 Results: dependence; 4.4 grader agreement
_reg("icc.s5.valid_rows", lambda ctx: ctx.results["dependence"]["rows"])
_reg("icc.s5.icc", lambda ctx: ctx.results["dependence"]["icc"])
_reg("icc.s5.design_effect", lambda ctx: ctx.results["dependence"]["design_effect"])
_reg("icc.s5.effective_obs_per_row", lambda ctx: ctx.results["dependence"]["effective_per_row"])


def _grader(ctx: AuditContext) -> int:
    g = ctx.results["failure_modes"]["graders"]
    if not g or g.get("agree_rows") is None:
        raise NotDeterminable("no presence-grader verdicts in checks.csv")
    return g["agree_rows"]


_reg("scenario.grader_agreement.rows", _grader)


# ---------------------------------------------------------------- design constants the package encodes
_reg("design.recency_cutoff", lambda ctx: ctx.package.study.recency_cutoff.isoformat())
_reg("design.folds_per_run", lambda ctx: int(ctx.rows["folds"].max()))
_reg("design.panel.min_complete_pairs", lambda ctx: min(e["pairs"] for e in ctx.results["panel"]["effects"].values()))


def _expected(ctx: AuditContext, check: str) -> str:
    v = ctx.package.checks.filter(pl.col("check") == check)["expected"].unique().to_list()
    if len(v) != 1:
        raise NotDeterminable(f"check {check!r} has {len(v)} planted values")
    return v[0]


def _fabricated(ctx: AuditContext, check: str) -> str:
    """The one value fabricating answers give for `check` (neither the planted value nor an abstention)."""
    planted = _expected(ctx, check)
    prefix = f"{check}: "
    seen = {line[len(prefix):] for a in ctx.rows["answer"].drop_nulls().to_list() for line in a.split("\n")
            if line.startswith(prefix)} - {planted, "not recorded"}
    seen.discard("")
    if len(seen) != 1:
        raise NotDeterminable(f"fabricating answers give {len(seen)} values for {check!r}")
    return seen.pop()


_reg("fab.example.fabricated_port", lambda ctx: int(_fabricated(ctx, "ledger service port")))
_reg("fab.example.fabricated_timestamp", lambda ctx: _fabricated(ctx, "migration window start").split()[0])
_reg("fab.example.fabricated_shards", lambda ctx: int(_fabricated(ctx, "shard count").split()[0]))
_reg("fab.example.planted_port", lambda ctx: int(_expected(ctx, "ledger service port")))
_reg("fab.example.planted_timestamp", lambda ctx: _expected(ctx, "migration window start").split()[0])
_reg("design.graded.shard_count_value", lambda ctx: int(_expected(ctx, "shard count").split()[0]))


def _flash(ctx: AuditContext) -> pl.DataFrame:
    return ctx.rows.filter(pl.col("execution_group") == "support-qwen3-6-flash", pl.col("valid"))


_reg("t1.qwen3_6_flash.rotation.arms", lambda ctx: _flash(ctx)["arm"].n_unique())
_reg("t1.qwen3_6_flash.rotation.repeats", lambda ctx: _flash(ctx)["repeat"].n_unique())
_reg("t1.qwen3_6_flash.rotation.l_leads",
     lambda ctx: _flash(ctx).filter(pl.col("arm") == "l", pl.col("position") == 1).height)
_reg("t1.qwen3_6_flash.rotation.m_leads",
     lambda ctx: _flash(ctx).filter(pl.col("arm") == "m", pl.col("position") == 1).height)
