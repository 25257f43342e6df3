"""Which reconstruction rules each recomputation rests on, and which recomputations are hand arithmetic.

Methods note. ``BEHIND`` maps claim-id prefixes (longest match wins) to the rule ids
(analysis/reconstruct/rules.py) whose output rows the recomputation reads; the audit prints them
with every row and derives the status from those rules' declarations (analysis.audit.derive).
``OF`` lists, for recomputations that are plain arithmetic of printed cells (a sum, difference,
ratio, count or extreme a reader can do by hand), the printed cells they combine. Neither table
holds a status.
"""
from __future__ import annotations

PANEL_RULES = ("R1", "R2", "R3", "R4")

BEHIND: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("intro.prompt_tokens", ("R20",)), ("ladder.p_minus_j.observed_prompt_tokens", ("R20",)),
    ("icc.s5.valid_rows", ("R2", "R6-R8", "R9-R11", "R12", "R13", "R14", "R15")),
    ("icc.s5", ("R2", "R2b-R2c", "R6-R8", "R9-R11", "R12", "R13", "R14", "R15", "R24")),
    ("t1.qwen3_6_flash.rotation", ("R12", "R23")),
    ("t1.", ("R12", "R13")),
    ("design.supporting_configs", ("R0", "R12", "R13")),
    ("ladder.sweeps", ("R4", "R6-R8")), ("ladder.", ("R6-R8",)), ("scenario.single_chunk", ("R6-R8",)),
    ("scenario.grader_agreement", ("R2", "R12", "R13", "R25")),
    ("anchor.", ("R6-R8", "R9-R11", "R14")), ("fillex.qwen3_6_35b_a3b", ("R6-R8", "R9-R11", "R14", "R16")),
    ("ceiling2.qwen3_6_35b_a3b.j_rows", ("R6-R8", "R9-R11", "R14")),
    ("ceiling2.qwen3_6_35b_a3b.j_fill", ("R9-R11", "R16")),
    ("fillex.p_described.rows", ("R6-R8",)), ("fillex.", ("R2", "R15", "R16", "R6-R8")),
    ("ceiling.j.nonconforming", ("R9-R11", "R18", "R19")), ("ceiling.t.nonconforming", ("R9-R11", "R18", "R19")),
    ("ceiling.t.folds", ("R9-R11", "R19")), ("ceiling.m.folds", ("R9-R11", "R19")),
    ("ceiling.j.folds", ("R9-R11", "R19")), ("ceiling.u.folds", ("R9-R11", "R19")),
    ("ceiling.mcnemar", ("R3", "R9-R11")), ("ceiling.", ("R9-R11", "R16")), ("ceiling2.", ("R9-R11", "R16")),
    ("design.ceiling", ("R0", "R9-R11")),
    ("t3.", (*PANEL_RULES, "R16")), ("panel.", PANEL_RULES), ("sparse.", PANEL_RULES), ("bounds.", PANEL_RULES),
    ("family.", PANEL_RULES), ("design.panel", ("R0", *PANEL_RULES)),
    ("threshold.", (*PANEL_RULES, "R16")), ("borderline.", (*PANEL_RULES, "R16")),
    ("deep.", (*PANEL_RULES, "R16", "R17")), ("granite16.", ("R2", "R15", "R17")),
    ("headings.deepseek", ("R17",)), ("headings.gemma", ("R17",)),
    ("headings.", ("R2", "R12", "R13", "R17", "R17b")), ("within.", ("R2", "R12", "R13", "R17", "R17b")),
    ("audit.", ("R22",)), ("fab.example", ("R0",)), ("fab.example.fabricated", ("R21",)),
    ("fab.f.failing_rows", ("R12", "R13", "R21")),
    ("fab.t.", ("R9-R11", "R21")), ("fab.", ("R2", "R12", "R13", "R21")), ("pf.", ("R18",)), ("catchup.", ("R3",)),
    ("carrier.t", ("R9-R11", "R16", "R19")), ("carrier.j", ("R19",)),
    ("design.", ("R0",)), ("fill25.", ()), ("probe.", ()),
)


def rules_behind(cid: str) -> tuple[str, ...]:
    """Rule ids behind claim `cid` (longest matching prefix of BEHIND; () when none)."""
    best: tuple[int, tuple[str, ...]] = (-1, ())
    for prefix, rules in BEHIND:
        if cid.startswith(prefix) and len(prefix) > best[0]:
            best = (len(prefix), rules)
    return best[1]


_T1 = ("qwen3_6_local_reference", "qwen3_6_35b_a3b", "qwen3_6_flash", "hy3", "glm_5_2", "minimax_m3",
       "mistral_small_2603", "deepseek_v4_flash", "mimo_v2_5")


def _t1(arm: str) -> tuple[str, ...]:
    return tuple(f"t1.{k}.{arm}" for k in _T1)


_T3_KEYS = ("deepseek_v4_flash", "deepseek_v4_pro", "gemma_4_26b_a4b_it", "gemma_4_31b_it", "granite_4_1_8b",
            "ling_2_6_1t", "ling_2_6_flash", "minimax_m3", "mistral_small_2603", "nemotron_3_super_120b_a12b",
            "nemotron_3_ultra_550b_a55b", "qwen3_5_122b_a10b", "qwen3_5_35b_a3b", "qwen3_5_397b_a17b", "qwen3_5_9b",
            "qwen3_6_27b", "hy3", "mimo_v2_5", "mimo_v2_5_pro", "glm_5_2")

OF: dict[str, tuple[str, ...]] = {
    "t1.f.models_failing": _t1("f"), "t1.m.models_succeeding": _t1("m"), "t1.l.models_succeeding": _t1("l"),
    **{f"t1.{a}.range.{e}": _t1(a) for a in "lnk" for e in ("lo", "hi")},
    "ladder.q_minus_j": ("ladder.q.mean", "ladder.j.mean"),  # every ladder row is paired: mean difference
    "ladder.m_minus_q": ("ladder.m.mean", "ladder.q.mean"),
    "ceiling.mcnemar.complete_pairs": ("ceiling.mcnemar.both", "ceiling.mcnemar.j_only", "ceiling.mcnemar.t_only",
                                       "ceiling.mcnemar.neither"),
    "ceiling.mcnemar.j_ge_half": ("ceiling.j.rows_recalled", "ceiling2.glm_5_2.j_rows"),
    "ceiling.mcnemar.t_ge_half": ("ceiling.t.rows_recalled", "ceiling2.glm_5_2.t_rows"),
    "ceiling.j.nonconforming_fraction": ("ceiling.j.nonconforming_folds",),  # printed '4 of 60 folds'
    "fillex.granite_4_1_8b.rows": ("granite16.h0.rows", "granite16.h5.rows"),
    "fillex.granite_4_1_8b.recall": ("granite16.h0.rows", "granite16.h0.mean",
                                     "granite16.h5.rows", "granite16.h5.mean"),
    "audit.rows": tuple(f"audit.{a}.rows" for a in "qjmtu"),
    "audit.disagree": tuple(f"audit.{a}.discrepant_rows" for a in "qjmtu"),
    "audit.agree": tuple(f"audit.{a}.{f}" for a in "qjmtu" for f in ("rows", "discrepant_rows")),
    **{f"audit.{a}.discrepant_fraction": (f"audit.{a}.rows", f"audit.{a}.discrepant_rows") for a in "qjmtu"},
    **{f"fillex.{k}.fill": (f"fillex.{k}.carried_chars",) for k in ("p_described", "qwen3_6_35b_a3b",
                                                                      "granite_4_1_8b", "ling_2_6_flash")},
    "ceiling2.qwen3_6_35b_a3b.j_fill": ("ceiling.j.carried_chars",),
    "fab.t.abstains": ("ceiling.t.n", "ceiling.t.rows_recalled", "ceiling2.glm_5_2.t_rows", "fab.t.silent_fabrication"),
    "threshold.j_fail.configs": tuple(f"t3.{k}.j_mean" for k in _T3_KEYS),
    "threshold.q_rescue.configs": tuple(f"t3.{k}.{f}" for k in _T3_KEYS for f in ("j_mean", "q_mean")),
}
