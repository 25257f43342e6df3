"""Issue 30, "the main report is about the paper" (option (b)): the main report of data/v1 points to
the v2 ladder pilot in one paragraph instead of analysing it, and a load ladder on which every cell
is null says so, and why, at the top of its report and in "Recall under load", from the computed
cells only (nothing is said where one cell is not null)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from analysis.report.numbers import NumberTrace
from analysis.report.render import _env
from support.paths import REPO

LADDER = REPO / "data" / "v2" / "ladder-pilot"


def _null_text(dr: dict) -> str:
    env = _env(NumberTrace())
    macro = env.from_string('{% from "_ladder_null.qmd.j2" import ladder_null with context %}'
                            "{{ ladder_null(dr) }}")
    return str(macro.render(dr=dr))


def _rung(name: str, passed: dict[str, int], captured: int = 0, survived: int = 0) -> dict:
    return {"rung": name,
            "arms": {a: {"rows": 3, "checks_per_row": 2, "checks_passed": p, "recall": p / 6}
                     for a, p in passed.items()},
            "survival": {a: {"facts": 6, "captured": captured, "survived": survived} for a in passed}}


def test_every_cell_null_is_said_with_its_counts_and_why() -> None:
    dr = {"available": True, "rungs": [_rung("r1", {"j": 0, "q": 0}), _rung("r2", {"j": 0, "q": 0}, 1, 0)]}
    text = _null_text(dr)
    # 4 cells of 3 rows x 2 checks: 0 of 24 checks; 24 graded values read, 2 captured (1 per arm on r2)
    assert "**Every cell of the load ladder is null:**" in text
    assert "4 rung × arm cells" in text and "2 rungs" in text and "0 of 24 in all" in text
    assert "2 of the 24 graded values" in text and "lost before the recall turn" in text
    nothing = {"available": True, "rungs": [_rung("r1", {"j": 0, "q": 0})]}
    assert "none of the 12 graded values" in _null_text(nothing)


def test_one_nonzero_cell_says_nothing() -> None:
    dr = {"available": True, "rungs": [_rung("r1", {"j": 0, "q": 0}), _rung("r2", {"j": 0, "q": 1})]}
    assert _null_text(dr).strip() == ""
    assert _null_text({"available": False, "reason": "no ladder"}).strip() == ""


@pytest.fixture(scope="module")
def ladder_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, Path]:
    out = tmp_path_factory.mktemp("ladder") / "out"
    build(LADDER, out, DEFAULT_PARAMS, progress=None)
    return ((out / "report" / "index.qmd").read_text(encoding="utf-8"),
            json.loads((out / "results.json").read_text()), out)


def test_the_ladder_pilots_own_report_says_every_cell_is_null(ladder_report) -> None:
    qmd, results, _out = ladder_report
    dr = results["dose_response"]
    cells = [a for g in dr["rungs"] for a in g["arms"].values()]
    assert cells and all(a["checks_passed"] == 0 for a in cells)   # the committed pilot: null everywhere
    checks = sum(a["rows"] * a["checks_per_row"] for a in cells)
    top, section = qmd.split("## Recall under load", 1)
    for part in (top, section):
        assert "**Every cell of the load ladder is null:**" in part
        assert f"0 of {checks} in all" in part and "Why, as measured here" in part
    assert top.index("Every cell of the load ladder is null") < top.index("The package is study")


def test_the_main_report_points_to_the_pilot_without_analysing_it(ladder_report) -> None:
    """The v1 template branch: no companion named -> one paragraph and the command of the pilot's own report."""
    from analysis.report.render import render_report

    _qmd, results, out = ladder_report   # OUT's table and figure indexes, the v1 branch of the template
    res = copy.deepcopy(results)
    res.pop("v2_pilot", None)
    rendered = render_report(out, res, DEFAULT_PARAMS, {"path": "data/v1", "kind": "v1", "study_name": "s",
                                                        "rows": 1, "valid_rows": 1, "checks": 1,
                                                        "configurations": 1})
    body = rendered.qmd
    assert body.count("## The v2 pilot") == 1
    assert "python generate.py --evidence data/v2/ladder-pilot --out" in body
    assert "does not analyse it" in body
    # with the pointer block of the default build: the headline counted from the pilot's rows
    from analysis.evidence import load_package
    from analysis.report.numbers import unsourced_numbers
    from analysis.results.pilot_pointer import pointer_value

    res["v2_pilot_pointer"] = block = pointer_value(load_package(LADDER), LADDER)
    rendered = render_report(out, res, DEFAULT_PARAMS, {"path": "data/v1", "kind": "v1", "study_name": "s",
                                                        "rows": 1, "valid_rows": 1, "checks": 1,
                                                        "configurations": 1})
    section = rendered.qmd.split("## The v2 pilot\n", 1)[1].split("\n## ", 1)[0]
    assert f"a null result, no graded check passed (0 of {block['checks']} over" in " ".join(section.split())
    assert "`python generate.py --evidence data/v2/ladder-pilot --out runs/pilot-report`" in section
    assert unsourced_numbers(section, rendered.trace, set()) == []


def test_the_default_build_of_v1_points_to_the_ladder_pilot_with_its_counted_headline(tmp_path: Path) -> None:
    """`python generate.py` (data/v1, no companion): results.json's v2_pilot_pointer holds the pilot's counts,
    computed from its rows (0 of 54 graded checks in the committed pilot), and no v2_pilot block."""
    import polars as pl

    from analysis.cli import V1_EVIDENCE, pointers_of
    from analysis.evidence import load_package
    from analysis.results.pilot_pointer import pointer_value

    assert pointers_of(V1_EVIDENCE) == [LADDER] and pointers_of(V1_EVIDENCE, [LADDER]) == []
    assert pointers_of(REPO / "tests" / "fixtures" / "handmade") == []
    pkg = load_package(LADDER)
    block = pointer_value(pkg, LADDER)
    valid = pkg.rows.filter(pl.col("valid"))
    assert block["checks"] == int(valid["checks_total"].sum()) and block["checks"] > 0
    assert block["checks_passed"] == int(valid["checks_passed"].sum()) == 0
    assert block["rungs"] == len(pkg.study.ladder) and block["arms"] == sorted(set(pkg.rows["arm"]))
    assert block["command"] == "python generate.py --evidence data/v2/ladder-pilot --out runs/pilot-report"
