"""Audit notes as data: fitted claims, rule-decided statistics, known inconsistencies, per-claim notes."""
from __future__ import annotations

# Derived claims the reconstruction was fitted to (the audit may never call these reproduced).
FITTED: dict[str, str] = {
    "icc.s5.icc": "FITTED (rules R2b/R2c): per-row check counts are not printed; the free cells' split was tuned "
                  "until the ICC of the valid S5 rows prints as 0.750 and 1 + 13 ICC as 10.745",
    "icc.s5.design_effect": "FITTED with the ICC (rules R2b/R2c)",
    "icc.s5.effective_obs_per_row": "FITTED with the ICC (rules R2b/R2c): 14 / design effect",
}

# Derived statistics whose value is decided by the reconstruction's free choices (which rows carry
# which heading, how a cell total splits over rows, placeholder token counts), not by the primitives.
RULE_DECIDED: dict[str, str] = {
    "icc.s5.valid_rows": "Table 1 and the failure-table populations have no printed row counts; rule R12 decides them",
    "headings.pooled.r": "per-row headings are printed only as counts; rules R17/R17b decide which rows carry them",
    "within.all.cells": "needs per-row headings within cells; rule R17 decides them",
    "within.all.rows": "needs per-row headings within cells; rule R17 decides them",
    "within.all.slope": "needs per-row headings within cells; rule R17 decides them",
    "within.all.r": "needs per-row headings within cells; rule R17 decides them",
    "within.single_field.cells": "needs per-row headings within cells; rule R17 decides them",
    "within.single_field.rows": "needs per-row headings within cells; rule R17 decides them",
    "within.single_field.slope": "needs per-row headings within cells; rule R17 decides them",
    "within.single_field.r": "needs per-row headings within cells; rule R17 decides them",
    "within.j.cells": "needs per-row headings within cells; rule R17 decides them",
    "within.j.rows": "needs per-row headings within cells; rule R17 decides them",
    "within.j.slope": "needs per-row headings within cells; rule R17 decides them",
    "within.j.r": "needs per-row headings within cells; rule R17 decides them",
    "threshold.fail8.fill_effect.spearman": "printed fills tie (81%, 81%, 100%, 100%); the value depends on the "
                                            "unrounded order the page does not give (rank check: reachable, "
                                            "with qwen3.5-9b below deepseek-v4-flash and 122b below 35b)",
    "threshold.fail8_excl_borderline.fill_effect.spearman": "needs the unrounded order of tied fills (rank check: "
                                                            "reachable with 122b below 35b)",
    "threshold.all20.fill_effect.spearman": "needs unrounded fills (printed fills tie)",
    "threshold.fail8.fill_effect.pearson": "needs unrounded fills; the printed (rounded) fills give the value shown",
    "threshold.fail8_excl_borderline.fill_effect.pearson": "needs unrounded fills; printed fills give the value shown",
    "threshold.all20.fill_effect.pearson": "needs unrounded fills; printed fills give the value shown",
    "fab.f.failing_rows": "Table 1 row counts are not printed; rule R12 decides how many f rows fail",
    "pf.single_field.clean_rows": "depends on the total of valid single-field rows, which unprinted populations decide",
    "pf.single_field.clean_mean": "depends on unprinted populations (clean rows are all other valid j/p/t rows)",
    "pf.all.clean_rows": "depends on the total of valid rows (620 printed), which unprinted populations decide",
    "pf.all.clean_mean": "depends on the total of valid rows, which unprinted populations decide",
    "scenario.grader_agreement.rows": "one presence-grader disagreement is FITTED (rule R25); the agreeing count "
                                      "is then valid rows - 1, and the valid-row total (620) is decided by rule R12",
    "ceiling.j.folds_total": "printed as 'about 53'; 11 valid rows x 5 folds = 55 (AMBIGUOUS in the claims file)",
}

# Printed values contradicted by the printed cells they summarise (beyond GRIM failures).
INCONSISTENT: dict[str, str] = {
    "t1.k_vs_m.mean_gap": "mean(m) - mean(k) over the printed Table 1 cells is 0.060 (0.063 with all nine m); "
                          "no set of cells that prints as Table 1 gives 0.066",
}

STATUS_NOTES: dict[str, str] = {
    "panel.loo.lo": "leaving out xiaomi/mimo-v2.5",
    "bounds.planned_repeat.lo": "planned repeats 4, or 12 for the deep runs (rule R1, from the design claims); "
                                "planned = max(valid rows) would give [0.084, 0.138]",
    "bounds.planned_repeat.hi": "planned repeats 4, or 12 for the deep runs (rule R1); see bounds.planned_repeat.lo",
    "intro.prompt_tokens.q_fewer_than_j.pooled": "per-row prompt token estimates are not printed (rule R20 is a placeholder)",
    "intro.prompt_tokens.q_fewer_than_j.anchor_sweep_a": "per-row prompt token estimates are not printed",
    "intro.prompt_tokens.q_fewer_than_j.anchor_sweep_b": "per-row prompt token estimates are not printed",
    "ladder.p_minus_j.observed_prompt_tokens": "per-row prompt token estimates are not printed",
    "fill25.pearson": "the 25-configuration exploratory fill dataset is not printed",
    "fill25.spearman": "the 25-configuration exploratory fill dataset is not printed",
    "threshold.fail8.gain_ge_0_20.fill_margin": "the two bounding configurations both print 81%; needs unrounded fills",
    "carrier.j.stop_calls": "the population of the 714 j calls is not stated",
    "carrier.j.length_calls": "the population is not stated; INCONSISTENT with 4 schema-invalid folds in 4.5",
    "probe.no_measurable_rows.configs": "capability-probe verdicts are not evidence rows",
    "probe.plain_text_arms_attempted": "capability-probe verdicts are not evidence rows",
    "ladder.m_minus_q.over_k_m_gap.min_ratio": "a verbal comparison ('more than three times'), not a statistic",
}

# Notes by id prefix (the first matching prefix applies when a claim has no note of its own).
PREFIX_NOTES: tuple[tuple[str, str], ...] = (
    ("headings.h", "4.8 heading table fitted by an integer program (R17b) but not fully met: its 186 single-field "
                   "rows exceed the 176 valid j/p/t rows the other tables determine, and the near-binary row "
                   "outcomes (R2) lack the partial recalls some levels need"),
    ("headings.pooled.rows", "rows with headings recorded: 570 printed; the reconstruction records headings on every "
                             "valid S5 row except f and n (R17) and has fewer valid rows (R12)"),
    ("headings.q.", "valid q rows: the page's 134 includes q rows of populations it does not print; all reconstructed "
                    "q rows carry 5 headings"),
    ("headings.k.", "k rows: Table 1 row counts are not printed; rule R12 decides them (every k row carries 5)"),
    ("headings.j.", "j rows with headings: the page's 161 exceeds the 151 valid j rows the other tables determine "
                    "(R17b meets the 0- and 1-heading counts; the 5-heading count is short)"),
    ("fab.", "fabricating rows are fitted to the printed counts (R21); abstaining = failing - fabricating, and the "
             "number of failing rows is printed only for t"),
)

