"""A run's evidence package is accepted unchanged by the foundation loader and `generate.py verify`."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys

import polars as pl
import pytest

from analysis.evidence import Configuration, PartitionRun, Study, load_package, verify_package
from analysis.evidence.schema import extra_column
from analysis.runner.arms import load_arms
from analysis.runner.fixture import DEFAULT_SPECS, build_fixture
from analysis.runner.package import PackageError, RowMeta, row_record, write_package, write_records
from analysis.runner.protocol import RunSettings, run_trajectory
from support.paths import REPO
from support.scripted_server import MemorizingModel, OpenAIBackend, Reply, ScriptedServer

ARMS = load_arms()
S5 = build_fixture(DEFAULT_SPECS[2])

STUDY = Study(
    name="v2 scripted test",
    recency_cutoff=dt.date(2026, 1, 28),
    control="j",
    treatment="q",
    scenario="S5",
    configurations={
        "scripted/a": Configuration("scripted/a", "scripted", dt.date(2026, 3, 1), "loopback", "bf16"),
        "scripted/b": Configuration("scripted/b", "scripted", dt.date(2026, 4, 1), None, None),
    },
    partition_runs=(PartitionRun("scripted/a", "g1", 2), PartitionRun("scripted/b", "g2", 2)),
)


def _faults(plan):
    """plan: call ordinal within one trajectory -> Reply."""
    state = {"n": -1}

    def fault(body, index, purpose):
        state["n"] += 1
        return plan.get(state["n"])

    return fault


async def _sweep():
    results = []
    scenarios = [
        # (configuration, group, repeat, arm, position, fault plan)
        ("scripted/a", "g1", 1, "j", 1, {}),
        ("scripted/a", "g1", 1, "q", 2, {}),
        ("scripted/a", "g1", 2, "q", 1, {2: Reply(status=503)}),  # infrastructure, retried below
        ("scripted/a", "g1", 2, "q", 1, {}),
        ("scripted/a", "g1", 2, "j", 2, {1: Reply('{"summary": broken')}),  # parse failure, valid
        ("scripted/b", "g2", 1, "j", 1, {2: Reply("")}),  # lost fold -> catch-up, invalid
        ("scripted/b", "g2", 1, "q", 2, {}),
        ("scripted/b", "g2", 2, "m", 1, {}),
    ]
    for n, (conf, group, rep, arm, pos, plan) in enumerate(scenarios):
        with ScriptedServer(MemorizingModel(S5, faults=_faults(plan)), model=conf) as server:
            backend = OpenAIBackend(server.base_url, conf)
            result = await run_trajectory(backend, S5, ARMS[arm], RunSettings(seed=5))
            await backend.aclose()
        results.append((result, RowMeta(f"row-{n:02d}", conf, group, rep, pos)))
    return results


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    results = asyncio.run(_sweep())
    files = write_package(root, STUDY, results)
    return root, results, files


def test_loader_accepts_the_package_unchanged(package):
    root, _results, files = package
    assert {"rows.csv", "checks.csv", "study.toml", "folds.jsonl", "answers.jsonl", "arms.json"} <= set(files)
    pkg = load_package(root)
    verify_package(root)
    rows = pkg.rows.sort("row_id")
    assert rows.height == 8
    assert rows["valid"].to_list() == [True, True, False, True, True, False, True, True]
    assert rows["invalid_reason"].to_list() == [None, None, "infrastructure", None, None, "catchup", None, None]
    assert rows["checks_passed"].to_list()[2] is None and rows["answer"].to_list()[2] is None
    assert rows["checks_passed"].to_list()[5] == 14  # catch-up rows keep their outcome
    assert rows["parse_failures"].to_list()[4] == 1 and rows["position"].to_list()[:2] == [1, 2]
    assert rows["declared_chars"].to_list()[0] == 9600 and rows["declared_chars"].to_list()[7] is None
    assert rows.schema["repeat"] == pl.Int64 and rows.schema["valid"] == pl.Boolean
    assert rows[extra_column("fixture_digest")].unique().to_list() == [S5.digest]
    checks = pkg.checks
    assert checks.filter(pl.col("row_id") == "row-02").height == 0
    assert checks.height == 7 * 14
    assert extra_column("passed_presence") in checks.columns and checks.schema["in_carrier"] == pl.Boolean
    per_row = checks.group_by("row_id").agg(pl.col("passed").sum().alias("p")).sort("row_id")
    expected = rows.filter(pl.col("checks_passed").is_not_null()).select("row_id", "checks_passed").sort("row_id")
    assert per_row["p"].to_list() == expected["checks_passed"].to_list()


def test_generate_verify_accepts_it(package):
    root, _, _ = package
    proc = subprocess.run([sys.executable, "generate.py", "verify", str(root)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "8 rows (6 valid)" in proc.stdout


def test_fold_by_fold_carriers_and_full_answers_are_kept(package):
    root, results, _ = package
    folds = [json.loads(line) for line in (root / "folds.jsonl").read_text(encoding="utf-8").splitlines()]
    answers = [json.loads(line) for line in (root / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(folds) == sum(len(r.folds) for r, _ in results)
    first = [f for f in folds if f["row_id"] == "row-00"]
    assert [f["fold"] for f in first] == [0, 1, 2, 3, 4]
    assert first[-1]["carrier"] == results[0][0].final_carrier
    assert answers[0]["answer"] == results[0][0].answer and len(answers[0]["answer"]) > 400
    lock = json.loads((root / "provenance.lock").read_text())
    assert {"folds.jsonl", "answers.jsonl", "arms.json"} <= set(lock["files"])


def test_tampering_is_caught_by_the_lock(package, tmp_path):
    root, _, _ = package
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in root.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    (copy / "folds.jsonl").write_text("{}\n")
    with pytest.raises(Exception, match=r"folds\.jsonl"):
        load_package(copy)


def test_invariants_are_checked_before_writing(package, tmp_path):
    _, results, _ = package
    result, meta = results[0]
    row = row_record(result, meta)
    with pytest.raises(PackageError, match="duplicate row_id"):
        write_records(tmp_path, STUDY, [row, row], [])
    twin = {**row, "row_id": "other"}
    with pytest.raises(PackageError, match="more than one valid row"):
        write_records(tmp_path, STUDY, [row, twin], [])
    with pytest.raises(PackageError, match=r"checks\.csv does not match"):
        write_records(tmp_path, STUDY, [row], [])
    stranger = {**row, "configuration": "nowhere"}
    with pytest.raises(PackageError, match="missing from study"):
        write_records(tmp_path, STUDY, [stranger], [])


@pytest.mark.slow
def test_generate_analyses_it_unchanged(package, tmp_path):
    root, _, _ = package
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "generate.py", "--evidence", str(root), "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results  # the estimators ran on the runner's rows
