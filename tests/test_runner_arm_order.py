"""Arm-order designs: Williams (carryover-balanced) and the paper's rotating Latin square."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner.arm_order import DesignError, arm_order, latin_rows, williams_rows

CODES = list("fnjpqkomtulg")


def test_williams_four_arms_hand_derived() -> None:
    # Hand derivation (Williams 1949, even n): first row 0,1,n-1,2 = a b d c; row i adds i mod 4.
    rows = williams_rows("abcd")
    assert rows == (
        ("a", "b", "d", "c"),
        ("b", "c", "a", "d"),
        ("c", "d", "b", "a"),
        ("d", "a", "c", "b"),
    )


def test_williams_three_arms_two_squares() -> None:
    # Odd n: square rows j q m / q m j / m j q, then each row reversed.
    rows = williams_rows(["j", "q", "m"])
    assert rows == (
        ("j", "q", "m"), ("q", "m", "j"), ("m", "j", "q"),
        ("m", "q", "j"), ("j", "m", "q"), ("q", "j", "m"),
    )


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=2, max_value=12))
def test_williams_balances_position_and_first_order_carryover(n: int) -> None:
    arms = CODES[:n]
    rows = williams_rows(arms)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    for row in rows:
        assert sorted(row) == sorted(arms)
    for pos in range(n):
        counts = Counter(row[pos] for row in rows)
        assert set(counts.values()) == {len(rows) // n}
    pairs = Counter((row[i], row[i + 1]) for row in rows for i in range(n - 1))
    expected = 1 if n % 2 == 0 else 2
    assert len(pairs) == n * (n - 1)
    assert set(pairs.values()) == {expected}


def test_latin_square_has_the_paper_weakness() -> None:
    # The rotation balances position, but each arm keeps one predecessor (section 3.3).
    rows = latin_rows("abcd")
    preds = Counter((row[i], row[i + 1]) for row in rows for i in range(3))
    assert len(preds) == 4  # only a->b, b->c, c->d, d->a ever occur
    for pos in range(4):
        assert sorted(r[pos] for r in rows) == list("abcd")


def test_positions_and_closure() -> None:
    order = arm_order(["j", "q", "m"], repeats=4)
    assert order.sequence(1) == ("j", "q", "m")
    assert order.sequence(4) == ("m", "q", "j")  # repeat 4 uses row index 3, the first mirrored row
    assert order.position(4, "j") == 3 and order.position(4, "q") == 2
    assert not order.closes
    assert arm_order(["j", "q", "m"], repeats=6).closes
    latin = arm_order(["j", "q", "m"], repeats=3, design="latin")
    assert [latin.position(r, "j") for r in (1, 2, 3)] == [1, 3, 2]


@pytest.mark.parametrize("bad", [dict(arms=[], repeats=2), dict(arms=["j", "j"], repeats=2),
                                 dict(arms=["j"], repeats=0), dict(arms=["j"], repeats=1, design="magic")])
def test_design_errors_say_the_fix(bad: dict) -> None:
    with pytest.raises(DesignError):
        arm_order(**bad)
