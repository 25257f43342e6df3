"""RECONSTRUCTION.md: every rule and choice of the reconstruction (rendered, deterministic)."""
from __future__ import annotations

import re
from collections import Counter

import polars as pl

from analysis.reconstruct.claims import Claims
from analysis.reconstruct.layout import SUPPORT
from analysis.reconstruct.populations import Builder, support_repeats

RULES = """\
## Rules (every choice the page leaves open)

**R0 Layout.** Configurations, families, arms' declared allowances, check labels and planted values are
transcribed into `analysis/reconstruct/layout.py`; the design constants they encode hold by construction.

**R1 Planned repeats.** 4 per partition run, 12 for the three deep runs (granite-4.1-8b, ling-2.6-flash,
glm-5.2), taken from the design claims `design.standard.rows_per_arm` = 4 and `design.deep.rows_per_arm` = 12
("repeated at twelve rows per arm rather than four"; glm-5.2 "re-run at twelve rows per arm"). Disclosure: the
alternative rule planned = max(valid rows per arm) was also computed; it gives bounds [+0.084, +0.138] instead of
the printed [{c:bounds.planned_repeat.lo}, {c:bounds.planned_repeat.hi}] (the difference is xiaomi/mimo-v2.5: 2 versus 4 planned repeats). The bounds are
*derived* and were not fitted; R1 rests on the printed design constants, but the choice between the two rules was
made knowing both results. The claims audit judges the printed bounds against Table 3's printed cells with the
same planned repeats, not against these rows; a reader should weigh that agreement with the choice in mind.

**R2 Outcomes of a cell (near-binary split).** A printed mean of n rows is met by the integer total closest to
it among the GRIM-consistent totals (`engine.cell_total`); Table 3 rows are solved jointly (`engine.solve_paired`:
control mean, treatment mean, paired effect and the unpaired rows' totals at once). The total is split over the
rows "near-binary" (the paper: rows are effectively binary): as many full rows (14/14) as possible, one remainder
row, zeros; where the page prints how many rows reach 0.5 (deep table, glm-5.2 borderline counts, ceiling tables,
the 6/28 anchor corpus) exactly that many rows start at 7/14 and the rest stay below 7.

**R2b/R2c Within-row dependence (tuned to derived claims).** Per-row check counts are not printed, so the ICC
is not determined by the primitives. In *free* cells (arms q, o and the Table 1 arms, where the page prints no
count of rows at >= 0.5 or at full recall; single-field arms are left alone for the heading fit) a share lam of
the cell total is spread evenly before the near-binary fill; lam = {share} is the largest 1/1000 step whose ICC
is still above the printed window, then {moves} single checks are moved between rows of free cells (extreme rows
first, then the closest rows two apart; round robin in build order) until the ICC of the valid S5 rows prints as
0.750 and 1 + 13 ICC as 10.745. These three claims are the fit's declared targets (rules.py); the claims audit
computes each one's status itself (the ones that are arithmetic of the printed ICC are judged against the printed
cells, not these rows), and nothing here is reproduced. The fit runs on the package's 591 valid S5 rows; the
paper's ICC is over {c:icc.s5.valid_rows}.

**R3 Missing slots.** Within a partition run the complete pairs occupy repeats 1..P (i-th best j with i-th best q).
A repeat with only one arm valid holds a *catch-up* row for the other arm (invalid, reason `catchup`, with an
outcome, one parse failure); repeats where neither arm is valid hold two `infrastructure` rows with no outcome.
The paper's six catch-up rows (j 4, p 1, q 1) are exactly the slots this implies: the missing j of
qwen3.5-35b-a3b, tencent/hy3 and glm-5.2, the missing q of xiaomi/mimo-v2.5, the missing anchor p row (9 of 10)
and the missing j partner of the unpartnered ceiling t row. A catch-up row recalls 1.000 when its cell's valid
rows average >= 0.5 ("an arm that was working") and 0.000 otherwise; this rule was chosen to yield exactly the
printed 1, 1, 0, 0, 0, 0, so the catch-up claims hold by construction.

**R4 Execution groups.** One group per partition run (`partition-01`..`-20` in Table 3 order, `-21`..`-23` out of
window), `anchor-a`/`anchor-b` (the two decomposition sweeps, 5 repeats each, arms o m j q p on S5 and S1),
`ceiling-anchor-a` (8 repeats, j t), `ceiling-anchor-b` (4 repeats, j t m u), `ceiling-glm` (4 repeats, j t),
`support-<model>` (Table 1), `original-granite-4-1-8b` / `original-ling-2-6-flash` (the 4 earlier j rows that make
the 16-row fill examples).

**R5 Out-of-window configurations.** meta-llama/llama-3.2-3b-instruct, mistralai/ministral-14b-2512 and
qwen/qwen3-235b-a22b-2507: one partition run of 4 repeats each, every j and q row 7/14 (effect 0). Their outcomes
are not printed; the rule is arbitrary and they never enter the panel (publication dates before the cutoff).

**R6-R8 Anchor ladder and S1.** n = 10 pairs = the sum of the printed q-vs-m 2x2 (7 + 1 + 2 + 0); p has the 9 rows
of the fill example; the q-only cell (0) is not printed as a number but transcribed from "q's 1 of 10 full rows",
so the ladder's pair count and full-row counts hold by construction. q has exactly 1 full row and m 8 (the printed 1/10 and 8/10), the other rows near-binary
capped at 13/14, and the pairs are arranged to give the printed 2x2 (both 1, m only 7, neither 2). S1 (7 checks):
one row per ladder block and arm; GRIM confirms n = 10 (0.300 of 7 checks needs 21/70).

**R9-R11 Reduced-ceiling runs.** The anchor's 11 valid j and 12 t rows (3 and 1 at >= 0.5, means 50/154 and
22/168) are paired over 12 blocks so that, with the glm-5.2 run (j 4 of 4 full, t near-binary 14, 14, 0, 0), the
{c:ceiling.mcnemar.complete_pairs} complete pairs give the printed 5/1/2/7; the 12th anchor block has the t row below 0.5 and a catch-up j (R3).
m and u: 4 rows each at 14/14, in `ceiling-anchor-b`.

**R12 Table 1 row counts (not printed).** Per model, n = the smallest n >= 4 that makes the most of its printed
cells GRIM-consistent (search 4..20); every measured arm has n rows. The chosen n are listed above.

**R13 Table 1 cells** follow R2. **R14 Anchor corpus.** The 28-row j corpus = 10 ladder + 11 ceiling + 7 j rows in
the anchor's Table 1 sweep (whose n = 7 by R12); their total makes the corpus mean 84/392 and 6 rows >= 0.5.
**R15 Original runs.** granite: 16 rows = the printed heading split (14 + 2), total 38 + 18 = 56 checks; ling: 16
rows, all 0.

**R16 Characters.** Declared allowance by arm (3.2: f 1,024; n j p q 9,600; t 4,800; none for k o m u l).
Printed cell means are met exactly: Table 3 j rows carry round(fill x 9,600) characters (deepseek-v4-pro 4,740 and
ling-2.6-flash 621 from the fill examples); granite's 4 original rows make the 16-row mean 3,238; deep q fills 20% /
13%; anchor ceiling j 7,818 and the 28-row corpus 8,501; p 9,044; ceiling m 6,269, u 5,505; glm ceiling j 56%;
t: 14 of 16 rows at 4,790 (within 0.5% of 4,800) and the anchor t mean 4,697. Everything else is a placeholder
(60% of the declared allowance, 6,000 where none is declared).

**R17 Headings carried** (S5; not recorded for f and n): 5 for q k m l u g (rendered or fixed headings), 0 for o;
for j p t the rows the page describes are fixed (deepseek-v4-pro and gemma-4-31b-it 5 on 4 of 4,
deepseek-v4-flash 1 per row, granite 2 rows with 5 and the other 10 + 4 with 0, ling 1 row with 1 and the rest 0).
**R17b** The other valid j/p/t rows get headings from an integer program (`headings_fit`, scipy milp/HiGHS) that
meets, exactly where it can and otherwise with the least slack, the 4.8 single-field table (rows, checks total
and rows >= 0.5 per heading level) and the j rows at 0, 1 and 5 headings; ties go to the recall-band rule (5 at
recall >= 0.5, 1 below, 0 at recall 0). The table's 186 rows exceed the 176 valid j/p/t rows the other tables
determine, so some levels stay short (see the audit).

**R18 Parse failures.** One on each catch-up row (the 6 invalid rows carrying one: 63 - 57); the anchor ceiling j
rows carry 4 of their 60 folds (the catch-up row and the three lowest valid rows); further valid rows are chosen
by an exact multiset search so that 18 valid single-field rows average 141/252 and 57 valid rows in all average
380/798 (the extra 39 drawn from q, then n, f, k rows).

**R19 Folds.** 5 per row; j clipped 17 (spread over the 11 valid ceiling j rows), u 13 (over 4 rows); finish_length
= parse failures, finish_stop = folds - finish_length. Rows without an outcome (infrastructure failures) carry
the same 5 fold calls as a placeholder (the page does not say where they failed).

**R20 Prompt tokens (placeholder).** The printed session length (`design.session_tokens`, 150,000) + carried characters (5 chunks of 30,000 tokens plus the carrier
re-read by folds 2-5 at 4 characters per token). The printed token differences are not fitted.

**R21 Answers.** Lines `label: value` in check order, cut to 400 characters; a passed check shows the planted
value; a failed one shows `not recorded` (an abstention marker) or, on a fabricating row, a stock value: the
port, timestamp and shard count of the 4.11 example (8443, 02:00 UTC, 16 shards) are read from the claims
(`fab.example.fabricated_*`, declared by this rule), the others are placeholders of ours
(/var/lib/migration/state.json, the RFC example UUID, example.com ...). Among the
failing rows (recall < 0.5) of j q n t f, the first rows in build order fabricate, as many as the printed
"fabricates" count; the rest abstain. The "abstains" counts then follow from how many rows fail, which the page
determines only for t (16 - 3 = 13).

**R22 Carrier audit.** Audited rows: every valid ceiling-run row of j t m u, then the first valid partition j and
q rows up to the printed 103 / 88; the first 13 (j) and 31 (q) audited rows with a failed check carry their first
missed value in the carrier (`in_carrier` true on that failed check).

**R23 Positions.** Rotating Latin square: arm i of a group's arm list runs at ((i + repeat - 1) mod A) + 1.

**R24 Which checks pass.** A row with c checks passed passes the first c labels in the fixed label order.

**R25 Presence grader (tuned to a derived claim).** checks.csv carries `passed_presence` = `passed`, except that
the first valid S5 row with a failed check gets one presence credit (tuned to the printed {c:scenario.grader_agreement.rows} of {c:icc.s5.valid_rows} agreement; with
591 valid rows it gives 590; the claims audit computes its status).
"""


def _declarations(claims: Claims) -> list[str]:
    """The rule declarations (analysis/reconstruct/rules.py) as a table: what each rule reads, builds, was fitted to."""
    from analysis.reconstruct.rules import RULES, resolve_rules
    res = resolve_rules(claims)
    out = ["## Rule declarations (what each rule reads, builds and was fitted to)", "",
           "Generated from `analysis/reconstruct/rules.py`; the build checks every read, and the claims audit derives each",
           "claim's status from these sets. Counts are claim ids; fitted claims are named.", "",
           "| rule | what | reads | builds | fitted to |", "|---|---|---|---|---|"]
    for r in RULES:
        x = res[r.id]
        out.append(f"| {r.id} | {r.title} | {len(x.reads)} | {len(x.builds)} | "
                   f"{', '.join(sorted(x.fitted)) or '-'} |")
    return [*out, ""]


def render_notes(b: Builder, claims: Claims, findings: pl.DataFrame) -> str:
    """The RECONSTRUCTION.md text (no timestamps: byte-identical rebuilds)."""
    valid_s5 = [r for r in b.rows if r["valid"] and r["scenario"] == "S5" and r["checks_passed"] is not None]
    arms = Counter(r["arm"] for r in valid_s5)
    reasons = Counter(r["invalid_reason"] for r in b.rows if not r["valid"])
    lines = [
        "# data/v1 is a RECONSTRUCTION, not the released evidence",
        "",
        "The paper's released package (row- and check-level evidence) is controlled and not public. This",
        "directory is rebuilt by `python -m analysis.reconstruct build` from `data/published/claims.yaml`: integer",
        "outcomes and structure solved so that the *primitive* claims it uses are met at printed precision. It is NOT",
        "built from primitive claims only: rules R2b/R2c were tuned to three derived claims (the ICC, the design effect",
        "and the effective observations per row), rule R25 to a fourth (the {c:scenario.grader_agreement.rows}-of-{c:icc.s5.valid_rows} grader agreement; with 591",
        "valid S5 rows, not {c:icc.s5.valid_rows}, it gives 590), and some rules place derived counts by construction",
        "(for example the ladder's q-only cell was transcribed from 'q's 1 of 10 full rows'). Every rule declares the",
        "claims it reads, builds and was fitted to (`analysis/reconstruct/rules.py`); the build checks each read, and the",
        "claims audit (`analysis.audit.audit_claims`) judges a derived claim the paper's printed cells decide against",
        "those cells alone, and any other derived claim against these rows, deriving from the declarations whether the",
        "rows reach it, hold it by construction, were fitted to it or miss it; nothing here is reproduced. Planted",
        "values other than the four printed in 4.11 (and the fabricated 8443, 02:00 UTC and 16 shards, which R21 reads",
        "from the claims) are placeholders; publication dates are placeholders on the correct",
        "side of the 2026-01-28 cutoff.",
        "",
        "## Contents",
        "",
        f"- rows.csv: {len(b.rows)} rows ({len(valid_s5)} valid S5 rows with an outcome; arms "
        + ", ".join(f"{a} {n}" for a, n in sorted(arms.items())) + "); invalid: "
        + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())) + ".",
        "  Extra column `cell`: the printed table cell (claim id prefix) a row was solved for.",
        "- checks.csv: one line per graded check of every row with an outcome; extra column `passed_presence`.",
        f"- study.toml: {len(b.runs)} partition runs (20 in window, 3 out of window), families = model-id prefix.",
        "- findings.csv: claims no integer data produce under the default reading (GRIM failures and rule-conditional",
        "  ones), each with its status: inconsistent, or reachable under a stated choice.",
        "",
        "## Table 1 row counts chosen by R12",
        "",
        "| model | rows per arm |", "|---|---|",
    ]
    lines += [f"| {cfg} | {support_repeats(claims, key)} |" for key, cfg in SUPPORT]
    lines += ["", RULES.replace("{share}", str(b.icc_share)).replace("{moves}", str(b.icc_moves))]
    lines += _declarations(claims)
    lines += [
              "## Findings (claims no integer data reach under the default reading)", "",
              "A claim is *inconsistent* only when no reading tried reaches it; the others are reachable only under",
              "the stated choice (per-row rounding, another row count); the claims audit shows both.", "",
              "| claim | status | note |", "|---|---|---|"]
    lines += [f"| {i} | {s} | {n} |" for i, s, n in findings.select("id", "status", "note").iter_rows()]
    lines += ["", "## Not reconstructed", "",
              "- The 4.8 single-field heading table only in part (R17b: 186 printed rows, 176 available), the q and k",
              "  heading counts (their row totals are not printed), and the within-cell heading statistics (R17b",
              "  decides them).",
              "- The total of {c:icc.s5.valid_rows} valid S5 rows (MISMATCH: the package has 591; Table 1 and failure-table populations",
              "  have no printed row counts and R12 chooses the smallest consistent ones), so the ICC is tuned (R2b/R2c)",
              "  on 591 rows, and the f arm's {c:fab.f.failing_rows} failing rows (MISMATCH: 49, R12/R13's near-binary split). The page's",
              "  {c:headings.pooled.rows} heading rows of {c:icc.s5.valid_rows} leave about 50 rows for f and n together, where R12's equal row count per arm",
              "  gives 100: the Table 1 populations differ by arm in ways the page does not print.",
              "- Heading variation inside multi-field arms (R17 makes it constant), so the within-cell heading",
              "  statistics (31 cells in the paper, 14 here) are MISMATCHES.",
              "- Unrounded fill fractions (needed by the 4.7.1 correlations), the 25-configuration fill dataset,",
              "  prompt-token estimates, the capability probe, and the j fold-finish counts ({c:carrier.j.stop_calls} / {c:carrier.j.length_calls}).",
              ""]
    return _quote_claims("\n".join(lines), claims)


def _quote_claims(text: str, claims: Claims) -> str:
    """Replace every ``{c:<claim id>}`` with that claim's printed token (prose quotes printed values, never types)."""
    by = claims.by_id
    return re.sub(r"\{c:([\w.]+)\}", lambda m: by[m.group(1)].printed, text)
