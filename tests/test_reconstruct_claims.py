"""The claims loader accepts the transcription and rejects bad files with a message saying the fix."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal
from fractions import Fraction

import numpy as np
import pytest

from analysis.reconstruct.claims import ClaimsError, load_claims, matches_printed, parse_claims
from support.paths import REPO

CLAIMS = REPO / "data" / "published" / "claims.yaml"

GOOD = """claims:
- id: a.b
  section: "4.7"
  what: a mean
  value: 0.135
  decimals: 3
  printed: "+0.135"
  role: derived
"""


def test_the_project_copy_loads_with_every_id_and_role():
    c = load_claims(CLAIMS)
    assert len(c) == 524
    assert (len(c.role_of("primitive")), len(c.role_of("derived")), len(c.role_of("design"))) == (343, 109, 72)
    assert c["panel.mean"].value == 0.135 and c["panel.mean"].decimals == 3


def test_a_minimal_file_parses():
    c = parse_claims(GOOD)
    assert c["a.b"].role == "derived"


def test_unknown_role_is_rejected_with_the_allowed_roles():
    with pytest.raises(ClaimsError, match=r"unknown role 'fitted'.*use one of primitive, derived, design"):
        parse_claims(GOOD.replace("role: derived", "role: fitted"))


def test_duplicate_id_is_rejected_naming_both_claims():
    text = GOOD + GOOD.split("claims:\n", 1)[1]
    with pytest.raises(ClaimsError, match=r"duplicate id 'a.b' \(first at claim #1\).*unique id"):
        parse_claims(text)


def test_non_numeric_value_is_rejected_with_the_fix():
    with pytest.raises(ClaimsError, match=r"value '\+0.135' is not numeric; write it as a YAML number"):
        parse_claims(GOOD.replace("value: 0.135", "value: '+0.135'"))


def test_all_problems_are_listed_at_once():
    bad = GOOD.replace("role: derived", "role: nope").replace("value: 0.135", "value: abc")
    with pytest.raises(ClaimsError) as e:
        parse_claims(bad)
    assert "2 problem(s)" in str(e.value)


def test_missing_key_wrong_decimals_and_bad_yaml():
    with pytest.raises(ClaimsError, match="missing key 'printed'"):
        parse_claims(GOOD.replace('  printed: "+0.135"\n', ""))
    with pytest.raises(ClaimsError, match="more decimals than decimals=2"):
        parse_claims(GOOD.replace("decimals: 3", "decimals: 2"))
    with pytest.raises(ClaimsError, match="not valid YAML"):
        parse_claims("claims: [\n")
    with pytest.raises(ClaimsError, match="top-level key 'claims:'"):
        parse_claims("- 1\n")
    with pytest.raises(ClaimsError, match="no such claims file"):
        load_claims(CLAIMS.with_name("nope.yaml"))


def test_matches_printed_is_exact_half_unit():
    # 53/56 = 0.946428... is 0.000571 from 0.947 (> 0.0005): no; 0.9465 is a tie: yes (ties accepted).
    from fractions import Fraction
    assert not matches_printed(Fraction(53, 56), 0.947, 3)
    assert matches_printed(Fraction(9465, 10000), 0.947, 3)
    assert matches_printed(Fraction(-1, 42), -0.024, 3)  # -0.0238095...


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

