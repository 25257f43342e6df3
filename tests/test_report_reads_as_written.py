"""Reports shaped for a reader (issue 23): tables designed for a page, prose that reads as written, a
key-results box on top, sections in reader order, links and tables of contents alike in both renders.

Built once on the hand-made package with the v2 pilot beside it (which brings the pilot, its fold-loss
section and the preregistration status), and once on the pilot alone.
"""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from prebuilt_support import Prebuilt

from analysis.params import DEFAULT_PARAMS
from analysis.report.numbers import NumberTrace
from analysis.report.pandoc_render import PANDOC_ARGS
from analysis.report.render import QUARTO_RESOURCES, _env
from analysis.tables.failures import _meaning
from analysis.tables.render import atom, column_weight, numeric_column, to_markdown
from analysis.tables.spec import TableSpec, counted, if_marked, plural_noun, without_zero_columns
from report_support import HANDMADE
from support.paths import REPO

PILOT = HANDMADE.parents[2] / "data" / "v2" / "pilot"
needs_pilot = pytest.mark.skipif(not (PILOT / "provenance.lock").is_file(), reason="data/v2/pilot not present")


@pytest.fixture(scope="module")
def beside(tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    if not (PILOT / "provenance.lock").is_file():
        pytest.skip("data/v2/pilot not present")
    # build(HANDMADE, out, DEFAULT_PARAMS, progress=None, companions=[PILOT]), shared by the session (conftest)
    return prebuilt.copy(HANDMADE, tmp_path_factory.mktemp("beside") / "out", [PILOT])


def _qmd(out: Path) -> str:
    return (out / "report" / "index.qmd").read_text(encoding="utf-8")


# ------------------------------------------------------------------ tables designed for a page

def _spec(note: str = "") -> TableSpec:
    display = pl.DataFrame({"configuration": ["acme/alpha-1", "acme/a-much-longer-configuration-name"],
                            "meaning": ["short", "a long explanation of what this row means, " * 3],
                            "mean recall": ["0.500 (n=3)", "—"], "pairs": ["12", "3/4"]})
    return TableSpec("t_x", "A title", display, display, note=note)


def test_text_columns_are_left_and_numbers_right_aligned() -> None:
    separator = to_markdown(_spec()).splitlines()[1]
    cells = separator.strip("|").split("|")
    assert [c.startswith(":") for c in cells] == [True, True, False, False]
    assert [c.endswith(":") for c in cells] == [False, False, True, True]
    assert numeric_column(["+0.135", "81%", "0/56", "1,534", "—"]) and not numeric_column(["1 of 4"])
    assert not numeric_column(["—", ""])  # a column of dashes alone holds no number


def test_column_widths_follow_content() -> None:
    separator = to_markdown(_spec()).splitlines()[1]
    dashes = [c.count("-") for c in separator.strip("|").split("|")]
    assert dashes[1] > dashes[0] > dashes[2] >= dashes[3]  # meaning, configuration, mean recall, pairs
    assert column_weight("graded values in the final carrier", ["0/56"]) == len("carrier")  # header wraps at words


def test_table_notes_use_curly_apostrophes_as_the_prose_does() -> None:
    text = to_markdown(_spec(note="The arm's repeats; the paper's value."))
    assert "arm’s" in text and "paper’s" in text and "\\'" not in text


def test_atoms_stay_on_one_line_and_other_cells_may_wrap() -> None:
    # issue 34: in Quarto's 800 px column "0.161 (n=4)" and "[0.025, 0.584]" wrapped and
    # "qwen/qwen3.6-35b-a3b" broke at a hyphen; a cell of words may still wrap between them
    for cell in ("0.161 (n=4)", "[0.025, 0.584]", "[-0.011, +0.300]", "0/3 (0.000)", "1,534 (n=12)",
                 "qwen/qwen3.6-35b-a3b", "g1-d0-c100-f1", "2024-09-25", "26/28 (0.929)"):
        assert atom(cell), cell
    for cell in ("0.500", "-0.089", "—", "12", "plain text, five headings", "j (one opaque field)",
                 "0: 1.00, 1: 0.95, 2: 0.95, 3: 0.90, 4: 0.85", "x" * 60 + "-y"):
        assert not atom(cell), cell  # nowhere to break, a phrase, too long to hold on one line
    md = to_markdown(_spec(note="A note."))
    assert "| [acme/alpha-1]{.nw} |" in md and "| [0.500 (n=3)]{.nw} |" in md and "| 12 |" in md
    assert "| short |" in md  # one word without a hyphen needs no span


def test_an_atom_from_evidence_stays_escaped_inside_its_span() -> None:
    display = pl.DataFrame({"model": ["[x](y)-*z*", "a|b-c"], "n": ["1", "2"]})
    md = to_markdown(TableSpec("t_x", "T", display, display))
    assert r"[\[x\](y)-\*z\*]{.nw}" in md and r"[a\|b-c]{.nw}" in md


def test_notes_are_left_aligned_roman_divs_not_italic_paragraphs() -> None:
    md = to_markdown(_spec(note="The arm's repeats."))
    assert md.endswith("\n\n::: table-note\nThe arm’s repeats.\n:::\n") and "\n*The" not in md


def test_a_column_of_zeros_is_left_out_with_its_reason() -> None:
    rows = [{"arm": "j", "failing": "3", "no answer": "0"}, {"arm": "q", "failing": "0", "no answer": "0"}]
    cols, why = without_zero_columns(rows, ["arm", "failing", "no answer"], optional=("failing", "no answer"))
    assert cols == ["arm", "failing"] and why == " ‘no answer’: 0 in every row, so not shown as a column."
    assert without_zero_columns([{"a": "0/8"}, {"a": "0/9"}], ["a"], optional=("a",))[0] == []  # none of 8, of 9
    assert without_zero_columns([{"a": "0/8"}, {"a": "1/9"}], ["a"], optional=("a",))[0] == ["a"]
    rows[1]["no answer"] = "1"
    assert without_zero_columns(rows, ["arm", "failing", "no answer"], optional=("no answer",)) == (
        ["arm", "failing", "no answer"], "")


def test_a_note_explains_a_mark_only_where_the_table_holds_it() -> None:
    assert if_marked([{"a": "0.5"}, {"a": "1.0"}], " — marks …") == ""
    assert if_marked([{"a": "0.5"}, {"a": "[—, —]"}], " — marks …") == " — marks …"


def test_the_status_legend_does_not_repeat_the_status() -> None:
    assert _meaning("mismatch", "mismatch (missed): the value needs row-level data") == "the value needs row-level data"
    assert _meaning("consistent with the printed cells", "consistent with the printed cells: arithmetic") == \
        "arithmetic"
    kept = "inconsistent under every reading tried: no data produce the printed value"
    assert _meaning("inconsistent", kept) == kept  # its opening says more than the label


def test_a_row_named_by_its_anchor_column_carries_its_id() -> None:
    display = pl.DataFrame({"id": ["icc.s5.icc", "a b|c"], "status": ["fitted", "mismatch"]})
    md = to_markdown(TableSpec("t_x", "T", display, display, anchor="id"))
    assert "| [icc.s5.icc]{#claim-icc.s5.icc} | fitted |" in md
    assert r"| [a b\|c]{#claim-a-b-c} | mismatch |" in md  # an id holds no space or syntax


def test_claim_ids_in_the_audit_sentence_become_linked_names() -> None:
    from analysis.report.render import linked_audit_sentence

    audit = {"headline": "Its rules were tuned to 2 derived numbers, audited as: icc.s5.icc (fitted); "
                         "icc.s5.icc_x (missed).", "tuned": {"icc.s5.icc": "fitted", "icc.s5.icc_x": "missed"}}
    names = {"icc.s5.icc": "the value printed as 0.750 in section 4 Results"}
    trace = NumberTrace()
    text = str(linked_audit_sentence(audit, names, trace))
    assert "audited as: [the value printed as 0.750 in section 4 Results](claims.html#claim-icc.s5.icc) " \
           "(fitted); [icc.s5.icc\\_x](claims.html#claim-icc.s5.icc_x) (missed)." in text
    assert "0.750" in " ".join(trace.strings)  # the name's number is a printed string the trace knows


def test_one_header_vocabulary_across_tables(beside: Path) -> None:
    # issue 34: "Model" in some tables, "model" or "configuration" in others; a header is a short lower-case
    # name (a scenario code such as S5, or S(k), excepted) of at most three words plus a level or arm code
    heads = {md.name: next(iter(md.read_text(encoding="utf-8").splitlines()), "")
             for md in (beside / "tables").glob("t_*.md")}
    bad = []
    for name, line in heads.items():
        if not line.startswith("|"):
            continue
        for h in [c.strip() for c in line.strip("|").split("|")]:
            if h in ("Model", "Arm", "configuration", "Configuration") or (h[:1].isupper() and not re.match(
                    r"S\d|S\(k\)", h)):
                bad.append(f"{name}: {h}")
    assert bad == []


def test_no_note_explains_a_mark_its_table_lacks(beside: Path) -> None:
    # issue 34: Table 4's note said "An em dash marks a mean that is undefined" over a table without one
    for md in (beside / "tables").glob("t_*.md"):
        body, _, note = md.read_text(encoding="utf-8").partition("::: table-note")
        if "em dash" in note or "“—”" in note:
            assert "—" in body, md.name


def test_every_table_of_a_build_has_alignment_markers(beside: Path) -> None:
    for md in (beside / "tables").glob("t_*.md"):
        lines = md.read_text(encoding="utf-8").splitlines()
        if lines and lines[0].startswith("|"):
            assert re.fullmatch(r"\|(?::-{3,}|-{3,}:)(?:\|(?::-{3,}|-{3,}:))*\|", lines[1]), md.name


# ------------------------------------------------------------------ prose that reads as written

def test_plural_helper_agrees_with_its_count() -> None:
    assert plural_noun(1, "configuration") == "configuration" and counted(3, "pair") == "3 pairs"
    assert counted(2, "model family", "model families") == "2 model families" and counted(1, "row") == "1 row"
    env = _env(NumberTrace())
    one = env.from_string('{{ n|plural("partition run") }}').render(n=1)
    many = env.from_string('{{ n|plural("partition run") }}').render(n=3)
    assert (one, many) == ("1 partition run", "3 partition runs")


def test_no_template_writes_a_noun_with_s_in_parentheses() -> None:
    root = REPO / "analysis"
    for path in [*root.glob("report/templates/*.j2"), *root.glob("tables/*.py")]:
        # "run(s) were" in words, not a call such as runs_frame(s).filter
        assert not re.search(r"[a-z]\(s\)(?: [a-z]|[,;:]|\.\s)", path.read_text(encoding="utf-8")), path


def test_a_statement_from_the_results_starts_a_sentence_with_a_capital(beside: Path) -> None:
    qmd = _qmd(beside)
    m = re.search(r"\*\*Not preregistered\.\*\* (\S)", qmd)
    assert m and m.group(1).isupper()
    assert "the analysis below" not in qmd.lower()


def test_sections_come_in_reader_order(beside: Path) -> None:
    heads = re.findall(r"^## (.+)$", _qmd(beside), re.M)
    order = [heads.index(h) for h in ("The v2 pilot", "Where graded values are lost across folds", "Preregistration")]
    assert order == sorted(order), heads


def test_the_title_is_the_papers_and_the_subtitle_names_the_evidence(beside: Path) -> None:
    # issue 34: the title was the study's name; it is the paper's title, the subtitle says what the report is
    meta = yaml.safe_load(_qmd(beside).split("---\n")[1])
    assert meta["title"] == "Partitioned versus Undivided Compaction Carriers"
    assert meta["subtitle"] == "A recomputation from the evidence tests/fixtures/handmade: hand-made oracle package"


def test_served_models_sentence_reads_as_written(beside: Path) -> None:
    qmd = _qmd(beside)
    assert "report being served by" not in qmd
    assert "name the model that served them: `smollm2-135m-instruct`" in " ".join(qmd.split())


# ------------------------------------------------------------------ key results and what the evidence holds

def test_a_key_results_box_opens_the_report_with_the_same_numbers(beside: Path) -> None:
    qmd = _qmd(beside)
    body = qmd.split("---\n", 2)[2]
    box = body.split(":::", 2)[1]
    assert body.lstrip().startswith("::: {.callout-note .key-results") and body.index(box) < body.index("## ")
    panel = json.loads((beside / "results.json").read_text(encoding="utf-8"))["panel"]
    # hand-made README: panel mean +0.250 over 3 configurations
    assert f"{panel['mean']:+.3f} over 3 configurations" in " ".join(box.split())
    assert "@tbl-t3-panel" in box and "hand-made test fixture" in box
    assert "Claims audit" not in box  # no claims for this evidence


def test_a_section_that_cannot_apply_is_one_line_of_the_absent_list(beside: Path) -> None:
    qmd = _qmd(beside)
    assert "## Claims audit" not in qmd
    absent = qmd.split("## Not in this evidence\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^- The claims audit: ", absent, re.M)


@needs_pilot
def test_a_one_configuration_panel_says_why_instead_of_dashes(tmp_path: Path, prebuilt: Prebuilt) -> None:
    prebuilt.copy(PILOT, tmp_path / "p")  # build(PILOT, tmp_path / "p", DEFAULT_PARAMS), shared (conftest)
    qmd = _qmd(tmp_path / "p")
    flat = " ".join(qmd.split())
    assert "between — and" not in flat and "[—, —]" not in flat and "= —" not in flat
    assert "not computed: each needs at least two configurations" in flat


# ------------------------------------------------------------------ both renders alike

def test_both_renders_have_the_same_toc_depth(beside: Path) -> None:
    cfg = yaml.safe_load((beside / "report" / "_quarto.yml").read_text(encoding="utf-8"))
    assert f"--toc-depth={cfg['format']['html']['toc-depth']}" in PANDOC_ARGS


def test_every_relative_link_of_the_manuscript_is_copied_beside_quartos_page(beside: Path) -> None:
    cfg = yaml.safe_load((beside / "report" / "_quarto.yml").read_text(encoding="utf-8"))
    resources = cfg["project"]["resources"]
    assert resources == list(QUARTO_RESOURCES)
    links = re.findall(r"\]\(([^)#\s]+)\)", _qmd(beside))
    local = [link for link in links if "://" not in link and not link.startswith("../figures/")]
    assert local, "the manuscript links its trajectory page"
    for link in local:
        assert (beside / "report" / link).is_file(), link  # resolves from report/index.html
        assert any(fnmatch.fnmatch(link, pattern) for pattern in resources), link  # and from _quarto/


def test_the_audit_headline_is_said_once(beside: Path) -> None:
    from analysis.report.render import render_report

    results = json.loads((beside / "results.json").read_text(encoding="utf-8"))
    results["claims_audit"] = {"headline": "45 of 109 derived claims are reproduced by independent computation. "
                                           "The other derived claims: mismatch: 64",
                               "derived": 109, "reproduced": 45, "derived_status_counts": {"reproduced": 45,
                                                                                          "mismatch": 64}}
    evidence = {"path": "e", "kind": "v1", "study_name": "s", "rows": 1, "valid_rows": 1, "checks": 1,
                "configurations": 1}
    qmd = render_report(beside, results, DEFAULT_PARAMS, evidence).qmd
    section = qmd.split("## Claims audit\n", 1)[1].split("\n## ", 1)[0]
    assert " ".join(section.split()).count("reproduced by independent computation") == 1
    assert "45 of 109 derived claims" in section and "In full" not in section


def test_the_key_results_audit_counts_add_up_to_the_printed_cell_claims() -> None:
    """On the committed v1 report: the box lists every printed-cell status, so its counts sum to the total
    (a box that named three fixed statuses dropped the 'implied' one and said 79 + 7 + 0 of 87)."""
    repo = REPO
    audit = json.loads((repo / "results.json").read_text(encoding="utf-8"))["claims_audit"]
    qmd = (repo / "report" / "index.qmd").read_text(encoding="utf-8")
    box = " ".join(qmd.split(":::", 2)[1].split())
    counts = re.search(r"(\d+) follow from its own printed cells \(([^)]*\)?[^)]*)\)", box)
    assert counts, box
    listed = [int(n) for n in re.findall(r"(?:^|, )(\d+) ", counts.group(2))]
    assert int(counts.group(1)) == audit["printed_cells"]["claims"] == sum(listed)
