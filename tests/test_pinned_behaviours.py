"""Behaviours that mutation testing showed no test pinned down (issue 16, item 8).

Part 1: one fixed, named test for each of the six planted mistakes that passed the whole suite.
Part 2: a second, independent test for behaviours pinned by a single test (mid-p and
missing-as-success McNemar, grader case and punctuation rules, the lock compared as bytes, the
audit's half-unit tolerance), each against a different oracle than the first test.

Every test says which mistake it catches and derives its expected value by hand (or names the
independent library that computes it).
"""
from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.estimators import exact
from analysis.estimators.dependence import CheckCountError, within_row_dependence
from analysis.estimators.fill import fill_analysis, threshold_effects_frame
from analysis.evidence import LockFormatError, SchemaError, load_package
from analysis.params import DEFAULT_PARAMS
from analysis.reconstruct.claims import matches_printed
from analysis.runner.graders import GradedCheck, contains_token, grade_answer, line_identifies
from est_handmade_support import rows_frame
from evidence_support import copy_handmade, edit, where

# ============================================================================ part 1: the six mutants

# ---------------------------------------------------------------------------- 1. booleans are lowercase
# Mistake caught: the loader comparing booleans case-insensitively (e.g. `s.str.to_lowercase()
# .is_in(["true", "false"])`), so `True` / `TRUE` / `False` load as booleans. docs/EVIDENCE_FORMAT.md
# ("booleans are exactly `true` or `false`") allows only the lowercase words, and the loader never
# infers types, so any other spelling is a SchemaError at the cell. Lines are physical lines of the
# hand-made package: rows.csv line 3 is a1-q (its
# `valid` is `true`), checks.csv line 11 is a1-j's "dns zone" (passed `true`, in_carrier empty) and
# line 16 is a1-q's "ledger service port" (passed `true`, in_carrier `true`).
A1Q = "a1-q,S5,acme/alpha-1,g1,1,q,2,true,,14,14,0,5,6100,9600,5,0,5,0,19000,all recalled"
DNS = "a1-j,dns zone,corp.vantgrid.test,true,\n"
LEDGER = "a1-q,ledger service port,41873,true,true\n"


@pytest.mark.parametrize(("file", "old", "new", "line", "column", "cell"), [
    ("rows.csv", A1Q, A1Q.replace(",true,,", ",True,,"), 3, "valid", "True"),
    ("rows.csv", A1Q, A1Q.replace(",true,,", ",TRUE,,"), 3, "valid", "TRUE"),
    ("checks.csv", DNS, DNS.replace(",true,", ",True,"), 11, "passed", "True"),
    ("checks.csv", LEDGER, LEDGER.replace(",true,true", ",true,FALSE"), 16, "in_carrier", "FALSE"),
], ids=["valid-True", "valid-TRUE", "passed-True", "in_carrier-FALSE"])
def test_booleans_in_another_case_are_refused(tmp_path: Path, file, old, new, line, column, cell) -> None:
    root = copy_handmade(tmp_path / "pkg")
    edit(root, file, old, new)
    with pytest.raises(SchemaError) as info:
        load_package(root)
    assert (file, line, column) in where(info.value), str(info.value)
    assert any(p.column == column and repr(cell) in p.message for p in info.value.problems)


# ---------------------------------------------------------------------------- 2. labels are whole words
# Mistake caught: line_identifies matching the label as a plain substring (dropping the `(?<!\w)` or
# `(?!\w)` guard), so "export: 47311" names the label "port". The rule (graders.py module note): the
# label must appear as a phrase bounded by non-word characters. "export" has the word character "x"
# before "port", "portal" and "ports" have "a" / "s" after it, "sport_port" becomes "sport port"
# after `_` is replaced by a space, so there the second "port" stands alone.
@pytest.mark.parametrize(("line", "label", "expected"), [
    ("export: 47311", "port", False),            # word character before the label
    ("portal: 47311", "port", False),            # word character after the label
    ("ports: 47311", "port", False),
    ("telemetry relay portal: 30116", "relay port", False),
    ("export relay port: 30116", "relay port", True),  # the phrase itself is bounded
    ("port: 47311", "port", True),
    ("sport_port: 47311", "port", True),         # `_` is label punctuation -> "sport port"
])
def test_label_inside_another_word_does_not_identify_the_line(line, label, expected) -> None:
    assert line_identifies(line, label) is expected


def test_label_inside_another_word_fails_the_check() -> None:
    # End to end: the only line with the value names "export", not "port" -> not passed, although the
    # presence grader (no label rule) finds the value.
    (r,) = grade_answer("export: 47311", (GradedCheck("port", "47311"),))
    assert (r.passed, r.passed_presence) == (False, True)


# ---------------------------------------------------------------------------- 3. in_carrier honours case
# Mistake caught: grade_answer auditing the carrier with `contains_token(carrier, expected)` and so
# ignoring the check's case_sensitive=False. The carrier below holds "helix-ops" in lower case; the
# planted value is "Helix-Ops". Declared case-insensitive, the value is in the carrier (True); the
# same check left case-sensitive (the default) is not (False). Both outcomes are fixed by hand from
# the module note: case is preserved unless the check declares otherwise.
def test_in_carrier_honours_case_insensitive_checks() -> None:
    carrier = "owning team: helix-ops (paged at 02:10 UTC)"
    relaxed = GradedCheck("owning team", "Helix-Ops", case_sensitive=False)
    strict = GradedCheck("owning team", "Helix-Ops")
    (r,) = grade_answer("", (relaxed,), carrier=carrier)
    assert r.in_carrier is True
    (s,) = grade_answer("", (strict,), carrier=carrier)
    assert s.in_carrier is False


# ---------------------------------------------------------------------------- 4. checks vs rows counts
# Mistake caught: row_check_counts no longer comparing checks.csv's passed count (or its check count)
# with rows.csv, so within_row_dependence silently computes an ICC from counts that disagree. The
# loader rejects such packages, so the frames are built here directly (the estimator is public and
# must defend itself). Rows r0, r1 of k = 3 checks; rows.csv says r0 passed 2, r1 passed 1.
def _dependence_frames(passed_r0: list[bool], passed_r1: list[bool]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = rows_frame([{"configuration": "c", "arm": "j", "checks_total": 3, "checks_passed": 2},
                       {"configuration": "c", "arm": "j", "checks_total": 3, "checks_passed": 1}])
    ids = ["r0"] * len(passed_r0) + ["r1"] * len(passed_r1)
    checks = pl.DataFrame({"row_id": ids, "check": [f"c{i}" for i in range(len(ids))],
                           "passed": passed_r0 + passed_r1})
    return rows, checks


def test_dependence_accepts_agreeing_counts() -> None:
    # Control: the counts agree (r0: 2 of 3, r1: 1 of 3). By hand: p = (2/3, 1/3), grand 1/2,
    # MSB = 3 * 2 * (1/6)^2 / 1 = 1/6; MSW = (2 * 1/3 + 1 * 2/3) / (2 * 2) = 1/3;
    # ICC = (1/6 - 1/3) / (1/6 + 2/3) = -1/5.
    rows, checks = _dependence_frames([True, True, False], [True, False, False])
    d = within_row_dependence(rows, checks, "S5")
    assert (d.rows, d.checks_per_row) == (2, 3)
    assert d.icc == pytest.approx(-0.2, rel=1e-12)


def test_dependence_refuses_passed_counts_that_disagree() -> None:
    # checks.csv has 3 checks for r0 (as rows.csv says) but only 1 passed, not 2.
    rows, checks = _dependence_frames([True, False, False], [True, False, False])
    with pytest.raises(CheckCountError, match=r"'r0': 3 checks / 1 passed there, rows\.csv says 3 / 2"):
        within_row_dependence(rows, checks, "S5")


def test_dependence_refuses_check_counts_that_disagree() -> None:
    # checks.csv has only 2 checks for r1 (rows.csv: 3), with the right passed count 1.
    rows, checks = _dependence_frames([True, True, False], [True, False])
    with pytest.raises(CheckCountError, match=r"'r1': 2 checks / 1 passed there, rows\.csv says 3 / 1"):
        within_row_dependence(rows, checks, "S5")


# ---------------------------------------------------------------------------- 5 and 6. fill separation
def _fill(configs: list[tuple[str, float, float, float]]):
    """(configuration, control mean, treatment mean, fill) -> fill_analysis under DEFAULT_PARAMS."""
    eff = threshold_effects_frame([c[0] for c in configs], [c[2] - c[1] for c in configs],
                                  [c[1] for c in configs], [c[2] for c in configs], [4] * len(configs))
    fills = pl.DataFrame({"configuration": [c[0] for c in configs], "fill": [c[3] for c in configs]})
    return fill_analysis(eff, fills, DEFAULT_PARAMS)


def test_sweep_separates_only_when_every_cutoff_separates() -> None:
    # Mistake caught: sweep_separates computed with any() instead of all(). The sweep runs the failure
    # cutoff 0.40, 0.41, ..., 0.60 (21 cutoffs); rescue means treatment >= 0.5.
    #   a: control 0.30, treatment 0.90, fill 0.90 -> fails at every cutoff, rescued
    #   b: control 0.30, treatment 0.10, fill 0.20 -> fails at every cutoff, not rescued
    #   c: control 0.55, treatment 0.20, fill 0.95 -> fails only when cutoff > 0.55 (0.56 .. 0.60),
    #      not rescued, and its fill 0.95 is above the rescued a's 0.90.
    # Cutoffs 0.40 .. 0.55 (16): failing {a, b}, margin 0.90 - 0.20 = 0.70 > 0: separates.
    # Cutoffs 0.56 .. 0.60 (5): failing {a, b, c}, margin 0.90 - 0.95 = -0.05: does not separate.
    # So some cutoffs separate and some do not: the sweep as a whole does not.
    a = _fill([("a", 0.30, 0.90, 0.90), ("b", 0.30, 0.10, 0.20), ("c", 0.55, 0.20, 0.95)])
    per_cut = [(round(s.cutoff, 2), s.separation.separates) for s in a.sweep]
    assert len(per_cut) == 21
    assert [c for c, sep in per_cut if sep] == [round(0.40 + i / 100, 2) for i in range(16)]
    assert [c for c, sep in per_cut if not sep] == [0.56, 0.57, 0.58, 0.59, 0.60]
    assert a.sweep_separates is False
    # Control: without c every cutoff separates, and so does the sweep.
    assert _fill([("a", 0.30, 0.90, 0.90), ("b", 0.30, 0.10, 0.20)]).sweep_separates is True


def test_fill_margin_of_exactly_zero_does_not_separate() -> None:
    # Mistake caught: `separates = margin >= 0`, so touching ranges count as separating. The fields'
    # contract: separates iff every positive fill EXCEEDS every negative fill (margin > 0).
    # a (rescued) and b (not rescued) both fail (control 0.30 < 0.5) and both have fill 0.5, exactly
    # representable, so margin = 0.5 - 0.5 = 0.0 exactly: touching, not separating. Caught before
    # only by Hypothesis seeds that happened to draw equal fills.
    a = _fill([("a", 0.30, 0.90, 0.5), ("b", 0.30, 0.10, 0.5)])
    sep = a.rescue.separation
    assert (sep.positive, sep.negative) == (("a",), ("b",))
    assert sep.margin == 0.0
    assert sep.separates is False
    assert sep.reason == "fill ranges of the two classes overlap or touch"
    assert a.sweep_separates is False
    # Control: nudge a's fill up by 1/64 (exact in binary) -> margin 1/64 > 0 separates.
    nudged = _fill([("a", 0.30, 0.90, 0.5 + 1 / 64), ("b", 0.30, 0.10, 0.5)]).rescue.separation
    assert (nudged.margin, nudged.separates) == (1 / 64, True)


# ============================================================================ part 2: second, independent tests

# ---------------------------------------------------------------------------- mid-p McNemar
@pytest.mark.parametrize("b", range(13))
@pytest.mark.parametrize("c", range(13))
def test_exact_p_and_mid_p_match_exact_rationals(b: int, c: int) -> None:
    # Oracle (not scipy, the engine): the binomial tails in exact rationals, sum of C(n, i) / 2^n over
    # i <= m = min(b, c): p = min(1, 2 P(X <= m)), mid-p = min(1, 2 P(X < m) + P(X = m)) (Fagerland,
    # Lydersen & Laake 2013). The first test (test_est_exact) checks one hand value, b = 0, c = 7.
    n, m = b + c, min(b, c)
    p, mid = exact.exact_p(b, c)
    if n == 0:
        assert (p, mid) == (1.0, 1.0)
        return
    below = Fraction(sum(math.comb(n, i) for i in range(m)), 2**n)
    at = Fraction(math.comb(n, m), 2**n)
    want_p, want_mid = float(min(1, 2 * (below + at))), float(min(1, 2 * below + at))
    assert p == pytest.approx(want_p, rel=1e-12, abs=1e-15)
    assert mid == pytest.approx(want_mid, rel=1e-12, abs=1e-15)
    assert mid <= p


def _mcnemar_rows(blocks: list[tuple[int | None, int | None]]) -> pl.DataFrame:
    """One block (repeat) per tuple: (j checks passed, q checks passed) of 14; None = no row."""
    recs = []
    for rep, pair in enumerate(blocks, start=1):
        for arm, passed in zip(("j", "q"), pair, strict=True):
            if passed is not None:
                recs.append({"row_id": f"{rep}-{arm}", "configuration": "c", "repeat": rep, "arm": arm,
                             "checks_passed": passed})
    return rows_frame(recs)


def test_mid_p_through_paired_mcnemar_by_hand() -> None:
    # Three j-only successes and one q-only success (threshold 0.5 = 7 of 14): b = 3, c = 1.
    # n = 4, m = 1: P(X <= 1) = (1 + 4)/16 = 5/16, P(X = 1) = 4/16.
    # p = 2 * 5/16 = 0.625; mid-p = 10/16 - 4/16 = 6/16 = 0.375.
    r = exact.paired_mcnemar(_mcnemar_rows([(14, 0), (7, 6), (10, 3), (0, 14)]), "j", "q",
                             scenario="S5", threshold=0.5)
    assert (r.complete.b, r.complete.c) == (3, 1)
    assert (r.complete.p_value, r.complete.mid_p) == (0.625, 0.375)


# ---------------------------------------------------------------------------- missing-as-success McNemar
def test_missing_as_success_by_hand() -> None:
    # Oracle: the block table below, counted by hand (threshold 0.5: >= 7 of 14 succeeds).
    #   block  j     q     complete   missing as failure   missing as success
    #   1      14    14    both       both                 both
    #   2      14    -     -          b  (q -> fail)       both (q -> success)
    #   3      14    -     -          b                    both
    #   4      0     -     -          neither              c  (j fails, q -> success)
    #   5      -     0     -          neither              b  (j -> success, q fails)
    #   6      -     14    -          c  (j -> fail)       both
    #   7      0     14    c          c                    c
    # complete: b 0, c 1, both 1 (pairs 2). as failure: b 2, c 2, both 1, neither 2 (pairs 7).
    # as success: b 1, c 2, both 4, neither 0 (pairs 7); n = 3, m = 1: p = 2 * 4/8 = 1.0,
    # mid-p = 1.0 - 3/8 = 0.625.
    rows = _mcnemar_rows([(14, 14), (14, None), (14, None), (0, None), (None, 0), (None, 14), (0, 14)])
    r = exact.paired_mcnemar(rows, "j", "q", scenario="S5", threshold=0.5)
    s, f, c = r.missing_as_success, r.missing_as_failure, r.complete
    assert (c.b, c.c, c.both, c.neither, c.pairs) == (0, 1, 1, 0, 2)
    assert (f.b, f.c, f.both, f.neither, f.pairs) == (2, 2, 1, 2, 7)
    assert (s.b, s.c, s.both, s.neither, s.pairs) == (1, 2, 4, 0, 7)
    assert s.p_value == 1.0 and s.mid_p == pytest.approx(0.625, rel=1e-12)  # scipy's binom, float
    assert (r.first_only, r.second_only) == (3, 2)  # j only: 2, 3, 4; q only: 5, 6


# ---------------------------------------------------------------------------- grader case rule
def test_case_rule_on_latin_values_answer_and_carrier() -> None:
    # Second test of the case rule (the first uses a Cyrillic name): a Latin host name. Case is
    # preserved by default, so "ACME-Prod-7" does not match "acme-prod-7" in the answer, the presence
    # grader or the carrier; declared case-insensitive, all three match. Hand-derived from the rule.
    answer = "deploy target: acme-prod-7"
    strict = GradedCheck("deploy target", "ACME-Prod-7")
    relaxed = GradedCheck("deploy target", "ACME-Prod-7", case_sensitive=False)
    (s,) = grade_answer(answer, (strict,), carrier=answer)
    (r,) = grade_answer(answer, (relaxed,), carrier=answer)
    assert (s.passed, s.passed_presence, s.in_carrier) == (False, False, False)
    assert (r.passed, r.passed_presence, r.in_carrier) == (True, True, True)
    # Case folding never relaxes the whole-token rule: "acme-prod-70" still fails.
    assert not contains_token("acme-prod-70", "ACME-Prod-7", case_sensitive=False)


# ---------------------------------------------------------------------------- grader punctuation rules
@pytest.mark.parametrize(("text", "expected"), [
    # Value "47311". Before: a non-word character, or a joiner (-_./@+) not preceded by a word
    # character; ":" is not a joiner before the value. After: a non-word character, or a joiner
    # (-_./@:+) not followed by a word character.
    ("port=47311;", True),        # '=' and ';' are not word characters
    ("'47311'", True),
    ("[47311]", True),
    ("47311, then", True),
    ("port:47311", True),         # ':' before is allowed even after a word
    ("-47311", True),             # joiner at the start of the text, nothing before it
    ("47311:", True),             # joiner at the end of the text, nothing after it
    ("47311:x", False),           # joiner followed by a word character
    ("a/47311", False),           # joiner preceded by a word character
    ("47311_", False),            # '_' is a word character
    ("47311é", False),            # Unicode letters are word characters
])
def test_whole_token_punctuation_by_hand(text: str, expected: bool) -> None:
    assert contains_token(text, "47311") is expected


@pytest.mark.parametrize(("line", "expected"), [
    ("- `Telemetry_Relay-Port`: 30116", True),   # `, _ and - become spaces, case folded
    ("TELEMETRY  RELAY\tPORT = 30116", True),    # runs of spaces and tabs collapse
    ("*telemetry* *relay* *port*: 30116", True),
    ("telemetry.relay.port: 30116", False),      # '.' is not label punctuation: no phrase
    ("telemetry relayport: 30116", False),
])
def test_label_punctuation_by_hand(line: str, expected: bool) -> None:
    assert line_identifies(line, "telemetry relay port") is expected


# ---------------------------------------------------------------------------- the lock compared as bytes
@pytest.mark.parametrize("change", ["no-final-newline", "two-final-newlines", "crlf", "trailing-space",
                                    "compact"])
def test_lock_with_same_json_but_other_bytes_is_refused(tmp_path: Path, change: str) -> None:
    # Second test of the byte comparison (the first re-indents with 4 spaces). Each change below keeps
    # the parsed JSON identical (json.loads gives the same dict), so only a comparison of the raw bytes
    # with the canonical form can catch it.
    root = copy_handmade(tmp_path / "p")
    raw = (root / "provenance.lock").read_bytes()
    new = {"no-final-newline": raw[:-1], "two-final-newlines": raw + b"\n",
           "crlf": raw.replace(b"\n", b"\r\n"), "trailing-space": raw.replace(b"{\n", b"{ \n", 1),
           "compact": raw.replace(b"\n", b"").replace(b"  ", b"")}[change]
    assert new != raw and json.loads(new) == json.loads(raw)
    (root / "provenance.lock").write_bytes(new)
    with pytest.raises(LockFormatError, match="not in canonical form"):
        load_package(root)


# ---------------------------------------------------------------------------- the half-unit tolerance
def _printed_by_some_rounding(x: Fraction, value: str, decimals: int) -> bool:
    # Oracle: decimal rounding. x is "printed as value" when rounding x to `decimals` places, half up
    # or half down (a tie may be printed either way), gives value. x has a power-of-ten denominator
    # here, so Decimal represents it exactly.
    q = Decimal(1).scaleb(-decimals)
    d = Decimal(x.numerator) / Decimal(x.denominator)
    return Decimal(value) in (d.quantize(q, ROUND_HALF_UP), d.quantize(q, ROUND_HALF_DOWN))


@pytest.mark.parametrize(("value", "decimals"), [("0.947", 3), ("-0.024", 3), ("0.5", 1), ("12", 0),
                                                 ("0.00", 2)])
def test_half_unit_tolerance_matches_decimal_rounding(value: str, decimals: int) -> None:
    # Every x on a grid 10x finer than the printed unit, within two units of value (ties included).
    unit = Fraction(1, 10**decimals)
    center = Fraction(value)
    checked = 0
    for k in range(-20, 21):
        x = center + k * unit / 10
        want = _printed_by_some_rounding(x, value, decimals)
        num = float(value) if decimals else int(value)
        assert matches_printed(x, num, decimals) is want, (x, value)
        checked += want
    assert checked == 11  # k = -5 .. 5: the two ties and the nine points strictly inside


def test_half_unit_tolerance_hand_values() -> None:
    # Hand values. 1/3 printed "0.33": |1/3 - 0.33| = 1/300 < 1/200 -> yes; printed "0.3" (1 decimal):
    # 1/30 < 1/20 -> yes; printed "0.34": 1/150 > 1/200 -> no. 2/3 printed "0.667": 1/3000 -> yes.
    # 0.0245 printed "0.024" and "0.025": a tie, accepted both ways; 0.02451 only as "0.025".
    assert matches_printed(Fraction(1, 3), 0.33, 2) and matches_printed(Fraction(1, 3), 0.3, 1)
    assert not matches_printed(Fraction(1, 3), 0.34, 2)
    assert matches_printed(Fraction(2, 3), 0.667, 3)
    assert matches_printed(Fraction(245, 10000), 0.024, 3) and matches_printed(Fraction(245, 10000), 0.025, 3)
    assert not matches_printed(Fraction(2451, 100000), 0.024, 3)
    assert not matches_printed(math.nan, 0.5, 1)
    assert matches_printed(np.float64(0.125), 0.13, 2) and matches_printed(np.float64(0.125), 0.12, 2)
