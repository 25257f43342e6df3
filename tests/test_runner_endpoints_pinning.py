"""Pinning and provenance: what a pinned sweep sends and records."""

from __future__ import annotations

import json
import tomllib
import warnings
from pathlib import Path

import pytest

from analysis.evidence import load_package
from analysis.evidence.schema import extra_column
from analysis.runner.cli import main
from analysis.runner.client import CallResult
from analysis.runner.pinning import Pin, _toml_value, audit_call, configuration_key
from analysis.runner.probe import _context_from
from analysis.safeio import SafeIOError
from support.fault_proxy import EchoUpstream


def _res(model: str | None, provider: str | None) -> CallResult:
    return CallResult("x", "stop", model, provider, None, None, True, 0.0, 0)


def test_audit_rules() -> None:
    pin = Pin("u", "acme/m", provider_order=("Alpha",), allow_fallbacks=False, quantization="bf16")
    assert audit_call(pin, _res("acme/m", "Alpha")) is None
    assert audit_call(pin, _res("acme/m", "alpha")) is None  # provider names compare case-insensitively
    assert "Beta" in audit_call(pin, _res("acme/m", "Beta"))
    assert "acme/m-fp4" in audit_call(pin, _res("acme/m-fp4", "Alpha"))
    assert audit_call(pin, _res("acme/m", None)) is None  # unverifiable, counted, not invalid
    fallback = Pin("u", "acme/m", provider_order=("Alpha", "Beta"), allow_fallbacks=True)
    assert audit_call(fallback, _res("acme/m", "Beta")) is None
    strict = Pin("u", "acme/m", provider_order=("Alpha", "Beta"), allow_fallbacks=False)
    assert audit_call(strict, _res("acme/m", "Beta")) is not None  # without fallbacks only the first serves
    assert configuration_key(pin) == "acme/m@Alpha@bf16"


def test_pinned_sweep_sends_the_pin_and_records_provenance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PIN_TEST_KEY", "sk-PLANTED-pin-test-000")
    with EchoUpstream(served_model="acme/m", provider="Alpha") as up:
        rc = main(["sweep", "--base-url", up.url + "/v1", "--model", "acme/m", "--published", "2026-03-01",
                   "--arms", "j,q", "--repeats", "1", "--out", str(tmp_path), "--provider-order", "Alpha",
                   "--allow-fallbacks", "false", "--quantization", "bf16", "--price", "0.10/0.30 USD per Mtok",
                   "--api-key-env", "PIN_TEST_KEY", "--quiet", "--seed", "7", "--temperature", "0",
                   "--no-seed-per-repeat"])
    assert rc == 0
    fold_bodies = [b for b in up.bodies if "response_format" in b and b["max_tokens"] > 50]
    assert fold_bodies and all(b["provider"] == {"order": ["Alpha"], "allow_fallbacks": False,
                                                   "quantizations": ["bf16"]} for b in fold_bodies)
    assert all(b["seed"] == 7 and b["temperature"] == 0.0 for b in up.bodies)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pkg = load_package(tmp_path / "evidence")
    assert set(pkg.study.configurations) == {"acme/m@Alpha@bf16"}
    conf = pkg.study.configurations["acme/m@Alpha@bf16"]
    assert conf.provider == "Alpha" and conf.quantization == "bf16"
    assert [(r.configuration, r.planned_repeats) for r in pkg.study.partition_runs] == [("acme/m@Alpha@bf16", 1)]
    study = tomllib.loads((tmp_path / "evidence" / "study.toml").read_text())
    runner = study["runner"]["acme/m@Alpha@bf16"]
    assert runner["provider_order"] == ["Alpha"] and runner["allow_fallbacks"] is False
    assert runner["price"] == "0.10/0.30 USD per Mtok" and runner["seed_sent"] is True
    manifest = json.loads((tmp_path / "evidence" / "run_manifest.json").read_text())
    conf_m = manifest["configurations"]["acme/m@Alpha@bf16"]
    assert "commit" in conf_m["git"] and conf_m["packages"]["openai"]  # commit is None outside a git checkout
    assert conf_m["pin"]["base_url"].startswith("http://127.0.0.1") and manifest["pin_violations"] == 0
    assert conf_m["probe"]["verdicts"]  # the probe's verdicts travel with the package
    assert "run_manifest.json" in pkg.digests  # locked with the package
    rows = pkg.rows
    assert rows[extra_column("providers")].to_list() == ["Alpha", "Alpha"]
    assert rows[extra_column("served_models")].to_list() == ["acme/m"] * 2
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert b"sk-PLANTED-pin-test-000" not in p.read_bytes()


def test_plan_sweeps_configurations_x_arms_x_repeats_into_one_package(tmp_path: Path) -> None:
    with EchoUpstream(provider="Alpha") as a, EchoUpstream() as b:
        plan = tmp_path / "plan.toml"
        plan.write_text(f"""
[[configurations]]
base_url = "{a.url}/v1"
model = "acme/one"
published = 2026-03-01
provider_order = ["Alpha"]
allow_fallbacks = false
quantization = "bf16"

[[configurations]]
base_url = "{b.url}/v1"
model = "beta/two"
family = "beta"
published = 2025-06-01
execution_group = "beta-run"
""", encoding="utf-8")
        rc = main(["sweep", "--plan", str(plan), "--arms", "j,q,m", "--repeats", "2", "--out", str(tmp_path / "o"),
                   "--quiet", "--concurrency", "4"])
    assert rc == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pkg = load_package(tmp_path / "o" / "evidence")
    assert set(pkg.study.configurations) == {"acme/one@Alpha@bf16", "beta/two"}
    assert {(r.configuration, r.execution_group) for r in pkg.study.partition_runs} == {
        ("acme/one@Alpha@bf16", "sweep-01-01"), ("beta/two", "beta-run")}
    rows = pkg.rows
    assert rows.height == 12 and rows["valid"].all()
    # each configuration's rows went to its own endpoint
    assert len(a.bodies) > 0 and {x["model"] for x in a.bodies} == {"acme/one"}
    assert {x["model"] for x in b.bodies} == {"beta/two"}
    assert pkg.study.configurations["beta/two"].family == "beta"


def test_seed_per_repeat_pairs_arms_and_separates_blocks(tmp_path: Path) -> None:
    with EchoUpstream() as up:
        rc = main(["sweep", "--base-url", up.url + "/v1", "--model", "m", "--published", "2026-03-01", "--arms", "j,q",
                   "--repeats", "2", "--out", str(tmp_path), "--quiet", "--api-key-env", "", "--seed", "5",
                   "--seed-per-repeat", "--no-probe", "--temperature", "0.7"])
    assert rc == 0
    from analysis.runner.ledger import read_records
    from analysis.runner.sweep import repeat_seed

    seeds: dict[tuple[int, str], set[int]] = {}
    for r in read_records(tmp_path / "ledger.jsonl"):
        if r["kind"] == "request":
            rep = int(r["slot"].split(":r")[-1].split(":")[0])
            seeds.setdefault((rep, r["slot"][-1]), set()).add(r["body"]["seed"])
            assert r["body"]["temperature"] == 0.7
    assert seeds[(1, "j")] == seeds[(1, "q")] == {repeat_seed(5, 1)}
    assert seeds[(2, "j")] == seeds[(2, "q")] == {repeat_seed(5, 2)} != seeds[(1, "j")]


def test_the_runner_never_writes_an_integer_toml_cannot_hold() -> None:
    assert _context_from({"context_length": 10**30}) is None  # not a context: unknown, never recorded
    assert _context_from({"context_length": 10**30, "max_model_len": 8192}) == 8192
    with pytest.raises(SafeIOError, match="64-bit"):
        _toml_value(10**30)
    assert _toml_value(4096) == "4096"

