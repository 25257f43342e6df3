"""Sealed preregistration (issue 13): plan.toml -> plan.lock, runner sweep --plan PLAN_DIR, report deviations."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

from analysis.evidence import EvidenceError, load_package, write_lock
from analysis.params import DEFAULT_PARAMS
from analysis.runner.cli import main as runner_main
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.prereg import (
    PlanDigestMismatch,
    PlanError,
    arms_digest,
    check_plan,
    fixture_digest,
    load_plan,
    params_digest,
    read_plan_lock,
    seal_plan,
)
from evidence_support import copy_handmade
from support.paths import REPO
from support.scripted_server import MemorizingModel, ScriptedServer
from support.sweep_args import sweep_args as _sweep


def plan_text(*, arms: str = '["j", "q"]', repeats: int = 1, fixture: str = "small", extra: str = "",
              digests: dict[str, str] | None = None, targets: str = "") -> str:
    d = digests or {"fixture": fixture_digest(fixture), "arms": arms_digest(["j", "q"]),
                    "params": params_digest(DEFAULT_PARAMS)}
    return f"""
[plan]
estimand = "equal-configuration mean of paired q-j effects on the primary scenario"
control = "j"
treatment = "q"
scenario = "S5"
arms = {arms}
recency_cutoff = 2026-01-28
configurations = 2
repeats = {repeats}
alpha = 0.05
fixture = "{fixture}"
{extra}
[digests]
fixture = "{d['fixture']}"
arms = "{d['arms']}"
params = "{d['params']}"
{targets}"""


def write_plan(tmp: Path, text: str) -> Path:
    d = tmp / "plan"
    d.mkdir(exist_ok=True)
    (d / "plan.toml").write_text(text, encoding="utf-8")
    return d


def test_missing_keys_are_named(tmp_path: Path) -> None:
    d = write_plan(tmp_path, plan_text().replace("repeats = 1\n", "").replace('scenario = "S5"\n', ""))
    with pytest.raises(PlanError, match=r"missing key.*scenario.*repeats"):
        load_plan(d)


def test_unknown_arm_is_named(tmp_path: Path) -> None:
    d = write_plan(tmp_path, plan_text(arms='["j", "q", "zz"]'))
    with pytest.raises(PlanError, match=r"unknown arm code.*zz"):
        load_plan(d)


def test_missing_digests_table_says_how_to_get_them(tmp_path: Path) -> None:
    d = write_plan(tmp_path, plan_text().split("[digests]")[0])
    with pytest.raises(PlanError, match=r"\[digests\].*plan check"):
        load_plan(d)


def test_seal_writes_lock_and_detects_later_edits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.cli import main

    d = write_plan(tmp_path, plan_text())
    assert main(["plan", "seal", str(d)]) == 0
    out = capsys.readouterr().out
    lock = json.loads((d / "plan.lock").read_text())
    assert lock["plan_digest"] in out and "publish this digest elsewhere" in out
    assert set(lock) >= {"plan_digest", "fixture_digest", "arms_digest", "params_digest", "code_digest", "sealed_at"}
    assert lock["sealed_at"].endswith("Z")
    assert check_plan(d).intact
    assert main(["plan", "seal", str(d)]) == 1                      # never resealed
    assert "never resealed" in capsys.readouterr().err
    (d / "plan.toml").write_text(plan_text(repeats=3), encoding="utf-8")
    status = check_plan(d)
    assert not status.intact and "changed after sealing" in " ".join(status.problems)
    assert main(["plan", "check", str(d)]) == 1


def test_seal_refuses_digests_that_do_not_match(tmp_path: Path) -> None:
    wrong = {"fixture": "0" * 64, "arms": arms_digest(["j", "q"]), "params": params_digest(DEFAULT_PARAMS)}
    d = write_plan(tmp_path, plan_text(digests=wrong))
    with pytest.raises(PlanDigestMismatch, match=r"fixture: plan 0{64} vs current [0-9a-f]{64}"):
        seal_plan(d)


def _sweep_args(server: ScriptedServer, plan: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--plan", str(plan), "--out", str(out), "--no-probe", "--structured-mode", "json_schema",
            "--api-key-env", "", "--quiet", "--concurrency", "2", *extra]


def _targets(url: str) -> str:
    return "".join(f"""
[[configurations]]
base_url = "{url}"
model = "scripted/model-1"
key = "scripted/{name}"
family = "scripted"
published = 2026-03-01
""" for name in ("one", "two"))


def test_sweep_refuses_a_different_fixture_with_both_digests(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv:
        d = write_plan(tmp_path, plan_text(targets=_targets(srv.base_url)))
        seal_plan(d)
        rc = runner_main(_sweep_args(srv, d, tmp_path / "o", "--fixture", "small-s1"))
    err = capsys.readouterr().err
    assert rc == 2
    assert f"plan {fx.digest}" in err and f"this sweep {fixture_digest('small-s1')}" in err
    assert not (tmp_path / "o" / "ledger.jsonl").exists()


def test_unsealed_plan_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_plan(tmp_path, plan_text())
    assert runner_main(["sweep", "--plan", str(d), "--out", str(tmp_path / "o"), "--base-url",
                        "http://127.0.0.1:9/v1", "--model", "m", "--published", "2026-03-01", "--quiet"]) == 2
    assert "not sealed" in capsys.readouterr().err


def test_sealed_plan_round_trips_into_a_report_with_a_deviation(tmp_path: Path) -> None:
    """Seal -> sweep (scripted server; --repeats 2 against the plan's 1: a deliberate deviation) ->
    evidence package -> generate.py report that states the plan and lists the deviation."""
    from analysis.cli import main

    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv:
        d = write_plan(tmp_path, plan_text(targets=_targets(srv.base_url)))
        lock = seal_plan(d)
        out = tmp_path / "sweep"
        assert runner_main(_sweep_args(srv, d, out, "--repeats", "2")) == 0
    records = [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines() if x.strip()]
    assert records and all(r.get("plan_digest") == lock["plan_digest"] for r in records)
    study = tomllib.loads((out / "evidence" / "study.toml").read_text())
    assert study["preregistration"]["plan_digest"] == lock["plan_digest"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the [preregistration] table is a known extension: no warning
        pkg = load_package(out / "evidence")
    assert "preregistration.json" in pkg.digests  # pinned by the package's lock
    report = tmp_path / "report"
    assert main(["--evidence", str(out / "evidence"), "--out", str(report)]) == 0
    res = json.loads((report / "results.json").read_text())["preregistration"]
    assert res["present"] and res["intact"] and res["sealed_before_first_record"]
    devs = {x["what"]: x for x in res["deviations"]}
    assert devs["repeats of scripted/one"]["planned"] == 1 and devs["repeats of scripted/one"]["actual"] == 2
    assert "configurations" not in devs and "recency cutoff" not in devs
    qmd = (report / "report" / "index.qmd").read_text()
    assert "The plan is present and intact" in qmd and lock["plan_digest"] in qmd
    assert "Deviations from the plan" in qmd and "| repeats of scripted/one | 1 | 2 |" in qmd
    assert "published elsewhere before the run" in qmd


def test_unplanned_package_says_not_preregistered() -> None:
    from analysis.plan.report_blocks import preregistration_block

    pkg = load_package(REPO / "data" / "v1")
    block = preregistration_block(pkg, DEFAULT_PARAMS, 20)
    assert block["present"] is False and "no sealed plan" in block["statement"]


def test_check_prints_current_digests_for_an_unfinished_plan(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.cli import main

    d = write_plan(tmp_path, plan_text().split("[digests]")[0])
    assert main(["plan", "check", str(d)]) == 1
    out = capsys.readouterr().out
    assert f"current fixture digest: {fixture_digest('small')}" in out
    assert f"current arms digest: {arms_digest(['j', 'q'])}" in out and "problem:" in out


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def _generate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "generate.py"), *args], cwd=REPO, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------ a sweep against a scripted server



# ------------------------------------------------------------------ plan files

def _plan_dir(tmp_path: Path, text: str) -> Path:
    return write_plan(tmp_path, plan_text() if text == "" else text)


# ------------------------------------------------------------------ only locked names are read

@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.json", "preregistration.json"])
def test_a_preregistration_file_the_lock_does_not_pin_is_refused_at_verify(tmp_path: Path, name: str) -> None:
    pkg = copy_handmade(tmp_path / "pkg")
    (tmp_path / "outside.json").write_text("{}")
    with (pkg / "study.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'\n[preregistration]\nfile = "{name}"\nplan_digest = "{"0" * 64}"\n')
    write_lock(pkg)
    with pytest.raises(EvidenceError) as info:
        load_package(pkg)
    assert "preregistration.file" in str(info.value) and "not a file the provenance lock pins" in str(info.value)


def test_seal_refuses_a_symlinked_plan_lock_even_dangling(tmp_path: Path) -> None:
    d = _plan_dir(tmp_path, "")
    (d / "plan.lock").symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(PlanError, match="symbolic link"):
        seal_plan(d)
    assert not (tmp_path / "elsewhere.lock").exists()


@pytest.mark.parametrize("sealed_at", ["whenever", "2999-01-01T00:00:00.000000Z", "2026-01-01T00:00:00+02:00"])
def test_check_validates_sealed_at_as_a_past_utc_time(tmp_path: Path, sealed_at: str) -> None:
    d = _plan_dir(tmp_path, "")
    lock = seal_plan(d)
    (d / "plan.lock").write_text(json.dumps({**lock, "sealed_at": sealed_at}))
    status = check_plan(d)
    assert not status.intact and "sealed_at" in " ".join(status.problems)
    good = read_plan_lock(json.dumps(lock), "plan.lock", now=dt.datetime.now(dt.UTC))
    assert good["sealed_at"] == lock["sealed_at"]


@pytest.mark.parametrize(("old", "new", "needle"), [
    ("repeats = 1", "repeats = 1000000000000", "the runner runs at most"),
    ("configurations = 2", f"configurations = {2**70}", "64-bit"),
])
def test_seal_refuses_what_the_runner_would_refuse(tmp_path: Path, old: str, new: str, needle: str) -> None:
    from test_plan_prereg import plan_text
    d = _plan_dir(tmp_path, plan_text().replace(old, new))
    with pytest.raises(PlanError, match=needle):
        seal_plan(d)
    assert not (d / "plan.lock").exists()


def test_the_runner_refuses_a_seed_toml_cannot_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = runner_main(_sweep("http://127.0.0.1:9/v1", tmp_path / "o", "--seed", str(2**70)))
    assert rc == 2 and "--seed" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["fifo", "zero", "deep", "keys"])
def test_hostile_plan_toml_is_one_line_exit_1(tmp_path: Path, what: str) -> None:
    d = tmp_path / "plan"
    d.mkdir()
    if what == "fifo":
        os.mkfifo(d / "plan.toml")
    elif what == "zero":
        (d / "plan.toml").symlink_to("/dev/zero")
    elif what == "deep":
        (d / "plan.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000)
    else:
        (d / "plan.toml").write_text("[" + ".".join(["a"] * 100_000) + "]\n")
    for sub in ("seal", "check"):
        r = _generate("plan", sub, str(d))
        assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") <= 3, r.stderr[-800:]


@pytest.mark.parametrize(("what", "needle"), [("deep", "nested deeper"), ("fifo", "FIFO")])
def test_a_hostile_runner_plan_toml_is_a_named_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     what: str, needle: str) -> None:
    plan = tmp_path / "targets.toml"
    if what == "fifo":
        os.mkfifo(plan)
    else:
        plan.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    rc = runner_main(["sweep", "--plan", str(plan), "--out", str(tmp_path / "o"), "--no-probe", "--api-key-env", "",
                      "--structured-mode", "json_schema", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err

