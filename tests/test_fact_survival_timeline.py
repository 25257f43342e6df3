"""The fact timeline and survival rules on a small hand-drawn frame: entry folds, losses, invalid rows,
the risk set and the hazard, each pinned by a test that fails when its rule breaks (issue 21 planted a
one-line fault for each).

The estimators are called directly on a small hand-written folds/facts frame (no scripted
server, no build). Every expected number is derived by hand in the comments from that frame;
each test names the one-line fault it catches, and each was checked to fail with that fault
planted by hand and to pass on the code as it is.

The frame (values are whole tokens of the carriers; chunk c of the fixture holds the value):

    value   chunk      A = alpha1 (0), B = bravo2 (1), C = charlie3 (2), D = delta4 (4: no fold reads it)

    row r1, arm q, valid, repeat 1; facts A B C D
      fold 0  reads [0]     carrier "alpha1"
      fold 1  reads [1]     LOST (keeps the old carrier "alpha1"; chunk 1 is folded again next call)
      fold 2  reads [1, 2]  carrier "alpha1 bravo2 charlie3"
      fold 3  reads [0]     carrier "alpha1 charlie3"       (chunk 0 read a second time; B gone)
    row r2, arm q, valid, repeat 2; facts A B C
      fold 0  reads [0]     carrier ""                      (A not captured at its entry fold)
      fold 1  reads [1]     carrier "alpha1 bravo2"         (A appears late; B captured)
      fold 2  reads [2]     carrier "alpha1"                (B lost; C not captured)
    row r3, arm j, valid, repeat 1; facts A
      fold 0  reads [9]     carrier "x"                     (A's chunk is never read: no entered value)
    row r5, arm j, valid, repeat 2; facts A B C
      folds 0, 1, 2 read [0], [1], [2]; carriers "alpha1", "alpha1 bravo2", "alpha1 bravo2 charlie3"
    row r6, arm m, valid; facts A
      fold 0  reads [9]     carrier "y"                     (no entered value: the whole arm has none)
    row r4, arm q, INVALID, repeat 3; facts A
      fold 0  reads [0]     carrier "alpha1"                (captured and survived, but the row is invalid)

Timeline by hand (entry = first fold that read the chunk and was not lost):
    r1 A: entry 0, captured, never lost, duration 3 - 0 = 3, censored
    r1 B: entry 2 (fold 1 was lost), captured, lost at fold 3, duration 1, event
    r1 C: entry 2, captured, never lost, duration 3 - 2 = 1, censored
    r1 D: no entry fold: every derived field null
    r2 A: entry 0, not captured (absent at fold 0), appeared late (present at fold 1)
    r2 B: entry 1, captured, lost at fold 2, duration 1, event
    r2 C: entry 2, not captured
    r3 A, r6 A: no entry fold
    r5 A, B, C: entries 0, 1, 2, all captured and never lost
Arm q over the valid rows r1, r2: facts 4 + 3 = 7, entered 3 + 3 = 6, captured 3 + 1 = 4,
survived 2 (r1 A, r1 C), losses 2 (r1 B, r2 B); capture_rate 4/6, survival_final 2/4.
Arm j: rows 2, facts 1 + 3 = 4, entered 3, captured 3, survived 3, not captured 0.
Arm m: facts 1, entered 0, captured 0; both rates undefined (null), and no survival curve.
Paired q - j (one configuration, blocks = repeats; a row's checks_total = its entered values, 3 for
every row that has any): repeat 1 pairs r1 (q) with r3 (j), which has no entered value and leaves
the comparison, so only repeat 2 is a pair: r2 (q) captured 1, survived 0 against r5 (j) captured 3,
survived 3 -> captured -2 values per row (share -2/3), survived -3 (share -1).
Kaplan-Meier of arm q, captured values (duration, event): (3, no) (1, yes) (1, no) (1, yes):
    k = 0: n = 4, d = 0                    S = 1     hazard undefined at k = 0
    k = 1: n = 4, d = 2, censored 1        S = 1 - 2/4 = 1/2, hazard 2/4
    k = 2: n = 4 - 2 - 1 = 1, d = 0        S = 1/2, hazard 0/1
    k = 3: n = 1, d = 0, censored 1        S = 1/2, hazard 0/1
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pytest

from analysis.estimators.fact_timeline import FactTimeline, fact_timeline
from analysis.estimators.survival import FactSurvival, fact_survival, kaplan_meier
from analysis.evidence import Configuration, PartitionRun, Study
from analysis.params import DEFAULT_PARAMS

VALUES = {"A": ("alpha1", 0), "B": ("bravo2", 1), "C": ("charlie3", 2), "D": ("delta4", 4)}
FOLDS = [  # row, fold, chunks read, carrier after the fold, lost
    ("r1", 0, [0], "alpha1", False),
    ("r1", 1, [1], "alpha1", True),
    ("r1", 2, [1, 2], "alpha1 bravo2 charlie3", False),
    ("r1", 3, [0], "alpha1 charlie3", False),
    ("r2", 0, [0], "", False),
    ("r2", 1, [1], "alpha1 bravo2", False),
    ("r2", 2, [2], "alpha1", False),
    ("r3", 0, [9], "x", False),
    ("r5", 0, [0], "alpha1", False),
    ("r5", 1, [1], "alpha1 bravo2", False),
    ("r5", 2, [2], "alpha1 bravo2 charlie3", False),
    ("r6", 0, [9], "y", False),
    ("r4", 0, [0], "alpha1", False),
]
FACTS = {"r1": "ABCD", "r2": "ABC", "r3": "A", "r4": "A", "r5": "ABC", "r6": "A"}
ROWS = {"r1": ("q", True, 1), "r2": ("q", True, 2), "r3": ("j", True, 1), "r4": ("q", False, 3),
        "r5": ("j", True, 2), "r6": ("m", True, 1)}
STUDY = Study(
    name="pinned survival", recency_cutoff=dt.date(2026, 1, 1), control="j", treatment="q", scenario="S5",
    configurations={"c/a": Configuration("c/a", "c", dt.date(2026, 3, 1), "loopback", None)},
    partition_runs=(PartitionRun("c/a", "g1", 4),),
)


def _frames() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    folds = pl.DataFrame([{"row_id": r, "fold": f, "chunks": c, "carrier": t, "parse_ok": True, "clipped": False,
                           "lost": lost} for r, f, c, t, lost in FOLDS])
    facts = pl.DataFrame([{"row_id": r, "check": k, "value": VALUES[k][0], "value_class": "id",
                           "chunk": VALUES[k][1], "case_sensitive": True}
                          for r, ks in FACTS.items() for k in ks])
    rows = pl.DataFrame({"row_id": list(ROWS), "arm": [a for a, _, _ in ROWS.values()], "scenario": "S5",
                         "valid": [v for _, v, _ in ROWS.values()], "configuration": "c/a", "execution_group": "g1",
                         "repeat": [r for _, _, r in ROWS.values()], "checks_total": 4, "checks_passed": 1})
    return folds, facts, rows


@pytest.fixture(scope="module")
def timeline() -> FactTimeline:
    folds, facts, _rows = _frames()
    return fact_timeline(folds, facts)


@pytest.fixture(scope="module")
def survival(timeline: FactTimeline) -> FactSurvival:
    _folds, _facts, rows = _frames()
    return fact_survival(timeline, rows, STUDY, DEFAULT_PARAMS)


def _fact(timeline: FactTimeline, row: str, check: str) -> dict[str, Any]:
    (rec,) = timeline.facts.filter((pl.col("row_id") == row) & (pl.col("check") == check)).to_dicts()
    return rec


def _arm(survival: FactSurvival, arm: str) -> dict[str, Any]:
    (rec,) = survival.arms.filter(pl.col("arm") == arm).to_dicts()
    return rec


def _km(survival: FactSurvival, arm: str) -> list[dict[str, Any]]:
    return survival.km.filter(pl.col("arm") == arm).sort("folds_since_entry").to_dicts()


# ------------------------------------------------------------------------------------- timeline
def test_the_entry_fold_is_the_first_fold_that_read_the_chunk(timeline: FactTimeline) -> None:
    # Plant: `pl.col("fold").max().alias("entry_fold")` in fact_timeline -> r1's A (chunk 0, read at
    # folds 0 and 3) entered at fold 3, with duration 0 instead of 3.
    a = _fact(timeline, "r1", "A")
    assert (a["entry_fold"], a["distance"], a["captured"], a["duration"], a["event"]) == (0, 3, True, 3, False)


def test_a_lost_fold_is_never_an_entry_fold(timeline: FactTimeline) -> None:
    # Plant: `reads = folds.select(...)` without the `~lost` filter -> r1's B entered at the lost fold 1,
    # whose kept carrier lacks it: not captured and "appeared late" instead of captured at fold 2.
    b = _fact(timeline, "r1", "B")
    assert (b["entry_fold"], b["captured"], b["loss_fold"], b["duration"], b["event"]) == (2, True, 3, 1, True)
    assert b["appeared_late"] is False
    assert (timeline.facts.filter(pl.col("row_id") == "r1").get_column("entry_fold").drop_nulls() != 1).all()


def test_a_value_with_no_entry_fold_has_every_derived_field_null(timeline: FactTimeline) -> None:
    # Plant: `(captured & ~lost).alias("survived")` without its `pl.when(captured is not null)` -> a value
    # whose chunk no fold read counted as "not survived" instead of having no survival at all.
    for row, check in (("r1", "D"), ("r3", "A"), ("r6", "A")):
        rec = _fact(timeline, row, check)
        assert rec["entry_fold"] is None
        assert all(rec[c] is None for c in ("distance", "captured", "survived", "duration", "event",
                                            "appeared_late", "reappeared")), rec


# ------------------------------------------------------------------------------------- per arm
def test_invalid_rows_are_excluded(survival: FactSurvival) -> None:
    # Plant: drop `pl.col("valid").fill_null(False) &` from fact_survival's row filter -> the invalid
    # r4 (one captured, surviving value) made arm q 8 facts, 5 captured, 3 survived and 3 rows.
    q = _arm(survival, "q")
    assert (q["rows"], q["facts"], q["entered"], q["captured"], q["survived"]) == (2, 7, 6, 4, 2)
    assert survival.rows == 5  # r1, r2, r3, r5, r6
    assert _km(survival, "q")[0]["at_risk"] == 4


def test_survival_final_counts_captured_values(survival: FactSurvival) -> None:
    # Plant: `_ratio("survived", "entered").alias("survival_final")` -> 2/6 instead of 2/4 (the unit test
    # the committed outputs used to be the only check of).
    q = _arm(survival, "q")
    assert q["survival_final"] == pytest.approx(2 / 4)   # survived 2 / captured 4
    assert q["capture_rate"] == pytest.approx(4 / 6)     # captured 4 / entered 6
    assert q["captured"] == q["losses"] + q["survived"]  # 4 = 2 + 2
    assert (q["not_captured"], q["appeared_late"]) == (2, 1)  # r2 A (late) and r2 C


def test_a_row_with_no_entered_value_is_handled(survival: FactSurvival) -> None:
    # Plants: `(~cap).sum().alias("not_captured")` without `entered &` -> r3's never-read value counted as
    # "not captured" in arm j; `_ratio` without its `den > 0` guard -> NaN rates for arm m instead of null;
    # `_paired` without `.filter(pl.col("_total") > 0)` -> r3 entered the paired comparison with
    # checks_total 0, and the whole comparison was refused ("checks_total takes values [0, 3]").
    j = _arm(survival, "j")
    assert (j["rows"], j["facts"], j["entered"], j["captured"], j["survived"], j["not_captured"]) == (2, 4, 3, 3, 3, 0)
    m = _arm(survival, "m")
    assert (m["rows"], m["facts"], m["entered"], m["captured"], m["not_captured"], m["losses"]) == (1, 1, 0, 0, 0, 0)
    assert m["capture_rate"] is None and m["survival_final"] is None
    assert _km(survival, "m") == []
    assert "km.m" in survival.reasons
    cap, surv = survival.paired["captured"], survival.paired["survived"]
    assert cap.reason is None and (cap.configurations, cap.pairs) == (1, 1)
    assert cap.mean == pytest.approx(-2.0) and cap.mean_share == pytest.approx(-2 / 3)
    assert surv.mean == pytest.approx(-3.0) and surv.mean_share == pytest.approx(-1.0)


# ------------------------------------------------------------------------------------- Kaplan-Meier
def test_censored_values_leave_the_risk_set(survival: FactSurvival) -> None:
    # Plant: `at_risk = n - d` (censored not removed) in kaplan_meier -> at k = 2 (no value has that
    # duration) the risk set stayed 4 - 2 = 2 instead of 4 - 2 - 1 = 1.
    km = _km(survival, "q")
    assert [(r["folds_since_entry"], r["at_risk"], r["events"], r["censored"]) for r in km] == [
        (0, 4, 0, 0), (1, 4, 2, 1), (2, 1, 0, 0), (3, 1, 0, 1)]
    assert [r["survival"] for r in km] == pytest.approx([1.0, 0.5, 0.5, 0.5])
    assert [r["at_risk_rows"] for r in km] == [2, 2, 1, 1]  # r1 (A, to k = 3) and r2 (B, to k = 1)


def test_the_hazard_is_null_at_k_zero(survival: FactSurvival) -> None:
    # Plant: `"hazard": (d / n if n and k >= 0 else None)` -> a hazard of 0.0 (here) or d_0 / n_0 at the
    # time origin, where no fold has yet been able to lose a captured value.
    assert [r["hazard"] for r in _km(survival, "q")] == [None, pytest.approx(0.5), 0.0, 0.0]
    # With events at k = 0 (lifelines accepts them): durations 0, 1, 2; events yes, yes, no.
    # k = 0: n = 3, d = 1, S = 2/3 and still no hazard; k = 1: n = 2, d = 1, hazard 1/2, S = 1/3;
    # k = 2: n = 1, d = 0, hazard 0.
    km = kaplan_meier([0, 1, 2], [True, True, False]).to_dicts()
    assert [r["hazard"] for r in km] == [None, pytest.approx(0.5), 0.0]
    assert [r["survival"] for r in km] == pytest.approx([2 / 3, 1 / 3, 1 / 3])
    assert [r["at_risk"] for r in km] == [3, 2, 1]
