"""Carrier audit (analysis/estimators/carrier.py). Oracle: hand counts from checks.csv."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.estimators.carrier import carrier_audit
from est_handmade_support import CHECKS_SCHEMA, handmade, rows_frame


@pytest.fixture(scope="module")
def pkg():
    return handmade()


def test_handmade_audit(pkg):
    # Audited S5 rows (valid, outcome, every check has in_carrier): a1-q, a2-q, b1-q, b2-q, c1-q,
    # c2-q, c3-q, a1-m, a2-m = 9 (j rows have empty in_carrier; s1-a-q is S1).
    #   b1-q: in carrier 1 (ledger port), answered 0 -> carrier higher, 1 present-missed check
    #   b2-q: in carrier 8 (first 8 labels), answered 7 -> carrier higher (rollback deadline missed)
    #   the other seven: 14 in carrier, 14 answered -> equal
    a = carrier_audit(pkg.rows, pkg.checks, "S5")
    assert (a.audited_rows, a.agree_rows, a.carrier_higher_rows, a.answer_higher_rows) == (9, 7, 2, 0)
    assert (a.present_missed_rows, a.absent_answered_rows) == (2, 0)
    assert a.per_arm.to_dicts() == [
        {"arm": "m", "audited_rows": 2, "present_missed_rows": 0, "share": 0.0, "absent_answered_rows": 0},
        {"arm": "q", "audited_rows": 7, "present_missed_rows": 2, "share": pytest.approx(2 / 7),
         "absent_answered_rows": 0},
    ]
    b1 = a.per_row.filter(pl.col("row_id") == "b1-q").to_dicts()[0]
    assert (b1["carrier"], b1["answered"], b1["present_missed"], b1["direction"]) == (1, 0, 1, "carrier_higher")
    b2 = a.per_row.filter(pl.col("row_id") == "b2-q").to_dicts()[0]
    assert (b2["carrier"], b2["answered"], b2["direction"]) == (8, 7, "carrier_higher")


def test_all_scenarios_adds_the_s1_row(pkg):
    # scenario None: s1-a-q (7 checks, all in carrier and passed) joins -> 10 audited, 8 agree.
    a = carrier_audit(pkg.rows, pkg.checks, None)
    assert (a.audited_rows, a.agree_rows) == (10, 8)


def _checks(records):
    return pl.DataFrame(records, schema=CHECKS_SCHEMA, orient="row")


def test_answer_higher_partial_audit_and_invalid_rows():
    rows = rows_frame([
        {"row_id": "x", "arm": "j", "checks_total": 3, "checks_passed": 2},   # answered without carrier
        {"row_id": "y", "arm": "j", "checks_total": 3, "checks_passed": 1},   # one in_carrier missing
        {"row_id": "z", "arm": "j", "checks_total": 3, "checks_passed": 3, "valid": False},
    ])
    checks = _checks([
        ("x", "a", "1", True, True), ("x", "b", "2", True, False), ("x", "c", "3", False, False),
        ("y", "a", "1", True, True), ("y", "b", "2", False, None), ("y", "c", "3", False, True),
        ("z", "a", "1", True, True), ("z", "b", "2", True, True), ("z", "c", "3", True, True),
    ])
    a = carrier_audit(rows, checks, "S5")
    # Only x is audited: carrier 1 < answered 2 -> answer higher; one absent-answered check.
    assert (a.audited_rows, a.answer_higher_rows, a.absent_answered_rows, a.present_missed_rows) == (1, 1, 1, 0)
    assert a.per_row["row_id"].to_list() == ["x"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6), min_size=1, max_size=8))
def test_counts_partition_the_audited_rows(spec):
    rows = rows_frame([{"row_id": f"r{i}", "arm": "q", "checks_total": len(c), "checks_passed": sum(p for p, _ in c)}
                       for i, c in enumerate(spec)])
    checks = _checks([(f"r{i}", f"k{j}", "v", p, ic) for i, c in enumerate(spec) for j, (p, ic) in enumerate(c)])
    a = carrier_audit(rows, checks, "S5")
    assert a.audited_rows == len(spec)
    assert a.agree_rows + a.carrier_higher_rows + a.answer_higher_rows == a.audited_rows
    # carrier - answered = present_missed - absent_answered, so carrier_higher rows have a present-missed check
    pr = a.per_row
    assert ((pr["carrier"] - pr["answered"]) == (pr["present_missed"] - pr["absent_answered"])).all()
    assert a.present_missed_rows >= a.carrier_higher_rows


def test_ceiling_adherence_handmade(pkg):
    # j: 7 valid S5 rows with lengths (8200, 9500, 9000, 7000, 7400, 600, 1000 of 9600): none within
    # 0.5 % of the ceiling (9500/9600 = 0.9896); finish_stop 5+5+3+5+5+5+5 = 33, finish_length 2.
    # q: 7 rows, stop 5+4+5+5+5+5+5 = 34, length 1. m rows declare no ceiling: absent.
    from analysis.estimators.carrier import ceiling_adherence

    t = ceiling_adherence(pkg.rows, "S5").per_arm
    assert t.select("arm", "rows", "at_ceiling", "finish_stop", "finish_length").to_dicts() == [
        {"arm": "j", "rows": 7, "at_ceiling": 0, "finish_stop": 33, "finish_length": 2},
        {"arm": "q", "rows": 7, "at_ceiling": 0, "finish_stop": 34, "finish_length": 1},
    ]
    assert t["mean_fill"][0] == pytest.approx(42700 / 7 / 9600)


def test_ceiling_adherence_tolerance():
    from analysis.estimators.carrier import ceiling_adherence

    # 9560 and 9620 of 9600 are within 0.5 % (0.42 %, 0.21 %); 9540 is 0.63 % below; 9650 is 0.52 % above.
    rows = rows_frame([{"arm": "t", "checks_passed": 0, "carried_chars": c, "declared_chars": 9600,
                        "finish_stop": 5, "finish_length": 0} for c in (9560, 9620, 9540, 9650)])
    t = ceiling_adherence(rows, "S5").per_arm.to_dicts()[0]
    assert (t["rows"], t["at_ceiling"], t["above_ceiling"], t["finish_stop"]) == (4, 2, 1, 20)
