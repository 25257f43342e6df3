"""The dose-response outputs (issue 24): table, figure and report section on a ladder package, as the
evidence and as the companion pilot; absent (with the reason) when no package has a ladder.

The ladder package is the scripted two-rung sweep of tests/test_runner_ladder.py (a carrier of
three values: rung g1 keeps everything, rung g7 loses most), declared ``kind = "pilot"``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt
from test_runner_ladder import HEAVY, LIGHT, _sweep

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from analysis.report.numbers import numeric_tokens, unsourced_numbers
from analysis.report.render import render_report
from report_support import HANDMADE, unspanned

SECTION = "## Recall under load: the load ladder"


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _sweep(tmp_path_factory.mktemp("ladder"))


def test_the_ladder_package_gets_its_table_figure_and_section(ladder: Path, tmp_path: Path, prebuilt: Prebuilt) -> None:
    prebuilt.copy(ladder, tmp_path)  # build(ladder, tmp_path, DEFAULT_PARAMS), shared by the session (conftest)
    block = json.loads((tmp_path / "results.json").read_text())["dose_response"]
    assert block["available"] and [r["rung"] for r in block["rungs"]] == [LIGHT, HEAVY]
    light, heavy = block["rungs"]
    assert light["arms"]["j"]["recall"] == 1.0 and heavy["arms"]["j"]["recall"] < 0.5  # the dose-response
    assert heavy["survival"]["j"]["captured"] > heavy["survival"]["j"]["survived"] > 0  # captured, then lost
    table = (tmp_path / "tables" / "t_dose_response.md").read_text()
    assert LIGHT in table and HEAVY in table and "graded values per chunk" in table
    # one line per rung and arm (long): the columns do not grow with the arms, so the table keeps to a column
    head, *lines = [ln for ln in table.splitlines() if ln.startswith("| ")]
    assert head == "| evidence | rung | varies | arm | recall | captured → survived | q − j |"
    assert len(lines) == 2 * 2  # two rungs x arms j, q
    figs = {f["name"]: f for f in json.loads((tmp_path / "figures" / "index.json").read_text())}
    assert figs["dose_response"]["empty_reason"] == ""
    qmd = (tmp_path / "report" / "index.qmd").read_text()
    assert SECTION in qmd and "@tbl-t-dose-response" in qmd and "@fig-dose-response" in qmd


def test_every_number_of_the_section_comes_from_a_filter(ladder: Path, tmp_path: Path, prebuilt: Prebuilt) -> None:
    prebuilt.copy(ladder, tmp_path)  # build(ladder, tmp_path, DEFAULT_PARAMS), shared by the session (conftest)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    ev = {"path": "evidence", "kind": "v2-pilot", "study_name": "s", "rows": 1, "valid_rows": 1, "checks": 1,
          "configurations": 1}
    blank = render_report(tmp_path, results, DEFAULT_PARAMS, ev, finalize_override=lambda value: "§").qmd
    part = blank[blank.index(SECTION):blank.index("## How to rebuild")]
    assert [t for t in numeric_tokens(part) if t != "2026"] == []  # nothing typed into the template
    real = render_report(tmp_path, results, DEFAULT_PARAMS, ev)
    text = real.qmd[real.qmd.index(SECTION):real.qmd.index("## How to rebuild")]
    assert unsourced_numbers(text.replace("\\", ""), real.trace, {"2026"}) == []


def test_the_ladder_pilot_is_shown_beside_other_evidence(ladder: Path, tmp_path: Path) -> None:
    build(HANDMADE, tmp_path, DEFAULT_PARAMS, progress=None, companions=[ladder])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["dose_response"]["available"] is False
    assert results["v2_pilot"]["dose_response"]["available"] is True
    assert "| v2 pilot | " + LIGHT in unspanned((tmp_path / "tables" / "t_dose_response.md").read_text())
    qmd = (tmp_path / "report" / "index.qmd").read_text()
    assert SECTION in qmd and "The v2 pilot was run on the runner's load ladder" in qmd


def test_without_a_ladder_the_section_is_absent_and_the_table_says_why(tmp_path: Path, prebuilt: Prebuilt) -> None:
    prebuilt.copy(HANDMADE, tmp_path)  # build(HANDMADE, tmp_path, DEFAULT_PARAMS), shared by the session (conftest)
    assert SECTION not in (tmp_path / "report" / "index.qmd").read_text()
    index = {t["name"]: t for t in json.loads((tmp_path / "tables" / "index.json").read_text())}
    assert "load ladder" in index["t_dose_response"]["empty_reason"]
