"""Fact timeline, survival per arm, its outputs and the trajectory viewer (issue 14).

The scripted scenario (tests/survival_support.py) loses values at known folds; every number
asserted below is derived by hand in the comments from that script.
"""

from __future__ import annotations

import json
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prebuilt_support import Prebuilt

from analysis.estimators.fact_timeline import presence_matrix
from analysis.estimators.survival import kaplan_meier
from analysis.estimators.survival_results import package_survival, survival_block
from analysis.evidence import load_package
from analysis.evidence.tokens import contains_token
from analysis.params import DEFAULT_PARAMS
from analysis.viewer.trajectories import trajectory_data, trajectory_page
from support.paths import REPO
from survival_support import CLIPPED, DROPPED, NEVER, XSS

CHROMIUM = Path("/usr/bin/chromium")
# marked `browser` (deselect with -m "not browser") and skipped where Chromium is missing
_needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                     reason="needs /usr/bin/chromium (apt-get install -y chromium)")


def browser(test):  # a decorator applying both marks
    return pytest.mark.browser(_needs_chromium(test))


@pytest.fixture(scope="module")
def scenario(scripted_scenario: Path) -> Path:
    return scripted_scenario  # write_scenario(tmp / "pkg"), once per session (conftest); read-only


@pytest.fixture(scope="module")
def survival(scenario: Path):
    pkg = load_package(scenario)
    return pkg, package_survival(pkg, DEFAULT_PARAMS)


@pytest.fixture(scope="module")
def built(scenario: Path, tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    # build(scenario, out, DEFAULT_PARAMS, progress=None), shared by the session (conftest)
    return prebuilt.copy(scenario, tmp_path_factory.mktemp("out") / "out")


# ---------------------------------------------------------------- timeline
def _row(survival, row_id: str) -> dict[str, tuple]:
    _pkg, out = survival
    f = out.timeline.facts.filter(pl.col("row_id") == row_id)
    return {r["check"]: (r["entry_fold"], r["captured"], r["loss_fold"], r["loss_clipped"], r["loss_parse_failed"],
                         r["survived"]) for r in f.iter_rows(named=True)}


def test_timeline_of_the_plain_arm_is_exact(survival) -> None:
    t = _row(survival, "a-r1-m")
    assert t[DROPPED] == (0, True, 2, False, False, False)     # dropped at fold 2, not clipped, no parse
    assert t[CLIPPED] == (1, True, 3, True, False, False)      # clipped away at fold 3
    assert t[NEVER] == (3, False, None, None, None, False)     # never captured
    assert t["freeze window start"] == (0, True, None, None, None, True)
    assert t["migration batch UUID"] == (4, True, None, None, None, True)
    assert sum(v[5] for v in t.values()) == 11                 # 14 - dropped - clipped - never


def test_timeline_of_the_schema_arm_with_a_parse_failure_is_exact(survival) -> None:
    t = _row(survival, "a-r1-j")
    assert t[DROPPED] == (0, True, 2, False, False, False)
    assert t[CLIPPED] == (1, True, 3, True, False, False)
    assert t["state lock path"] == (2, True, 4, False, True, False)   # lost at j's broken fold 4
    assert t["migration batch UUID"] == (4, False, None, None, None, False)  # entered at the broken fold
    assert not any(v[5] for v in t.values())
    _pkg, out = survival
    entry = out.timeline.facts.filter((pl.col("row_id") == "a-r1-j") & (pl.col("entry_fold") == 4))
    assert entry.get_column("entry_parse_failed").to_list() == [True, True]
    bits = out.timeline.presence.filter((pl.col("row_id") == "a-r1-j") & (pl.col("check") == CLIPPED)).sort("fold")
    assert bits.get_column("fold").to_list() == [1, 2, 3, 4]
    assert bits.get_column("present").to_list() == [True, True, False, False]


# ---------------------------------------------------------------- survival
def test_survival_table_of_the_scenario_is_exact(survival) -> None:
    _pkg, out = survival
    arms = {r["arm"]: r for r in out.survival.arms.iter_rows(named=True)}
    # m and q per row: 13 of 14 captured (not the owning department), 2 lost (dropped, clipped), 11 survive
    for arm in ("m", "q"):
        a = arms[arm]
        assert (a["rows"], a["entered"], a["captured"], a["survived"], a["losses"]) == (2, 28, 26, 22, 4)
        assert (a["losses_clipped"], a["losses_parse_failed"],
                a["not_captured"], a["not_captured_clipped"]) == (2, 0, 2, 2)
    # j per row: 11 captured (not the department, not chunk 4's two values), all lost: 2 as in m, 9 at fold 4
    j = arms["j"]
    assert (j["captured"], j["survived"], j["losses"],
            j["losses_clipped"], j["losses_parse_failed"]) == (22, 0, 22, 2, 18)
    assert (j["not_captured"], j["not_captured_parse_failed"]) == (6, 4)
    assert j["share_lost_parse_failed"] == pytest.approx(18 / 22)


def test_kaplan_meier_of_the_scenario_matches_the_hand_computation(survival) -> None:
    _pkg, out = survival
    km = {(r["arm"], r["folds_since_entry"]): r for r in out.survival.km.iter_rows(named=True)}
    # m, one row (the second doubles every count): durations of the 13 captured values:
    # events at k=2 (dropped, clipped); censored at 4,4 (chunk 0), 3,3 (chunk 1), 2,2,2 (chunk 2), 1,1 (3), 0,0 (4).
    # n_0 = 13, c_0 = 2 -> n_1 = 11, c_1 = 2 -> n_2 = 9, d_2 = 2: S(2) = 7/9, then no more events.
    assert [km[("m", k)]["survival"] for k in range(5)] == pytest.approx([1, 1, 7 / 9, 7 / 9, 7 / 9])
    assert km[("m", 2)]["at_risk"] == 18 and km[("m", 2)]["events"] == 4
    assert km[("m", 2)]["hazard"] == pytest.approx(2 / 9)
    # j: 11 captured, all lost. d_1 = 2 (chunk 3), d_2 = 2 + 3 (dropped, clipped, chunk 2), d_3 = 2, d_4 = 2.
    # S = 9/11, 9/11 * 4/9 = 4/11, 4/11 * 2/4 = 2/11, 0.
    assert [km[("j", k)]["survival"] for k in range(5)] == pytest.approx([1, 9 / 11, 4 / 11, 2 / 11, 0])


def test_paired_q_minus_j_uses_the_panel_estimator(survival) -> None:
    _pkg, out = survival
    cap, surv = out.survival.paired["captured"], out.survival.paired["survived"]
    assert (cap.configurations, cap.pairs, cap.mean) == (1, 2, pytest.approx(2.0))     # 13 - 11 per row
    assert surv.mean == pytest.approx(11.0)                                             # 11 - 0 per row
    assert surv.mean_share == pytest.approx(11 / 14)


def test_cuts_by_value_class_and_distance(survival) -> None:
    _pkg, out = survival
    cuts = out.survival.cuts
    dept = cuts.filter((pl.col("cut") == "value_class") & (pl.col("level") == "department_cyrillic")
                       & (pl.col("arm") == "m")).row(0, named=True)
    assert (dept["facts"], dept["captured"]) == (2, 0)
    last = cuts.filter((pl.col("cut") == "distance") & (pl.col("level") == "0")
                       & (pl.col("arm") == "q")).row(0, named=True)
    assert (last["facts"], last["captured"], last["survived"]) == (4, 4, 4)


def test_kaplan_meier_oracle_hand_computation() -> None:
    # durations 1,2,2,3,3,0 with events T,T,F,T,F,F. Product limit:
    # k=0: n=6, c=1. k=1: n=5, d=1 -> S=4/5. k=2: n=4, d=1, c=1 -> S=4/5*3/4=3/5. k=3: n=2, d=1 -> S=3/10.
    km = kaplan_meier([1, 2, 2, 3, 3, 0], [True, True, False, True, False, False])
    assert km.get_column("survival").to_list() == pytest.approx([1.0, 0.8, 0.6, 0.3])
    assert km.get_column("at_risk").to_list() == [6, 5, 4, 2]
    assert km.get_column("hazard").to_list()[1:] == pytest.approx([1 / 5, 1 / 4, 1 / 2])
    assert float(Fraction(3, 10)) == pytest.approx(km.get_column("survival")[-1])


TOKENS = st.sampled_from(["41432", "v1.2.3", "a b", "x", "Управление", "@a.b", ".", "-", " ", "\t", "\u00a0",
                          "e\u0301", "\u00e9", ":", "/", "_"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(TOKENS, max_size=8).map("".join), min_size=1, max_size=5),
       st.lists(st.lists(TOKENS, min_size=1, max_size=3).map("".join), min_size=1, max_size=4))
def test_vectorised_presence_equals_the_grader(carriers: list[str], values: list[str]) -> None:
    got = presence_matrix(carriers, values, [True] * len(values))
    for i, c in enumerate(carriers):
        for j, v in enumerate(values):
            assert got[i, j] == contains_token(c, v), (c, v)


ALPHABET = "ab1_-./@:+ \t\n\u00a0Ж²Ⅻ‿\u0301é!,x"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=30), st.integers(0, 30), st.integers(1, 6))
def test_token_pattern_equals_the_grader_on_substrings(carrier: str, start: int, length: int) -> None:
    value = carrier[start:start + length] or "a"
    got = presence_matrix([carrier], [value], [True])[0, 0]
    assert got == contains_token(carrier, value), (carrier, value)


# ---------------------------------------------------------------- the v2 pilot and packages without folds
def test_v2_pilot_captures_nothing_and_says_so() -> None:
    pkg = load_package(REPO / "data" / "v2" / "pilot")
    block = survival_block(pkg, DEFAULT_PARAMS)
    assert block["available"] and block["rows"] == 12 and block["facts"] == 168
    assert all(a["captured"] == 0 and a["entered"] == 56 for a in block["arms"].values())
    assert block["km"] == {}
    assert block["arms"]["j"]["not_captured_parse_failed"] == 44   # 4 of 5 j folds per row did not parse
    assert block["paired"]["captured"]["mean"] == 0.0


def test_a_package_without_folds_is_not_in_this_evidence() -> None:
    block = survival_block(load_package(REPO / "data" / "v1"), DEFAULT_PARAMS)
    assert block["available"] is False and block["reason"].startswith("not in this evidence")


# ---------------------------------------------------------------- outputs of a build
def test_build_writes_table_figure_results_and_report_section(built: Path) -> None:
    results = json.loads((built / "results.json").read_text(encoding="utf-8"))
    fs = results["fact_survival"]
    assert fs["available"] and fs["arms"]["j"]["losses_parse_failed"] == 18
    assert [p["survival"] for p in fs["km"]["m"]] == pytest.approx([1, 1, 7 / 9, 7 / 9, 7 / 9])
    table = (built / "tables" / "t_fact_survival.csv").read_text(encoding="utf-8")
    assert table.splitlines()[0].startswith("arm,rows,facts,entered,captured")
    md = (built / "tables" / "t_fact_survival.md").read_text(encoding="utf-8")
    assert "| this evidence | j" in md and "26/28 (0.929)" in md
    curves = (built / "tables" / "t_fact_survival_curves.md").read_text(encoding="utf-8")
    assert "| this evidence | j" in curves and "18/22" in curves  # losses at parse failures
    assert (built / "figures" / "fact_survival.png").stat().st_size > 10_000
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    section = qmd.split("## Where graded values are lost across folds", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split())
    assert "Arm **j**: 22 of 28 values captured at entry; 22 of them lost and 0 never lost to the final carrier" in flat
    assert "{{< include ../tables/t_fact_survival.md >}}" in section
    assert "differ by +11.00 per row over 2 pairs" in section


def test_report_section_without_folds_says_not_in_this_evidence() -> None:
    from analysis.report.numbers import NumberTrace
    from analysis.report.render import _env

    block = survival_block(load_package(REPO / "data" / "v1"), DEFAULT_PARAMS)
    # The section is included by index.qmd.j2, whose context gives it section_end (the tables and figures
    # declared for the section); rendered alone, it gets one that places nothing.
    text = _env(NumberTrace()).get_template("_survival.qmd.j2").render(r={"fact_survival": block}, pilot=None,
                                                                       section_end=lambda _section: "")
    assert "## Where graded values are lost across folds" in text
    assert "Not in this evidence: not in this evidence: the package has no folds.jsonl" not in text
    assert "Not in this evidence: the package has no folds.jsonl" in text


def test_viewer_data_dedupes_carriers_and_marks_losses(survival) -> None:
    pkg, out = survival
    data = trajectory_data(pkg, out, "this evidence")
    folds = [f for r in data["rows"] for f in r["folds"]]
    assert len(data["texts"]) < len(folds) + len(data["rows"])         # identical carriers stored once
    row = next(r for r in data["rows"] if r["id"] == "a-r2-m")
    fact = next(f for f in row["facts"] if f["k"] == DROPPED)
    assert (fact["e"], fact["lf"], fact["b"]) == (0, 2, "11000")
    clipped = next(f for f in row["facts"] if f["k"] == CLIPPED)
    assert (clipped["e"], clipped["lf"], clipped["b"]) == (1, 3, "1100")
    assert [c["ok"] for c in row["checks"]].count(True) == 11
    page = trajectory_page(data)
    assert "<script>document" not in page and "</script><script>" not in page.split('id="trajectory-data">')[1]


def test_viewer_is_written_beside_the_report(built: Path) -> None:
    page = (built / "report" / "trajectories.html").read_text(encoding="utf-8")
    assert "survival scripted &lt;b&gt;scenario&lt;/b&gt;" in page
    assert not re.search(r"<(link|img|iframe)\b|src=\"http|href=\"http", page.split("<script", 1)[0])


# ---------------------------------------------------------------- headless Chromium
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]


def _dump(page: Path, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)


def _console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line]


@browser
def test_viewer_opens_without_console_error_and_shows_the_losses(built: Path, tmp_path: Path) -> None:
    done = _dump(built / "report" / "trajectories.html", tmp_path / "profile")
    dom = done.stdout
    assert 'data-ready="true"' in dom, done.stderr[-2000:]
    assert _console_errors(done.stderr) == []
    first = dom.split('id="row-view"', 1)[1]
    assert "a-r1-j" in first                                            # first row, sorted by id
    fold2 = first.split('data-fold="2"', 1)[1].split('data-fold="3"', 1)[0]
    assert re.search(r'data-status="lost"[^>]*>LOST: billing gateway port<', fold2)
    fold3 = first.split('data-fold="3"', 1)[1].split('data-fold="4"', 1)[0]
    assert "clipped at the carry cap" in fold3
    assert re.search(r'data-status="lost"[^>]*>LOST: telemetry relay port<', fold3)
    assert "<mark>" in first and "did not parse" in first
    assert first.count('class="fail"') == 14                            # j recalls nothing


@browser
def test_viewer_shows_a_script_carrier_as_text(built: Path, tmp_path: Path) -> None:
    # a-r1-m carries XSS; open the page with that row chosen by the row filter (client-side)
    page = built / "report" / "trajectories.html"
    probe = page.with_name("_xss_probe.html")
    text = page.read_text(encoding="utf-8").replace(
        "refresh();\n  document.body", "filt.value = 'a-r1-m'; refresh();\n  document.body")
    probe.write_text(text, encoding="utf-8")
    try:
        done = _dump(probe, tmp_path / "profile")
    finally:
        probe.unlink()
    dom = done.stdout
    assert 'data-ready="true"' in dom and "a-r1-m" in dom
    assert not re.search(r"<body[^>]*data-xss", dom)                    # neither payload ran
    assert "<img" not in dom and "<b>bold</b>" not in dom
    assert "&lt;/script&gt;&lt;script&gt;document.body.setAttribute" in dom   # shown as text
    assert XSS.split(">", 1)[0].replace("<", "&lt;") in dom
    assert _console_errors(done.stderr) == []


def test_a_ten_megabyte_carrier_is_graded_in_linear_time() -> None:
    import time

    from analysis.estimators.fact_timeline import fact_timeline

    def run(size: int) -> float:
        carrier = ("log line; " * (size // 10))[:size] + " 41432 "
        folds = pl.DataFrame({"row_id": ["r"], "fold": [0], "chunks": [[0]], "carrier": [carrier],
                              "parse_ok": [True], "clipped": [False]})
        facts = pl.DataFrame({"row_id": ["r", "r"], "check": ["port", "zone"], "value": ["41432", "basalt.lan"],
                              "value_class": ["port", "dns_zone"], "chunk": [0, 0], "case_sensitive": [True, True]})
        t0 = time.perf_counter()
        out = fact_timeline(folds, facts).facts
        wall = time.perf_counter() - t0
        assert out.get_column("captured").to_list() == [True, False]
        return wall

    small, big = run(1_000_000), run(10_000_000)
    assert big < 5.0 and big < 40 * max(small, 0.01)


@browser
def test_viewer_stays_usable_with_a_thousand_rows(tmp_path: Path) -> None:
    import sys
    from types import SimpleNamespace

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_survival import synthetic

    from analysis.estimators.fact_timeline import fact_timeline
    from analysis.estimators.survival_results import PackageSurvival

    data = synthetic(1000, 5, 3)
    checks = data.facts.select("row_id", "check", pl.col("value").alias("expected"), pl.lit(False).alias("passed"))
    rows = data.rows.with_columns(pl.lit("answer text").alias("answer"))
    folds = data.folds.with_columns(pl.lit("stop").alias("finish_reason"))
    package = SimpleNamespace(study=SimpleNamespace(name="synthetic 1,000 rows"), folds=folds, rows=rows,
                              checks=checks)
    page = tmp_path / "trajectories.html"
    html = trajectory_page(trajectory_data(package, PackageSurvival(fact_timeline(data.folds, data.facts), None, {}),
                                           "synthetic"))
    timing = ("refresh();\n  document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));"
              "\n  var t0 = performance.now(); filt.value = 'r999'; refresh();"
              "\n  document.body.setAttribute('data-filter-ms', String(Math.round(performance.now() - t0)));"
              "\n  document.body")
    page.write_text(html.replace("refresh();\n  document.body", timing), encoding="utf-8")
    assert page.stat().st_size < 15_000_000
    done = _dump(page, tmp_path / "profile")
    dom = done.stdout
    assert 'data-ready="true"' in dom, done.stderr[-2000:]
    load = int(re.search(r'data-load-ms="(\d+)"', dom).group(1))
    filt = int(re.search(r'data-filter-ms="(\d+)"', dom).group(1))
    print(f"1,000 rows: page {page.stat().st_size / 1e6:.1f} MB, loaded in {load} ms, filter+render {filt} ms")
    assert load < 5000 and filt < 1000
    assert "1000 rows; 1 match" in dom and "<h2>r999</h2>" in dom
    assert _console_errors(done.stderr) == []


@browser
def test_v2_pilot_viewer_opens_fast_and_shows_nothing_captured(tmp_path: Path) -> None:
    from analysis.viewer.trajectories import write_trajectory_pages

    pkg = load_package(REPO / "data" / "v2" / "pilot")
    (page,) = write_trajectory_pages(tmp_path, [("trajectories.html", pkg, package_survival(pkg, DEFAULT_PARAMS),
                                                 "v2 pilot")])
    assert page.stat().st_size < 200_000
    page.write_text(page.read_text(encoding="utf-8").replace(
        "refresh();\n  document.body",
        "refresh();\n  document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));"
        "\n  document.body"), encoding="utf-8")
    done = _dump(page, tmp_path / "profile")
    dom = done.stdout
    assert 'data-ready="true"' in dom and "12 rows; 1 match" in dom
    assert int(re.search(r'data-load-ms="(\d+)"', dom).group(1)) < 3000
    assert 'data-status="present"' not in dom and 'data-status="missed"' in dom   # SmolLM2 captures nothing
    assert _console_errors(done.stderr) == []
