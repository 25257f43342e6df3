"""The manuscript through a real engine: Pandoc renders report/index.qmd (includes expanded,
Quarto-style cross-references by templates/crossref.lua), with zero warnings.

Checked on the hand-made package and the v2 pilot, which lack most of the paper's populations
(empty tables and figures must leave no float, no dangling reference, no empty heading), and on
the v1 reconstruction (every table and figure present). The offline page report/index.html is
this same rendering, and its numbers are the ones results.json holds.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import check
from analysis.report.numbers import numeric_tokens
from analysis.report.pandoc_render import (
    LEAN_READER,
    ReportRenderError,
    expand_includes,
    reader_option,
    render_html,
)
from analysis.report.render import float_id
from escape_support import visible_text
from report_support import HANDMADE
from support.paths import REPO

V1 = REPO / "data" / "v1"
PILOT = REPO / "data" / "v2" / "pilot"
PACKAGES = [
    pytest.param(HANDMADE, id="handmade"),
    pytest.param(PILOT, id="v2-pilot", marks=pytest.mark.skipif(
        not (PILOT / "provenance.lock").is_file(), reason="data/v2/pilot not present")),
    pytest.param(V1, id="v1", marks=pytest.mark.skipif(
        not (V1 / "provenance.lock").is_file(), reason="data/v1 not present")),
]


EVIDENCE: dict[Path, Path] = {}


@pytest.fixture(scope="module", params=PACKAGES)
def out(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    companions = [PILOT] if request.param != PILOT and (PILOT / "provenance.lock").is_file() else []
    # build(request.param, o, DEFAULT_PARAMS, progress=None, companions=...), shared by the session (conftest)
    o = prebuilt.copy(request.param, tmp_path_factory.mktemp("out") / "out", companions)
    EVIDENCE[o] = request.param
    return o


def _index(o: Path, kind: str) -> list[dict]:
    return json.loads((o / kind / "index.json").read_text(encoding="utf-8"))


def _qmd(o: Path) -> str:
    return (o / "report" / "index.qmd").read_text(encoding="utf-8")


def _render(o: Path):
    return render_html(_qmd(o), o / "report", o)


def test_pandoc_renders_the_manuscript_without_a_warning(out: Path) -> None:
    done = _render(out)
    assert done.stderr == ""
    assert "{{<" not in done.markdown and "{{<" not in done.html
    assert done.seconds < 60
    # The offline page is exactly this rendering of the same index.qmd.
    assert (out / "report" / "index.html").read_text(encoding="utf-8") == done.html


def test_every_present_table_and_figure_is_a_numbered_float(out: Path) -> None:
    html = (out / "report" / "index.html").read_text(encoding="utf-8")
    qmd = _qmd(out)
    tables = [t for t in _index(out, "tables") if f"../tables/{t['name']}.md" in qmd]
    present = sorted((t for t in tables if t["rows"] and not t["empty_reason"]),
                     key=lambda t: qmd.index(f"../tables/{t['name']}.md"))
    assert present, "no table with rows in the report"
    for n, t in enumerate(present, 1):  # numbered in document order, like Quarto
        ident = float_id("tbl", t["name"])
        block = html.split(f'<div id="{ident}">', 1)[1].split("</div>", 1)[0]
        assert "<table" in block and f"<caption>Table\u00a0{n}: " in block, ident
    figures = sorted((f for f in _index(out, "figures") if not f["empty_reason"]),
                     key=lambda f: qmd.index(f"../figures/{f['name']}.png"))
    for n, f in enumerate(figures, 1):
        ident = float_id("fig", f["name"])
        block = html.split(f'<figure id="{ident}">', 1)[1].split("</figure>", 1)[0]
        assert 'src="data:image/png;base64,' in block and f"Figure\u00a0{n}: " in block, ident
    assert html.count("<figure ") == len(figures)


def test_every_float_is_referenced_and_every_reference_has_its_target(out: Path) -> None:
    qmd = _qmd(out)
    ids = set(re.findall(r"\{#((?:tbl|fig)-[\w-]+)[ }]", qmd))
    refs = set(re.findall(r"@((?:tbl|fig)-[\w-]+[\w])", qmd))
    assert ids and refs == ids, {"unreferenced": ids - refs, "dangling": refs - ids}
    html = (out / "report" / "index.html").read_text(encoding="utf-8")
    targets = set(re.findall(r'<a href="#((?:tbl|fig)-[\w-]+)">(?:Table|Figure)\u00a0\d+</a>', html))
    assert targets == ids
    assert 'class="citation"' not in html  # no @word left unresolved


def test_section_numbers_are_clean_and_no_heading_is_empty(out: Path) -> None:
    html = (out / "report" / "index.html").read_text(encoding="utf-8")
    numbers = re.findall(r'<h[1-6][^>]* data-number="([\d.]+)"', html)
    assert numbers and not [n for n in numbers if ".0" in f".{n}" or n.startswith("0")]
    assert not re.search(r"<h[4-6]", html)  # table titles are captions, not headings
    body = html.split("</nav>", 1)[1]
    headings = re.findall(r"<h[23][^>]*>.*?</h[23]>", body, flags=re.DOTALL)
    sections = re.split(r"<h[23][^>]*>.*?</h[23]>", body, flags=re.DOTALL)[1:]
    assert len(sections) == len(headings) >= 5
    for heading, section in zip(headings, sections, strict=True):
        assert visible_text(section).strip(), f"nothing under {visible_text(heading)!r}"


def test_missing_populations_leave_a_sentence_not_a_float(out: Path) -> None:
    qmd = _qmd(out)
    for t in _index(out, "tables"):
        if f"../tables/{t['name']}.md" in qmd:
            assert t["rows"] and not t["empty_reason"], t["name"]
        if t["empty_reason"] and t["name"] != "t_cells":
            ident = float_id("tbl", t["name"])
            assert f"#{ident}" not in qmd and f"@{ident}" not in qmd


def test_the_rendered_numbers_are_the_computed_ones(out: Path) -> None:
    """Every number of the rendered prose is a filter output over results.json (or a printed data
    string), and the headline numbers of results.json appear as computed."""
    from analysis.report.render import render_report
    from analysis.report.stage import evidence_summary

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    html = (out / "report" / "index.html").read_text(encoding="utf-8")
    body = html.split("</nav>", 1)[1]
    # Tables and their notes (tables/*.md, checked by their goldens) and figures are not prose.
    body = re.sub(r'<div id="tbl-[^"]*">.*?</div>|<figure.*?</figure>', " ", body, flags=re.DOTALL)
    body = re.sub(r'<span class="header-section-number">[\d.]+</span>', " ", body)
    body = re.sub(r">(?:Table|Figure)\u00a0\d+<", "><", body)
    text = visible_text(body)
    from analysis.evidence import load_package

    evidence = evidence_summary(load_package(EVIDENCE[out]), EVIDENCE[out])
    trace = render_report(out, results, DEFAULT_PARAMS, evidence).trace
    sources = set(trace.emitted) | {"2026"}  # the cited paper's year
    for s in trace.strings:
        sources.update(numeric_tokens(s))
    stray = [t for t in numeric_tokens(text) if t not in sources and t.lstrip("+") not in sources]
    assert stray == [], stray
    panel = results["panel"]
    if panel.get("configurations"):
        assert f"mean paired effect is {panel['mean']:+.3f}" in " ".join(text.split())


def test_includes_stay_inside_out_and_stray_shortcodes_fail(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "a.md").write_text("| x |\n|---|\n| 1 |\n")
    assert "| 1 |" in expand_includes("{{< include ../tables/a.md >}}\n", tmp_path / "report", tmp_path)
    (tmp_path.parent / "secret.md").write_text("secret\n")
    with pytest.raises(ReportRenderError, match="not a file inside"):
        expand_includes("{{< include ../../secret.md >}}\n", tmp_path / "report", tmp_path)
    with pytest.raises(ReportRenderError, match="shortcode"):
        expand_includes("text {{< meta title >}}\n", tmp_path / "report", tmp_path)


def test_a_dangling_reference_fails_the_render(tmp_path: Path) -> None:
    with pytest.raises(ReportRenderError, match="@tbl-nowhere has no target"):
        render_html("---\ntitle: t\n---\n\n## A\n\nSee @tbl-nowhere.\n", tmp_path, tmp_path)


def test_the_lean_reader_gives_the_same_page(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report holds no TeX syntax, so Pandoc reads it without tex_math_dollars and raw_tex (and
    raw_html where no unescaped < is left; issue 21, the build's CPU); the page is byte for byte the one
    of the full Markdown reader."""
    from analysis.report import pandoc_render as pr

    run, readers = pr.subprocess.run, []

    def spy(args: list[str], **kw):
        readers.extend(a for a in args if a.startswith("--from="))
        return run(args, **kw)

    monkeypatch.setattr(pr.subprocess, "run", spy)
    lean = _render(out)
    assert readers == [reader_option(lean.markdown)]
    assert readers[0].startswith("--from=markdown-raw_tex-tex_math_dollars"), "TeX syntax in the manuscript?"
    monkeypatch.setattr(pr, "UNUSED_EXTENSIONS", ())
    assert _render(out).html == lean.html
    assert readers[1] == "--from=markdown"


def test_tex_or_html_syntax_keeps_its_extension(tmp_path: Path) -> None:
    lean = LEAN_READER.replace("--from=markdown", "")
    assert reader_option("plain \\_text\\_, \\* and \\\\ only, j \\< 0.5") == LEAN_READER
    assert reader_option("costs \\$5") == "--from=markdown" + lean.replace("-tex_math_dollars", "")  # even escaped
    assert reader_option("a \\béta command") == "--from=markdown" + lean.replace("-raw_tex", "")
    for html in ("a <b>", "a \\\\<b>", "`x <y>` code", "<!-- c -->"):
        assert reader_option(html) == "--from=markdown-raw_tex-tex_math_dollars", html
    html = render_html("The mean $\\bar x$ is <b>shown</b>.\n", tmp_path, tmp_path, crossref=False).html
    assert '<span class="math inline">' in html and "<b>shown</b>" in html


ALIGNED_TABLE = ("| left | right | centre | default |\n|:-----|------:|:------:|---------|\n"
                 "| a | 1 | c | d |\n| b | 2 | e | f |\n")


@pytest.mark.parametrize("crossref", [True, False], ids=["crossref", "alignment-only"])
def test_column_alignment_is_a_class_not_a_style(tmp_path: Path, crossref: bool) -> None:
    """templates/table_alignment.lua, alone or inside crossref.lua (within a tbl- float there): a
    right-aligned column's cells, header included, carry class "r"; every other cell no attribute."""
    body = f"::: {{#tbl-x}}\n{ALIGNED_TABLE}\nCaption.\n:::\n\nSee @tbl-x.\n" if crossref else ALIGNED_TABLE
    html = render_html(body, tmp_path, tmp_path, crossref=crossref).html
    assert "text-align" not in html.split("</style>")[-1]
    cells = re.findall(r"<(t[hd])( [^>]*)?>([^<]*)</t[hd]>", html)
    assert cells == [("th", "", "left"), ("th", ' class="r"', "right"), ("th", "", "centre"), ("th", "", "default"),
                     ("td", "", "a"), ("td", ' class="r"', "1"), ("td", "", "c"), ("td", "", "d"),
                     ("td", "", "b"), ("td", ' class="r"', "2"), ("td", "", "e"), ("td", "", "f")]


def test_the_claims_page_is_the_same_without_the_crossref_filter(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The claims page has no figure, float or @reference, so it runs only the alignment filter
    (one Lua walk less): its bytes are those the full cross-reference filter gives, and those of the
    full Markdown reader."""
    from analysis.report import pandoc_render as pr
    from analysis.report.render import CLAIMS_PAGE, claims_page

    real, calls = pr.render_html, []

    def both(qmd: str, report_dir: Path, root: Path, **kw):
        calls.append(kw)
        page = real(qmd, report_dir, root, **kw)
        assert page.html == real(qmd, report_dir, root, **{**kw, "crossref": True}).html
        with pytest.MonkeyPatch.context() as full_reader:
            full_reader.setattr(pr, "UNUSED_EXTENSIONS", ())
            assert page.html == real(qmd, report_dir, root, **kw).html
        return page

    monkeypatch.setattr(pr, "render_html", both)
    page = claims_page(out, json.loads((out / "results.json").read_text(encoding="utf-8")))
    if page is None:
        assert not (out / "report" / CLAIMS_PAGE).exists()
        pytest.skip("no claims audit in this package")
    assert calls == [{"toc": False, "crossref": False}]
    assert page == (out / "report" / CLAIMS_PAGE).read_text(encoding="utf-8")


def test_a_citation_fails_a_page_rendered_without_cross_references(tmp_path: Path) -> None:
    with pytest.raises(ReportRenderError, match="cites @tbl-nowhere but is rendered without cross-references"):
        render_html("---\ntitle: t\n---\n\nSee @tbl-nowhere.\n", tmp_path, tmp_path, crossref=False)
    assert "a@b.org" in render_html("Write to a@b.org.\n", tmp_path, tmp_path, crossref=False).html


# ------------------------------------------------------------------ what `quarto render report/` does

QUARTO_1_10_IGNORES = ("/.quarto/", "**/*.quarto_ipynb")
"""kQuartoIgnore of quarto-cli 1.10 (src/project/project-gitignore.ts), typed here from the source, not
imported from the package: the simulated render below must catch a build that writes too few."""


def _quarto_render_footprint(report: Path) -> None:
    """What a Quarto 1.10 project render does to report/ (quarto-cli src/command/render/project.ts and
    src/project/project-gitignore.ts): ensure .gitignore lists every required entry (each missing one is
    appended, on every render), create .quarto/, write each output beside its source under its
    output-file name, then rename it into output-dir (full renders first clean output-dir)."""
    import yaml

    cfg = yaml.safe_load((report / "_quarto.yml").read_text(encoding="utf-8"))
    gitignore = report / ".gitignore"
    lines = [line.strip() for line in gitignore.read_text().splitlines()] if gitignore.exists() else []
    missing = [entry for entry in QUARTO_1_10_IGNORES if entry not in lines]
    if missing:
        gitignore.write_text("\n".join([*lines, *missing]) + "\n")
    (report / ".quarto" / "xref").mkdir(parents=True, exist_ok=True)
    (report / ".quarto" / "xref" / "INDEX").write_text("{}")
    out_dir = report / cfg["project"]["output-dir"]
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    for source in cfg["project"]["render"]:
        name = cfg["format"]["html"].get("output-file") or Path(source).with_suffix(".html").name
        (report / name).write_text("<html>quarto</html>")
        (report / name).rename(out_dir / name)


def test_a_quarto_render_leaves_the_offline_page_and_check_intact(tmp_path: Path, prebuilt: Prebuilt) -> None:
    o = prebuilt.copy(HANDMADE, tmp_path / "o")  # build(HANDMADE, o, DEFAULT_PARAMS), shared (conftest)
    page = (o / "report" / "index.html").read_bytes()
    ignore = (o / "report" / ".gitignore").read_bytes()
    _quarto_render_footprint(o / "report")
    _quarto_render_footprint(o / "report")  # every render, not only the first
    assert (o / "report" / ".gitignore").read_bytes() == ignore, "a Quarto render appended to report/.gitignore"
    assert (o / "report" / "index.html").read_bytes() == page
    assert (o / "report" / "_quarto" / "manuscript.html").is_file()
    assert check(HANDMADE, o, DEFAULT_PARAMS) == []


def test_a_pandoc_failure_is_one_line_from_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.pipeline import BuildError
    from analysis.report import pandoc_render as pr

    assert issubclass(ReportRenderError, BuildError)  # the CLI prints a BuildError without traceback
    monkeypatch.setattr(pr, "PANDOC_ARGS", (*pr.PANDOC_ARGS, "--no-such-option"))
    with pytest.raises(ReportRenderError, match="Pandoc failed"):
        render_html("---\ntitle: t\n---\n\ntext\n", tmp_path, tmp_path)


# -------------------------------------------------------------------------------- cross-references
def _render_body(tmp_path: Path, body: str) -> None:
    render_html(body, tmp_path, tmp_path)


def test_crossref_fails_on_a_duplicate_identifier(tmp_path: Path) -> None:
    # Plant: register() without the `if labels[id]` check -> two "Table 1"s and a link to the first.
    table = "| a |\n|---|\n| 1 |\n\nCaption.\n"
    body = f"::: {{#tbl-x}}\n{table}:::\n\n::: {{#tbl-x}}\n{table}:::\n\nSee @tbl-x.\n"
    with pytest.raises(ReportRenderError, match="duplicate identifier #tbl-x"):
        _render_body(tmp_path, body)


def test_crossref_fails_on_two_tables_in_one_float(tmp_path: Path) -> None:
    # Plant: `if #tables < 1` in number_table -> the second table lost its number silently.
    body = "::: {#tbl-x}\n| a |\n|---|\n| 1 |\n\n| b |\n|---|\n| 2 |\n\nCaption.\n:::\n\nSee @tbl-x.\n"
    with pytest.raises(ReportRenderError, match="must hold exactly one table, found 2"):
        _render_body(tmp_path, body)


def test_crossref_numbers_a_well_formed_table(tmp_path: Path) -> None:
    """The two failures above are about the fault, not about any table: one table renders."""
    render = render_html("::: {#tbl-x}\n| a |\n|---|\n| 1 |\n\nCaption.\n:::\n\nSee @tbl-x.\n", tmp_path, tmp_path)
    assert "Table\u00a01" in render.html

