"""Which reconstruction rules each recomputation from the evidence rows rests on.

Methods note. ``BEHIND`` maps claim-id prefixes (longest match wins) to the rule ids
(analysis/reconstruct/rules.py) whose output rows the recomputation reads; the audit prints them
with every row and, for a claim that needs row-level data, derives the status from those rules'
declarations (analysis.audit.derive). It holds no status. Whether a claim is arithmetic of printed
cells is not listed by hand: the printed-cell evaluator (analysis.audit.printed) computes it.
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
