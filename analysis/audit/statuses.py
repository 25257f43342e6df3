"""Explanations the audit attaches to a claim's derived status (never the status itself: see derive.py)."""
from __future__ import annotations

# Why a recomputation misses, or why nothing is recomputed. The status is derived; these say why.
EXPLAIN: dict[str, str] = {
    "icc.s5.valid_rows": "the reconstruction has 591 valid S5 rows: Table 1 row counts are not printed and rule R12 "
                         "chooses the smallest GRIM-consistent count per model (4-10 rows), the same for every arm; "
                         "the page's populations differ (620 valid rows of which 570 record headings, so f + n hold "
                         "about 50 rows where R12 gives 100; q 134 and j 161 against 123 and 151; k 39 against 50). "
                         "Reaching 620 needs per-arm row counts the page does not print, so it was not attempted; "
                         "the ICC (R2b/R2c) is therefore fitted on 591 rows, not 620",
    "scenario.grader_agreement.rows": "rule R25 was fitted to it (one presence-grader disagreement), but the agreeing "
                                      "count is valid rows - 1 and the reconstruction has 591 valid rows, not 620 "
                                      "(R12)",
    "fab.f.failing_rows": "R12/R13 place near-binary f rows over R12's row counts: 49 of the 50 f rows fail (only one "
                          "mistral-small-2603 row reaches 0.5). No split of R12's f cells can reach 45: their totals "
                          "(5, 5, 0, 18, 0, 0, 0, 6 checks) allow at most two rows at >= 7/14 (both in mistral's 18), "
                          "so at least 48 fail. The page's 45 (1 fabricating + 44 abstaining) fits its "
                          "smaller f population (570 of 620 valid rows record headings, leaving about 50 rows for "
                          "f and n together), which R12's equal rows per arm cannot give",
    "headings.pooled.r": "per-row headings are printed only as counts; R17/R17b choose which rows carry them and the "
                         "pooled correlation follows from that choice",
    "pf.single_field.clean_rows": "clean rows are all other valid j/p/t rows; the reconstruction has fewer valid rows",
    "pf.single_field.clean_mean": "clean rows are all other valid j/p/t rows; their total follows from populations "
                                  "the page does not print",
    "pf.all.clean_rows": "clean rows are all other valid rows (620 - 57 printed); the reconstruction has 591 "
                         "valid rows",
    "pf.all.clean_mean": "clean rows are all other valid rows; the reconstruction has 591, not 620",
    "ceiling.j.folds_total": "printed as 'about 53' (AMBIGUOUS in the claims file); 11 valid rows x 5 folds = 55",
    "threshold.fail8.fill_effect.pearson": "R16 gives every Table 3 j row the printed (rounded) fill; the printed "
                                           "correlation needs the unrounded fills, which the page does not give",
    "threshold.fail8_excl_borderline.fill_effect.pearson": "R16 uses the printed (rounded) fills; the printed value "
                                                           "needs the unrounded fills",
    "threshold.all20.fill_effect.pearson": "R16 uses the printed (rounded) fills; the printed value needs the "
                                           "unrounded fills",
    "bounds.planned_repeat.lo": "planned repeats 4, or 12 for the deep runs (rule R1, read from the design claims); "
                                "planned = max(valid rows) would give [0.084, 0.138]",
    "bounds.planned_repeat.hi": "planned repeats 4, or 12 for the deep runs (rule R1); see bounds.planned_repeat.lo",
    "panel.loo.lo": "leaving out xiaomi/mimo-v2.5",
    "intro.prompt_tokens.q_fewer_than_j.pooled": "per-row prompt token estimates are not printed (rule R20 is a "
                                                 "placeholder)",
    "intro.prompt_tokens.q_fewer_than_j.anchor_sweep_a": "per-row prompt token estimates are not printed (R20 "
                                                         "placeholder)",
    "intro.prompt_tokens.q_fewer_than_j.anchor_sweep_b": "per-row prompt token estimates are not printed (R20 "
                                                         "placeholder)",
    "ladder.p_minus_j.observed_prompt_tokens": "per-row prompt token estimates are not printed (R20 placeholder)",
    "fill25.pearson": "the 25-configuration exploratory fill dataset is not printed",
    "fill25.spearman": "the 25-configuration exploratory fill dataset is not printed",
    "threshold.fail8.gain_ge_0_20.fill_margin": "the two bounding configurations both print 81%; needs unrounded fills",
    "carrier.j.stop_calls": "the population of the 714 j calls is not stated",
    "carrier.j.length_calls": "the population is not stated, so the count cannot be checked; the page calls these "
                              "'the schema-invalid folds reported above', but 4.5 reports 4 schema-invalid j folds, "
                              "not 20 (a conflict in the text that no printed cell decides)",
    "probe.no_measurable_rows.configs": "capability-probe verdicts are not evidence rows",
    "probe.plain_text_arms_attempted": "capability-probe verdicts are not evidence rows",
    "t1.k_vs_m.mean_gap": "each model weighing equally, the printed Table 1 cells give 0.060, not 0.066; the printed "
                          "value may be a row-weighted mean, which needs Table 1 row counts the paper does not print "
                          "(rule R12 chooses them), so it is judged as a row-level claim",
    "ladder.m_minus_q.over_k_m_gap.min_ratio": "a bound ('more than three times') on the ratio of two printed values; "
                                               "the package computes no such ratio",
}

# Notes by id prefix (the first matching prefix applies when a claim has no note of its own).
PREFIX_EXPLAIN: tuple[tuple[str, str], ...] = (
    ("within.", "the within-cell heading statistics need per-row headings inside cells; R17 makes headings constant "
                "within every multi-field arm (q k m l u: 5, o: 0), so only single-field cells vary, while the "
                "page's 31 cells against 17 single-field ones imply heading variation in 14 other cells; q and k "
                "carry 5 headings on every row (134 of 134, 39 of 39), so that variation lies in m, l, o or u cells, "
                "which no printed number describes row by row (not fitted)"),
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
    ("fab.example.", "the 4.11 example values: the planted ones are layout constants (R0), the fabricated ones are "
                     "read from the claims by R21 and written into every fabricating answer"),
    ("fab.", "fabricating rows are placed to the printed counts (R21); abstaining = failing - fabricating, and the "
             "number of failing rows follows from R2/R12/R13's near-binary split (printed only for t)"),
    ("t1.", "Table 1 row counts are not printed; rule R12 chooses them"),
)
