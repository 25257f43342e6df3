"""`python generate.py plan` (issue 13): design.json keys, sims cap, undefined components, price tables, cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from prebuilt_support import Prebuilt

from analysis.cli import main
from analysis.evidence import load_package
from analysis.params import DEFAULT_PLAN_PARAMS
from analysis.plan.cost import (
    Price,
    PriceTableError,
    RowTokens,
    parse_price_table,
    repeat_cost,
    row_cost,
)
from analysis.plan.run import design_json, make_design, power_figure
from support.paths import HANDMADE, REPO

V1 = REPO / "data" / "v1"


def test_plan_on_v1_writes_design_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("endpoint,input_per_million,output_per_million\nacme,0.5,1.5\n", encoding="utf-8")
    out = tmp_path / "plan"
    rc = main(["plan", "--evidence", str(V1), "--out", str(out), "--configurations", "10,40",
               "--repeats", "2,8", "--effect", "0,0.15", "--sims", "300", "--seed", "11",
               "--price-table", str(prices)])
    assert rc == 0
    doc = json.loads((out / "design.json").read_text())
    assert {"variance_components", "grid", "grid_resampling", "alpha", "sims", "seed",
            "required_configurations", "optimal_repeats", "recommended", "cost"} <= set(doc)
    vc = doc["variance_components"]
    assert {"tau2", "sigma2_within", "icc", "missing_rate", "configurations", "pairs"} <= set(vc)
    assert vc["configurations"] == 20 and vc["pairs"] == 98 and set(vc["missing_rate"]) == {"j", "q"}
    assert len(doc["grid"]) == 8 and len(doc["grid_resampling"]) == 8
    assert set(doc["grid"][0]) >= {"configurations", "repeats", "effect", "power", "power_mcse",
                                   "power_closed_form", "halfwidth_median"}
    assert (doc["sims"], doc["seed"], doc["alpha"]) == (300, 11, 0.05)
    assert set(doc["required_configurations"]) == {"0", "0.15"}
    assert doc["required_configurations"]["0"]["2"]["closed_form"] is None  # power stays alpha at 0
    # one cost model: the price table prices tokens only (no --config-cost), so c_config = 0 and R* = 0
    assert doc["cost_model"]["c_config"] == 0 and doc["optimal_repeats"]["value"] == 0
    assert doc["optimal_repeats"]["by_cost_ratio"]["10"] > 0
    rec = doc["recommended"][0]
    assert rec["effect"] == 0.15 and rec["money"] > 0 and rec["rows"] == 2 * rec["configurations"] * rec["repeats"]
    for name in ("design_power.csv", "design_power.md", "design_power.png", "design_power.svg"):
        assert (out / name).is_file()
    printed = capsys.readouterr().out
    assert "tau2 = " in printed and "R* = " in printed and f"cost {rec['money']:.2f}" in printed


def test_sims_above_the_bound_are_capped_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "--evidence", str(V1), "--out", str(tmp_path), "--configurations", "3",
               "--repeats", "1", "--effect", "0", "--sims", str(DEFAULT_PLAN_PARAMS.sims_max + 1)])
    assert rc == 0
    assert f"capped at {DEFAULT_PLAN_PARAMS.sims_max}" in capsys.readouterr().err
    assert json.loads((tmp_path / "design.json").read_text())["sims"] == DEFAULT_PLAN_PARAMS.sims_max


def test_plan_needs_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--evidence", str(V1)]) == 2
    assert "--out" in capsys.readouterr().err


def test_one_configuration_gives_null_components_and_no_recommendation() -> None:
    pkg = load_package(HANDMADE)
    first = pkg.study.partition_runs[0].configuration
    one = SimpleNamespace(study=pkg.study, rows=pkg.rows.filter(pl.col("configuration") == first),
                          checks=pkg.checks)
    design = make_design(one, DEFAULT_PLAN_PARAMS.replace(sims=10))
    doc = design_json(design, {"path": "x"})
    assert doc["variance_components"]["tau2"] is None
    assert "fewer than two configurations" in doc["variance_components"]["reasons"]["tau2"]
    assert doc["grid"] == [] and "cannot simulate" in doc["reasons"]["grid"]
    assert "cannot recommend" in doc["reasons"]["recommended"] and doc["recommended"] == []
    assert doc["optimal_repeats"]["value"] is None and doc["optimal_repeats"]["reason"]


def test_power_figure_returns_a_figure_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    monkeypatch.chdir(tmp_path)
    design = make_design(load_package(V1), DEFAULT_PLAN_PARAMS.replace(sims=50, configurations=(4, 8),
                                                                        repeats=(2,), effects=(0.0, 0.1)))
    assert isinstance(power_figure(design), Figure)
    assert list(tmp_path.iterdir()) == []


def test_price_tables_parse_and_name_their_problems() -> None:
    toml = ('[[endpoint]]\nname = "a"\ninput_per_million = 0.1\noutput_per_million = 0.4\n'
            'output_tokens_per_second = 60\n')
    (p,) = parse_price_table(toml, ".toml")
    assert (p.endpoint, p.input_per_million, p.output_per_million, p.output_tokens_per_second) == ("a", 0.1, 0.4, 60.0)
    with pytest.raises(PriceTableError, match="lacks output_per_million"):
        parse_price_table('[[endpoint]]\nname = "a"\ninput_per_million = 1\n', ".toml")
    with pytest.raises(PriceTableError, match="header lacks"):
        parse_price_table("endpoint,input\nx,1\n", ".csv")
    with pytest.raises(PriceTableError, match="not a number"):
        parse_price_table("endpoint,input_per_million,output_per_million\nx,cheap,1\n", ".csv")
    with pytest.raises(PriceTableError, match="repeat"):
        parse_price_table("endpoint,input_per_million,output_per_million\nx,1,1\nx,2,2\n", ".csv")
    with pytest.raises(PriceTableError, match=r"\.toml or \.csv"):
        parse_price_table("", ".json")


def test_row_and_repeat_cost_by_hand() -> None:
    # 1,000,000 prompt tokens at 0.5/M + 100,000 output tokens at 2/M = 0.5 + 0.2 = 0.7;
    # seconds = 1e6 / 1000 + 1e5 / 50 = 1000 + 2000 = 3000.
    t = RowTokens("j", 6, 1_000_000, 100_000)
    price = Price("x", 0.5, 2.0, 1000.0, 50.0)
    assert row_cost(t, price) == pytest.approx({"money": 0.7, "seconds": 3000.0})
    rep = repeat_cost([t, RowTokens("q", 6, 1_000_000, 100_000)], [price])
    assert rep["mean_money"] == pytest.approx(1.4) and rep["mean_seconds"] == pytest.approx(6000.0)


def test_main_build_includes_designing_v2_when_out_holds_a_design(tmp_path: Path, prebuilt: Prebuilt) -> None:
    """OUT/design.json present -> 'Designing v2' section; every number in it comes from a filter."""
    import re

    from analysis.params import DEFAULT_PARAMS
    from analysis.report.numbers import unsourced_numbers
    from analysis.report.render import render_report

    out = prebuilt.copy(HANDMADE, tmp_path / "o")  # the build of HANDMADE into o, shared by the session (conftest)
    assert main(["--evidence", str(HANDMADE), "--out", str(out)]) == 0  # unchanged inputs: every stage skipped
    assert "Designing v2" not in (out / "report" / "index.qmd").read_text()
    assert main(["plan", "--evidence", str(V1), "--out", str(out), "--configurations", "10,20",
                 "--repeats", "2", "--effect", "0,0.1", "--sims", "200"]) == 0
    assert main(["--evidence", str(HANDMADE), "--out", str(out)]) == 0   # the design's key reruns the stages
    qmd = (out / "report" / "index.qmd").read_text()
    assert "## Designing v2" in qmd and "tau2 = " in qmd and "Not preregistered" in qmd
    assert "v1 **reconstruction**" in qmd
    # issue 19: the design's uncertainty, its one cost model and the checks beside the advice
    for words in ("profile-likelihood", "REML gives", "| reversed |", "One cost model", "the cheapest by this cost",
                  "not a confidence interval for recent models", "differ by more than",
                  "rejection rate with no effect",
                  # issue 30: simulated power with its MC error, the crossed range, the tau2 used and why
                  "(parametric, ± one Monte Carlo s.e.)", "every pairing crossed with tau2 by ANOVA",
                  "missing-row rates counted", "The tau2 used is ANOVA"):
        assert words in qmd, words
    results = json.loads((out / "results.json").read_text())
    assert results["design"]["sims"] == 200
    rendered = render_report(out, results, DEFAULT_PARAMS, {"path": "e", "kind": "handmade", "study_name": "s",
                                                            "rows": 1, "valid_rows": 1, "checks": 1,
                                                            "configurations": 1})
    body = re.sub(r"\{\{< include \S+ >\}\}", "", rendered.qmd[rendered.qmd.index("\n---\n", 4) + 5:])
    section = body[body.index("## Preregistration"):body.index("## How to rebuild")]
    assert unsourced_numbers(section, rendered.trace, {"2026"}) == []


def test_design_from_v1_is_labelled_a_reconstruction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--evidence", str(V1), "--out", str(tmp_path), "--configurations", "4",
                 "--repeats", "1", "--effect", "0", "--sims", "20"]) == 0
    assert "is a reconstruction fitted" in capsys.readouterr().err
    assert json.loads((tmp_path / "design.json").read_text())["evidence"]["kind"] == "v1"


def test_design_from_a_simulated_package_says_planted_truth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim = REPO / "data" / "v2" / "simulated-ladder"
    rc = main(["plan", "--evidence", str(sim), "--out", str(tmp_path), "--configurations", "4",
               "--repeats", "1", "--effect", "0", "--sims", "20"])
    assert rc == 0 and "simulated, planted truth" in capsys.readouterr().err
    assert json.loads((tmp_path / "design.json").read_text())["evidence"]["kind"] == "simulation"
    assert "simulated, planted truth" in (tmp_path / "design.md").read_text().split("## ")[0]  # at the top


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def _generate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "generate.py"), *args], cwd=REPO, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


def test_hostile_design_json_and_stamp_are_ignored_not_a_traceback(tmp_path: Path) -> None:
    from analysis.pipeline import _read_stamp
    from analysis.plan.report_blocks import design_block

    (tmp_path / "design.json").write_text('{"version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / ".build-stamp.json").symlink_to("/dev/zero")
    assert design_block(tmp_path) is None and _read_stamp(tmp_path) == {}


# ------------------------------------------------------------------ plan arguments

@pytest.mark.parametrize("args", [["--seed", "-1"], ["--cost-ratio", "inf"], ["--cost-ratio", "nan"],
                                  ["--cost-ratio", "1e308"], ["--configurations", str(10**12)],
                                  ["--sims", "0"], ["--alpha", "1.5"], ["--repeats", "0"]])
def test_plan_arguments_out_of_range_exit_2_with_a_message(tmp_path: Path, args: list[str]) -> None:
    r = _generate("plan", "--out", str(tmp_path / "o"), *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr and args[0] in r.stderr, r.stderr[-600:]
    assert not (tmp_path / "o").exists()


def test_a_price_table_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    from analysis.plan.cost import PriceTableError, load_price_table

    p = tmp_path / "prices.csv"
    p.write_bytes(b"endpoint,input_per_million,output_per_million\n\xff,1,2\n")
    with pytest.raises(PriceTableError, match="not UTF-8"):
        load_price_table(p)
    p = tmp_path / "prices.toml"
    p.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(PriceTableError, match="nested deeper"):
        load_price_table(p)

