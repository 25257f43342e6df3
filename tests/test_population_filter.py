"""One population filter: the rows every aggregate reads are selected in one place.

``analysis.estimators.common.valid_outcome_rows`` is the evidence format's validity rule (docs/EVIDENCE_FORMAT.md:
``valid`` true, an outcome in ``checks_passed``) with the recall column. An AST walk over ``analysis`` finds
every other ``pl.col("checks_passed").is_not_null()``: a second copy of the rule fails here unless
:data:`ALLOWED` names it with the reason it cannot call the filter. The expected rows and recalls of the
behaviour test are worked out by hand.
"""

from __future__ import annotations

import ast
from fractions import Fraction

import polars as pl
import pytest

from analysis.estimators.common import ROW_COLUMNS, MissingColumnError, valid_outcome_rows
from support.paths import REPO

PACKAGE = REPO / "analysis"
HOME = "analysis/estimators/common.py"
"""The module of the one filter."""

ALLOWED: dict[str, str] = {
    "analysis/runner/summary.py":
        "the runner may import only the evidence layer (contract runner-uses-only-evidence), so its "
        "end-of-session recall line cannot call the estimators' filter",
    "analysis/evidence/consistency.py":
        "a format check over every row of rows.csv (valid or not) that has an outcome, against checks.jsonl: "
        "not a population of the analysis",
}
"""Module -> why it tests ``checks_passed`` for null itself."""


def _is_outcome_test(node: ast.AST) -> bool:
    """``<x>.col("checks_passed").is_not_null()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "is_not_null"):
        return False
    inner = node.func.value
    return (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "col"
            and len(inner.args) == 1 and isinstance(inner.args[0], ast.Constant)
            and inner.args[0].value == "checks_passed")


def _copies() -> dict[str, list[int]]:
    """Module -> lines of every outcome test in ``analysis``."""
    found: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        lines = [n.lineno for n in ast.walk(tree) if _is_outcome_test(n)]
        if lines:
            found[rel] = lines
    return found


def test_the_population_filter_is_defined_once() -> None:
    copies = _copies()
    assert len(copies.get(HOME, [])) == 1, f"{HOME} should hold the rule once, in valid_outcome_rows"
    stray = {m: lines for m, lines in copies.items() if m != HOME and m not in ALLOWED}
    assert not stray, (f"{stray} select valid rows with an outcome themselves; call "
                       "analysis.estimators.common.valid_outcome_rows(rows, scenario, arms) instead")


def test_every_allowance_is_still_used() -> None:
    assert set(ALLOWED) <= set(_copies()), "remove the allowance of a module that no longer tests checks_passed"


def _rows() -> pl.DataFrame:
    base = {c: ["x"] * 7 for c in ROW_COLUMNS}
    base |= {"row_id": [f"r{i}" for i in range(7)], "repeat": [1] * 7,
             "scenario": ["S5", "S5", "S5", "S5", "S1", "S5", "S5"],
             "arm": ["j", "q", "j", "j", "j", "t", "q"],
             "valid": [True, True, False, None, True, True, True],
             "checks_total": [4, 4, 4, 4, 3, 4, 4],
             "checks_passed": [3, None, 4, 4, 2, 1, 0]}
    return pl.DataFrame(base, schema_overrides={"valid": pl.Boolean, "checks_total": pl.Int64,
                                                "checks_passed": pl.Int64, "repeat": pl.Int64})


@pytest.mark.parametrize(("scenario", "arms", "ids", "recalls"), [
    # r1 has no outcome, r2 is invalid, r3's validity is unknown (null): none of them is in any population
    (None, None, ["r0", "r4", "r5", "r6"], [Fraction(3, 4), Fraction(2, 3), Fraction(1, 4), Fraction(0)]),
    ("S5", None, ["r0", "r5", "r6"], [Fraction(3, 4), Fraction(1, 4), Fraction(0)]),
    ("S5", ["j", "q"], ["r0", "r6"], [Fraction(3, 4), Fraction(0)]),
    (None, ["j"], ["r0", "r4"], [Fraction(3, 4), Fraction(2, 3)]),
    ("S5", [], [], []),
])
def test_valid_rows_with_an_outcome_and_their_recall(scenario: str | None, arms: list[str] | None,
                                                     ids: list[str], recalls: list[Fraction]) -> None:
    out = valid_outcome_rows(_rows(), scenario, arms)
    assert out["row_id"].to_list() == ids
    assert out.schema["recall"] == pl.Float64
    assert out["recall"].to_list() == [float(r) for r in recalls]


def test_a_frame_without_the_columns_is_refused_with_the_fix() -> None:
    with pytest.raises(MissingColumnError, match=r"checks_passed.*load it with analysis\.evidence\.load_package"):
        valid_outcome_rows(_rows().drop("checks_passed"))
