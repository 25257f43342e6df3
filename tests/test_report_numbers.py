"""Every number in the report text has a source: a tracing filter over computed results.

Two checks: (1) rendering with every expression replaced by a placeholder leaves no numeric
token in the text (nothing typed by hand in the template, apart from the whitelist); (2) in the
real rendering every numeric token was emitted by a filter or is part of a printed data string.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from analysis.params import DEFAULT_PARAMS
from analysis.report.numbers import NumberTrace, TemplateNumberError, numeric_tokens, unsourced_numbers
from analysis.report.render import _env, render_report
from report_support import HANDMADE

WHITELIST = {"2026"}
"""Numbers allowed in template text: the year of the cited paper (Tikhonov, 2026)."""


V1 = HANDMADE.parents[2] / "data" / "v1"
PACKAGES = [pytest.param((HANDMADE, "handmade"), id="handmade"),
            pytest.param((V1, "v1"), id="v1", marks=pytest.mark.skipif(
                not (V1 / "provenance.lock").is_file(), reason="data/v1 not present"))]


@pytest.fixture(scope="module", params=PACKAGES)
def out(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        prebuilt: Prebuilt) -> tuple[Path, str]:
    evidence, kind = request.param
    # build(evidence, o, DEFAULT_PARAMS, progress=None), shared by the session (conftest)
    o = prebuilt.copy(evidence, tmp_path_factory.mktemp(kind) / "out")
    return o, kind


def _render(out: tuple[Path, str], finalize=None):
    import json

    o, kind = out
    results = json.loads((o / "results.json").read_text(encoding="utf-8"))
    ev = {"path": "evidence", "kind": kind, "study_name": "s", "rows": 1,
          "valid_rows": 1, "checks": 1, "configurations": 1}
    return render_report(o, results, DEFAULT_PARAMS, ev, finalize_override=finalize)


def _body(qmd: str) -> str:
    """The text after the front matter, without include lines and Markdown backslash escapes
    (``2026\\-01\\-28`` is the escaped date ``2026-01-28``, one printed string)."""
    body = qmd[qmd.index("\n---\n", 4) + 5:] if qmd.startswith("---\n") else qmd
    body = re.sub(r"\{\{< include \S+ >\}\}", "", body)
    return re.sub(r"\\(.)", r"\1", body)


def test_template_text_types_no_number(out: tuple[Path, str]) -> None:
    rendered = _render(out, finalize=lambda value: "§")
    stray = [t for t in numeric_tokens(_body(rendered.qmd)) if t not in WHITELIST]
    assert stray == [], f"numbers typed into the template: {stray}"


def test_every_number_in_the_text_was_emitted_by_a_filter(out: tuple[Path, str]) -> None:
    rendered = _render(out)
    text = _body(rendered.qmd)
    assert len(rendered.trace.emitted) > 40  # the filters did the printing
    assert unsourced_numbers(text, rendered.trace, WHITELIST) == []


def test_the_scan_catches_a_typed_number() -> None:
    trace = NumberTrace()
    trace.record("+0.135")
    assert unsourced_numbers("mean +0.135, median +0.027", trace) == ["+0.027"]
    assert unsourced_numbers("arm S5 of qwen3.5-9b in t3_panel", trace) == []


def test_bare_numbers_cannot_be_printed() -> None:
    env = _env(NumberTrace())
    with pytest.raises(TemplateNumberError, match="format it with a filter"):
        env.from_string("{{ x }}").render(x=0.135)
    assert env.from_string("{{ x|signed }} {{ y|num }}").render(x=0.135, y=None) == "+0.135 —"


def test_the_written_report_matches_the_checked_rendering(out: tuple[Path, str]) -> None:
    written = (out[0] / "report" / "index.qmd").read_text(encoding="utf-8")
    assert _render(out).qmd.split("\n---\n", 1)[1].count("{{< include") == (
        written.split("\n---\n", 1)[1].count("{{< include"))
