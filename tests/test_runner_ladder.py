"""The load ladder (issue 24): committed rung fixtures, one factor at a time, rungs in every row.

A sweep over two rungs runs against the scripted loopback model with a carrier of limited
capacity (a fold keeps at most three graded values), so the heavier rung loses values: the
package verifies, declares its ladder in study.toml, names the rung of every row, and a package
whose rows carry a missing or undeclared rung is refused at verify with a named error.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import io
import json
import tomllib
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from analysis.evidence import ConsistencyError, load_package, write_lock
from analysis.evidence.schema import extra_column
from analysis.runner.cli import main as runner_main
from analysis.runner.fixture import build_fixture, load_fixture
from analysis.runner.graders import RECALL_SYSTEM_PROMPT
from analysis.runner.ladder import (
    AXES,
    BASE,
    EASY_AXES,
    EASY_BASE,
    FAMILIES,
    LADDER_DIR,
    LADDER_SPECS,
    LadderError,
    base_for,
    family,
    parse_rungs,
    rung_by_name,
    rung_fixture,
    rungs,
)
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

LIGHT, HEAVY = "g1-d0-c900-f2", "g7-d0-c900-f2"


def test_committed_ladder_matches_the_generator_and_its_lock() -> None:
    lock = json.loads((LADDER_DIR / "provenance.lock").read_text())
    assert sorted(lock["files"]) == sorted(f"{s.name}.json" for s in LADDER_SPECS)
    for spec in LADDER_SPECS:
        path = LADDER_DIR / f"{spec.name}.json"
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == lock["files"][path.name]
        assert data.decode("utf-8") == build_fixture(spec).to_json(), f"{path.name} is stale; regenerate it"
        assert load_fixture(path).to_json() == data.decode("utf-8")


def test_every_rung_changes_one_load_factor_of_its_familys_base_and_plants_what_it_says() -> None:
    # each family: its base once, every other level once; the families share no rung
    assert len(rungs()) == sum(1 + sum(len(v) - 1 for v in axes.values()) for _, axes in FAMILIES)
    assert [b for b, _ in FAMILIES] == [BASE, EASY_BASE] and rungs()[0] == BASE
    for r in rungs():
        diffs = [[k for k, v in dataclasses.asdict(r).items() if v != dataclasses.asdict(b)[k]]
                 for b, axes in FAMILIES if r in family(b, axes)]
        assert diffs and all(len(d) <= 1 for d in diffs), (r.name, diffs)
        fx = rung_fixture(r.name)
        assert fx.spec.rung == fx.spec.scenario == r.name
        assert len(fx.chunks) == r.folds and len(fx.distractors) == r.distractors
        per_chunk = [sum(p.chunk == c for p in fx.graded) for c in range(r.folds)]
        assert per_chunk == [r.graded_per_chunk] * r.folds
        # chunk sizes within 5% of the target (frozen heuristic), or 12 tokens: a ~100-token chunk ends on
        # a whole log line, and its last line moves it by about that much
        assert all(abs(c.tokens_est - r.chunk_tokens) <= max(0.05 * r.chunk_tokens, 12) for c in fx.chunks), r.name
        text = fx.full_text
        assert all(text.count(p.value) == 1 for p in (*fx.graded, *fx.distractors))
    # the heaviest distractor rung spans 0 -> 36, the chunk axis ~150 -> 900 tokens
    assert min(AXES["distractors"]) == 0 and max(AXES["distractors"]) == 36
    assert max(AXES["chunk_tokens"]) == 900


def test_the_easy_family_starts_at_one_port_per_100_token_chunk() -> None:
    # issue 24's pilot: SmolLM2-135M copies a port from a ~100-token chunk, not a path from 900 tokens
    easy = rung_fixture(EASY_BASE.name)
    assert EASY_BASE.name == "g1-d0-c100-f1" and [(p.value_class, p.chunk) for p in easy.graded] == [("port", 0)]
    assert [r.name for r in family(EASY_BASE, EASY_AXES)] == [
        "g1-d0-c100-f1", "g1-d0-c100-f2", "g1-d0-c100-f3", "g1-d0-c300-f1", "g1-d0-c900-f1"]
    # the folds axis adds one value per fold: ports first, then the path
    assert [p.value_class for p in rung_fixture("g1-d0-c100-f3").graded] == ["port", "port", "path"]
    assert base_for(["g1-d0-c100-f1", "g1-d0-c100-f3"]) == EASY_BASE
    assert base_for([LIGHT, HEAVY]) == BASE
    assert base_for(["g1-d0-c100-f1", HEAVY]) == BASE  # no family holds both: the main base


def test_a_rung_plants_the_full_fixtures_values() -> None:
    full = load_fixture(LADDER_DIR.parent / "s5-small.json")
    fx = rung_fixture(HEAVY)
    assert [p.value for p in fx.graded] == [p.value for p in full.graded]  # same seed, same draw


def test_unknown_rung_lists_the_rungs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(LadderError, match=r"unknown rung 'g9'.*g2-d0-c900-f2, g1-d0-c900-f2"):
        rung_by_name("g9")
    with pytest.raises(LadderError, match="twice"):
        parse_rungs(f"{LIGHT},{LIGHT}")
    assert parse_rungs("all") == tuple(r.name for r in rungs())
    rc = runner_main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published",
                      "2026-03-01", "--ladder", "nope", "--out", "/tmp/never-written-ladder", "--quiet",
                      "--api-key-env", ""])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown rung 'nope'" in err and HEAVY in err
    assert not Path("/tmp/never-written-ladder").exists()


class LimitedModel(MemorizingModel):
    """The memorizing model with a carrier of three graded values: heavier rungs lose values."""

    def __init__(self, fixtures: list[Any]) -> None:
        super().__init__(fixtures[0])
        self.facts = list(dict.fromkeys(f for fx in fixtures for f in ((p.label or "", p.value) for p in fx.graded)))

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        user = body["messages"][-1]["content"]
        seen = [label for label, v in self.facts if v in user]
        self.forget = set(seen[3:])
        return super().__call__(body, index)


def _sweep(tmp_path: Path) -> Path:
    fixtures = [rung_fixture(LIGHT), rung_fixture(HEAVY)]
    out = tmp_path / "ladder"
    with ScriptedServer(LimitedModel(fixtures)) as srv:
        rc = runner_main(["sweep", "--base-url", srv.base_url, "--model", "scripted/model-1", "--published",
                          "2026-03-01", "--family", "scripted", "--ladder", f"{LIGHT},{HEAVY}", "--arms", "j,q",
                          "--repeats", "2", "--out", str(out), "--no-probe", "--structured-mode", "json_schema",
                          "--api-key-env", "", "--quiet", "--concurrency", "2", "--kind", "pilot",
                          "--study-name", "scripted ladder"])
    assert rc == 0
    return out / "evidence"


def test_a_ladder_sweep_records_the_rung_in_study_toml_and_every_row(tmp_path: Path) -> None:
    ev = _sweep(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # [ladder] is a known table: no warning
        pkg = load_package(ev)
    assert [r.name for r in pkg.study.ladder] == [LIGHT, HEAVY]
    assert pkg.study.kind == "pilot"  # --kind pilot: reportable beside other evidence
    runner = tomllib.loads((ev / "study.toml").read_text())["runner"]
    assert runner["command"].startswith("python -m analysis.runner sweep ") and f"--ladder {LIGHT},{HEAVY}" in \
        runner["command"] and isinstance(runner["recency_run_date"], dt.date)
    heavy = pkg.study.ladder[1]
    assert (heavy.graded_per_chunk, heavy.distractors, heavy.chunk_tokens, heavy.folds) == (7, 0, 900, 2)
    rows = pkg.rows
    assert rows.height == 8 and rows["valid"].all()
    assert (rows[extra_column("rung")] == rows["scenario"]).all()
    by = {r: rows.filter(pl.col("scenario") == r) for r in (LIGHT, HEAVY)}
    assert by[LIGHT]["checks_total"].unique().to_list() == [2]
    assert by[HEAVY]["checks_total"].unique().to_list() == [14]
    assert (by[LIGHT]["checks_passed"] == 2).all()  # two values fit a three-value carrier
    assert (by[HEAVY]["checks_passed"] <= 3).all()  # fourteen do not


def _rewrite_rows(ev: Path, change: Any) -> None:
    text = (ev / "rows.csv").read_text(encoding="utf-8")
    reader = list(csv.DictReader(io.StringIO(text)))
    change(reader)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(reader[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(reader)
    (ev / "rows.csv").write_text(buf.getvalue(), encoding="utf-8")
    names = json.loads((ev / "provenance.lock").read_text())["files"]
    write_lock(ev, [n for n in names if n not in ("study.toml", "rows.csv", "checks.csv")])


@pytest.mark.parametrize("change, needle", [
    (lambda rows: rows[1].update(rung=""), "no rung: a ladder package names the rung of every row"),
    (lambda rows: rows[2].update(rung="g3-d0-c900-f2"), "rung 'g3-d0-c900-f2' is not declared"),
    (lambda rows: [r.pop("rung") for r in rows], "rows.csv has no rung column"),
    (lambda rows: rows[0].update(rung=HEAVY if rows[0]["rung"] == LIGHT else LIGHT), "but the row's scenario"),
])
def test_missing_or_mixed_rungs_are_refused_at_verify(tmp_path: Path, change: Any, needle: str) -> None:
    ev = _sweep(tmp_path)
    _rewrite_rows(ev, change)
    with pytest.raises(ConsistencyError, match=needle):
        load_package(ev)


def test_fold_and_recall_budgets_cap_every_arm_alike_and_are_recorded(tmp_path: Path) -> None:
    """--fold-max-tokens caps j's and q's fold budget at the same N (arms.json says so), the recall
    turn gets --recall-max-tokens; both are in study.toml's [runner] and the easy base is the base."""
    easy = ["g1-d0-c100-f1", "g1-d0-c100-f3"]
    out = tmp_path / "capped"
    with ScriptedServer(LimitedModel([rung_fixture(n) for n in easy])) as srv:
        rc = runner_main(["sweep", "--base-url", srv.base_url, "--model", "scripted/model-1", "--published",
                          "2026-03-01", "--family", "scripted", "--ladder", ",".join(easy), "--arms", "j,q",
                          "--repeats", "1", "--out", str(out), "--no-probe", "--structured-mode", "json_schema",
                          "--api-key-env", "", "--quiet", "--fold-max-tokens", "64", "--recall-max-tokens", "32"])
        bodies = list(srv.requests)
    assert rc == 0
    recall = [b for b in bodies if b["messages"][0]["content"] == RECALL_SYSTEM_PROMPT]
    folds = [b for b in bodies if b not in recall]
    assert len(recall) == 4 and len(folds) == 2 * (1 + 3)  # two arms x (1 + 3 folds)
    assert {b["max_tokens"] for b in folds} == {64} and {b["max_tokens"] for b in recall} == {32}
    ev = out / "evidence"
    arms = json.loads((ev / "arms.json").read_text())
    assert {c: a["output_tokens"] for c, a in arms.items()} == {"j": 64, "q": 64}
    assert arms["q"]["schema"]["properties"].keys() >= {"identifiers_and_values", "open_work"}  # q is still q
    study = tomllib.loads((ev / "study.toml").read_text())
    runner = next(v for v in study["runner"].values() if isinstance(v, dict))
    assert (runner["fold_max_tokens"], runner["recall_max_tokens"]) == (64, 32)
    assert study["ladder"]["base"] == EASY_BASE.name
    # the study's scenario is the deepest rung (three folds), where survival across folds can be read
    assert study["study"]["scenario"] == "g1-d0-c100-f3" and study["ladder"]["rungs"] == easy
    load_package(ev)  # verifies


def test_a_budget_below_one_token_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = runner_main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published",
                      "2026-03-01", "--ladder", "g1-d0-c100-f1", "--out", str(tmp_path / "x"), "--quiet",
                      "--api-key-env", "", "--no-probe", "--structured-mode", "json_schema",
                      "--fold-max-tokens", "0"])
    assert rc == 2 and "must be positive token counts" in capsys.readouterr().err
