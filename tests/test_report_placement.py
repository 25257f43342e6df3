"""A table or figure reaches the report without a template edit: its builder's declaration names its report
section (@table/@figure(section=...)), the stages write it into index.json, and the template's
section_end("<section>") places, at the end of that section, each one the template does not place by name.
Each table and figure is placed exactly once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest

from analysis.figures.registry import FIGURE_ORDER
from analysis.params import DEFAULT_PARAMS
from analysis.report import render
from analysis.report.render import TEMPLATES, ReportError, float_id, placed_by_name, render_report
from analysis.tables.declare import SECTIONS, declaration
from analysis.tables.registry import TABLE_ORDER
from support.paths import HANDMADE

EVIDENCE = {"path": "evidence", "kind": "study", "study_name": "s", "rows": 1, "valid_rows": 1, "checks": 1,
            "configurations": 1}


def _section_end_calls() -> list[str]:
    env = jinja2.Environment()
    calls = []
    for path in sorted(TEMPLATES.glob("*.j2")):
        for call in env.parse(path.read_text(encoding="utf-8")).find_all(jinja2.nodes.Call):
            if isinstance(call.node, jinja2.nodes.Name) and call.node.name == "section_end":
                assert isinstance(call.args[0], jinja2.nodes.Const)
                calls.append(call.args[0].value)
    return calls


def test_every_section_ends_once_in_the_templates() -> None:
    calls = _section_end_calls()
    assert sorted(calls) == sorted(SECTIONS), "each of SECTIONS needs exactly one section_end(...) call"


def test_every_builder_declares_a_section_and_the_template_names_only_registered_floats() -> None:
    for builder in (*TABLE_ORDER, *FIGURE_ORDER):
        section = declaration(builder).section
        assert section is None or section in SECTIONS, builder.__name__
    # the macro file's comment names t_name and figure_name; comments are not calls
    assert "t_name" not in placed_by_name() and "figure_name" not in placed_by_name()
    assert {"t3_panel", "forest", "t_beyond_cells", "fact_survival"} <= placed_by_name()


@pytest.fixture(scope="module")
def built(prebuilt: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = prebuilt.copy(HANDMADE, tmp_path_factory.mktemp("placement") / "out")
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))


def _add(out: Path, kind: str, entry: dict[str, Any]) -> None:
    path = out / kind / "index.json"
    index = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps([*index, entry]), encoding="utf-8")


def test_the_stages_write_each_declared_section(built: tuple[Path, dict[str, Any]]) -> None:
    out, _ = built
    tables = {t["name"]: t["section"] for t in json.loads((out / "tables" / "index.json").read_text())}
    figures = {f["name"]: f["section"] for f in json.loads((out / "figures" / "index.json").read_text())}
    assert tables["t_beyond_inference"] == "beyond" and tables["t_claims_audit"] is None
    assert figures["forest"] == "panel" and figures["dose_response"] == "dose_response"


def test_a_new_table_and_figure_reach_the_end_of_their_section_once(built: tuple[Path, dict[str, Any]],
                                                                    tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "out"
    shutil.copytree(built[0], out)
    (out / "tables" / "t_new.md").write_text("| a |\n|---|\n| x |\n", encoding="utf-8")
    _add(out, "tables", {"name": "t_new", "title": "A new table", "note": None, "empty_reason": None, "rows": 1,
                         "section": "beyond"})
    _add(out, "tables", {"name": "t_new_empty", "title": "An empty table", "note": None,
                         "empty_reason": "Nothing to count", "rows": 0, "section": "beyond"})
    shutil.copy(out / "figures" / "forest.png", out / "figures" / "new_fig.png")
    _add(out, "figures", {"name": "new_fig", "title": "A new figure", "alt": "a new figure", "empty_reason": None,
                          "section": "panel"})
    qmd = render_report(out, built[1], DEFAULT_PARAMS, EVIDENCE).qmd
    beyond = qmd.split("## Beyond the paper", 1)[1].split("\n## ", 1)[0]
    panel = qmd.split("## The primary panel", 1)[1].split("\n## ", 1)[0]
    assert qmd.count("{#tbl-t-new}") == 1 and beyond.index("{#tbl-t-new}") > beyond.index("{#tbl-t-beyond-cells}")
    assert "A new table (@tbl-t-new)." in beyond
    assert qmd.count("**An empty table.** Nothing to count.") == 1 and "tbl-t-new-empty" not in qmd
    assert qmd.count("{#fig-new-fig") == 1 and "A new figure (@fig-new-fig)." in panel
    assert panel.index("{#fig-new-fig") > panel.index("{#fig-recall-rows")


def test_every_float_of_the_report_is_placed_once(built: tuple[Path, dict[str, Any]]) -> None:
    out, results = built
    qmd = render_report(out, results, DEFAULT_PARAMS, EVIDENCE).qmd
    ids = re.findall(r"\{#((?:tbl|fig)-[a-z0-9-]+)", qmd)
    assert ids and len(ids) == len(set(ids))
    tables = json.loads((out / "tables" / "index.json").read_text())
    unplaced = [t["name"] for t in tables if float_id("tbl", t["name"]) not in ids]
    # not in the report: empty in this evidence (a sentence instead), or declared outside it (section None)
    assert all(t["section"] is None or not t["rows"] or t["empty_reason"] for t in tables if t["name"] in unplaced)


def test_a_second_placement_fails_the_render(built: tuple[Path, dict[str, Any]],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    out, results = built
    # pretend no template places anything by name: section_end places every float its template also places
    monkeypatch.setattr(render, "placed_by_name", lambda: frozenset())
    with pytest.raises(ReportError, match=r"places '[a-z0-9_]+' twice"):
        render_report(out, results, DEFAULT_PARAMS, EVIDENCE)
