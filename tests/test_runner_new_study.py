"""A first run gives a report with something in it (issue 15).

The embedded subcommand's own defaults (arms, repeats, temperature, seed per repeat, the derived
recency window), run against the scripted OpenAI-compatible server instead of llama.cpp with the
SmolLM2 publication date, must: say before the run that the configuration is outside the window,
record the rule with the cutoff in study.toml, send a different seed per repeat shared by both
arms, and give a report whose out-of-window table carries the paired effect.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import tomllib
from pathlib import Path

import pytest

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from analysis.runner.arguments import build_runner_parser
from analysis.runner.cli import SMOLLM2_PUBLISHED, main
from analysis.runner.preflight import default_cutoff, months_before, notices
from support.scripted_server import MemorizingModel, ScriptedServer


def test_six_months_before_clamps_the_day() -> None:
    # hand-derived: the paper's study date 2026-07-28 gives its cutoff 2026-01-28
    assert default_cutoff(dt.date(2026, 7, 28)) == dt.date(2026, 1, 28)
    assert months_before(dt.date(2026, 8, 31), 6) == dt.date(2026, 2, 28)  # no 31 February
    assert months_before(dt.date(2024, 8, 30), 6) == dt.date(2024, 2, 29)  # leap year
    assert months_before(dt.date(2026, 3, 15), 6) == dt.date(2025, 9, 15)  # across a year


def test_pre_run_notices_name_what_empties_the_panel_or_copies_repeats() -> None:
    rule = {"recency_cutoff_source": "derived", "recency_run_date": dt.date(2026, 12, 2)}
    lines = notices([("old/m", dt.date(2024, 11, 1)), ("new/m", dt.date(2026, 7, 1))], dt.date(2026, 6, 2), rule,
                    temperature=0.0, repeats=4, seed=0, seed_per_repeat=False)
    assert len(lines) == 2
    assert "old/m" in lines[0] and "2024-11-01" in lines[0] and "2026-06-02" in lines[0]
    assert "--recency-cutoff 2024-11-01" in lines[0]
    assert "temperature 0" in lines[1] and "identical" not in lines[0]
    same_seed = notices([], dt.date(2026, 6, 2), rule, temperature=0.7, repeats=2, seed=3, seed_per_repeat=False)
    assert len(same_seed) == 1 and "--seed-per-repeat" in same_seed[0]
    assert notices([], dt.date(2026, 6, 2), rule, temperature=0.7, repeats=2, seed=3, seed_per_repeat=True) == []
    assert notices([], dt.date(2026, 6, 2), rule, temperature=0.0, repeats=1, seed=3, seed_per_repeat=False) == []


def test_embedded_defaults_make_repeats_informative() -> None:
    args = build_runner_parser().parse_args(["embedded", "--out", "x"])
    assert args.temperature > 0 and args.seed_per_repeat and args.repeats > 1
    assert set(args.arms.split(",")) == {args.control, args.treatment}
    assert args.recency_cutoff is None  # derived from the run date, not the v1 constant
    sweep = build_runner_parser().parse_args(["sweep", "--out", "x"])
    assert sweep.temperature > 0 and sweep.seed_per_repeat and sweep.repeats > 1  # issue 33: no own warning


@pytest.fixture(scope="module")
def embedded_like(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[dict]]:
    """A sweep with the embedded defaults on the scripted server; returns (out, stderr, request bodies)."""
    from analysis.runner.named_fixtures import load_fixture_arg

    d = build_runner_parser().parse_args(["embedded", "--out", "x"])
    out = tmp_path_factory.mktemp("e") / "run"
    fixture = load_fixture_arg(d.fixture)
    labels = [p.label for p in fixture.graded]
    # j's folds lose some facts and q's keep them: a non-zero paired effect the report must show
    model = MemorizingModel(fixture, forget=labels[:3])
    plain = MemorizingModel(fixture)

    def responder(body: dict, index: int):  # type: ignore[no-untyped-def]
        rf = body.get("response_format") or {}
        schema = rf.get("json_schema", {}).get("schema") or rf.get("schema") or {}
        one_field = len(schema.get("properties", {})) == 1
        return (model if one_field else plain)(body, index)

    import contextlib
    import io

    err = io.StringIO()
    with ScriptedServer(responder, model="smollm2-135m-instruct") as srv, contextlib.redirect_stderr(err):
        rc = main(["sweep", "--base-url", srv.base_url, "--model", "smollm2-135m-instruct", "--api-key-env", "",
                   "--published", SMOLLM2_PUBLISHED.isoformat(), "--family", "smollm2", "--arms", d.arms,
                   "--repeats", str(d.repeats), "--temperature", str(d.temperature), "--seed-per-repeat",
                   "--concurrency", "2", "--quiet", "--out", str(out), "--study-name", "first run"])
        bodies = list(srv.requests)
    assert rc == 0, err.getvalue()[-2000:]
    return out, err.getvalue(), bodies


def test_pre_run_note_names_the_configuration_its_date_the_cutoff_and_the_fix(embedded_like) -> None:
    _, err, _ = embedded_like
    cutoff = default_cutoff(dt.datetime.now(dt.UTC).date())
    note = [x for x in err.splitlines() if x.startswith("note:")]
    assert len(note) == 1, err
    assert "smollm2-135m-instruct" in note[0] and "2024-11-01" in note[0] and str(cutoff) in note[0]
    assert "--recency-cutoff 2024-11-01" in note[0]
    assert "warning" not in err  # temperature 0.7 with a seed per repeat: nothing to warn about


def test_study_toml_records_the_rule_with_the_cutoff(embedded_like) -> None:
    out, _, _ = embedded_like
    doc = tomllib.loads((out / "evidence" / "study.toml").read_text())
    run_date = doc["runner"]["recency_run_date"]
    assert doc["study"]["recency_cutoff"] == default_cutoff(run_date) != dt.date(2026, 1, 28)
    assert doc["runner"]["recency_cutoff_source"] == "derived"
    assert "six months" in doc["runner"]["recency_rule"]
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["recency"]["cutoff"] == doc["study"]["recency_cutoff"].isoformat()


def test_repeats_get_their_own_seed_shared_by_both_arms(embedded_like) -> None:
    from analysis.runner.probe import PLAIN_MESSAGES, PROBE_MESSAGES

    _, _, bodies = embedded_like
    bodies = [b for b in bodies if b["messages"] not in (PLAIN_MESSAGES, PROBE_MESSAGES)]  # the sweep's own
    seeds = {b.get("seed") for b in bodies}
    assert len(seeds) == 2 and None not in seeds  # two repeat blocks, two seeds, both arms share them
    assert {b["temperature"] for b in bodies} == {0.7}


def test_the_report_shows_the_paired_effect_in_the_out_of_window_table(embedded_like, tmp_path: Path) -> None:
    out, _, _ = embedded_like
    build(out / "evidence", tmp_path / "report", DEFAULT_PARAMS, progress=None)
    with (tmp_path / "report" / "tables" / "t3_out_of_window.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 and rows[0]["configuration"] == "smollm2-135m-instruct"
    assert rows[0]["published"] == "2024-11-01" and rows[0]["pairs"] == "2"
    # hand-derived: j's folds forget 3 of the 14 graded facts, q's keep all: 3/14 in both pairs
    assert float(rows[0]["effect"]) == pytest.approx(3 / 14)
    assert float(rows[0]["control_mean"]) == pytest.approx(11 / 14) and float(rows[0]["treatment_mean"]) == 1.0
    md = (tmp_path / "report" / "tables" / "t3_out_of_window.md").read_text(encoding="utf-8")
    assert "+0.214" in md
    panel = (tmp_path / "report" / "tables" / "t3_panel.csv").read_text(encoding="utf-8").splitlines()
    assert len(panel) == 1  # the panel itself is empty: header only
    qmd = (tmp_path / "report" / "report" / "index.qmd").read_text(encoding="utf-8")
    assert "outside the primary panel" in qmd and "--recency-cutoff" in qmd


def test_an_explicit_cutoff_puts_the_run_in_the_panel(tmp_path: Path) -> None:
    from analysis.evidence import load_package
    from support.fault_proxy import EchoUpstream

    with EchoUpstream() as up:
        rc = main(["sweep", "--base-url", up.url + "/v1", "--model", "m", "--api-key-env", "", "--published",
                   "2024-11-01", "--arms", "j,q", "--repeats", "1", "--quiet", "--no-probe", "--structured-mode",
                   "json_schema", "--recency-cutoff", "2024-11-01", "--out", str(tmp_path / "o")])
    assert rc == 0
    pkg = load_package(tmp_path / "o" / "evidence")
    assert pkg.study.recency_cutoff == dt.date(2024, 11, 1)
    runner = tomllib.loads((tmp_path / "o" / "evidence" / "study.toml").read_text())["runner"]
    assert runner["recency_cutoff_source"] == "argument"
