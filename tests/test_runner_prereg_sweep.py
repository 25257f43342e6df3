"""The runner's side of a sealed preregistration: a plan edited after sealing, digests, typed repeats,
the first ledger record's time, one-configuration plans (issue 21 planted a one-line fault for each).

The runner's side (analysis.runner.prereg, analysis.runner.prereg_sweep) is called directly, with the
runner's own argument parser; no endpoint is started. Each test names the one-line fault it catches
and was checked to fail with that fault planted by hand and to pass on the code as it is.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.evidence import Configuration, PartitionRun, Study
from analysis.params import DEFAULT_PARAMS, DEFAULT_PLAN_PARAMS, ParamsError
from analysis.runner.arguments import build_runner_parser
from analysis.runner.cli import main as runner_main
from analysis.runner.prereg import (
    PlanDigestMismatch,
    PlanError,
    arms_digest,
    fixture_digest,
    load_plan,
    params_digest,
    parse_plan,
    seal_plan,
)
from analysis.runner.prereg_sweep import PREREG_FILE, first_record_time, package_extras, prepare_sweep

SEALED = dt.datetime(2026, 2, 1, 11, 0, tzinfo=dt.UTC)


def plan_text(*, repeats: int = 1, configurations: int = 2, digests: dict[str, str] | None = None) -> str:
    d = digests or {"fixture": fixture_digest("small"), "arms": arms_digest(["j", "q"]),
                    "params": params_digest(DEFAULT_PARAMS)}
    return f"""[plan]
estimand = "equal-configuration mean of paired q-j effects on the primary scenario"
control = "j"
treatment = "q"
scenario = "S5"
arms = ["j", "q"]
recency_cutoff = 2026-01-28
configurations = {configurations}
repeats = {repeats}
alpha = 0.05
fixture = "small"

[digests]
fixture = "{d['fixture']}"
arms = "{d['arms']}"
params = "{d['params']}"
"""


def sealed_plan(tmp_path: Path, **kw) -> Path:
    d = tmp_path / "plan"
    d.mkdir(parents=True)
    (d / "plan.toml").write_text(plan_text(**kw), encoding="utf-8")
    seal_plan(d, now=SEALED)
    return d


def sweep_args(plan_dir: Path, *typed: str):
    """The runner's own parser over `sweep --plan PLAN_DIR --out X TYPED...`, and the argv prepare_sweep sees."""
    argv = ["sweep", "--plan", str(plan_dir), "--out", str(plan_dir.parent / "sweep"), *typed]
    return build_runner_parser().parse_args(argv), argv


# ------------------------------------------------------------------------- edited after sealing
def test_a_plan_edited_after_sealing_stops_the_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Plant: prepare_sweep's guard without `or not status.intact` -> a sealed plan whose plan.toml was changed
    # afterwards (repeats 1 -> 3) started the sweep with the changed plan.
    d = sealed_plan(tmp_path)
    args, argv = sweep_args(d)
    assert prepare_sweep(args, argv) is None and args.repeats == 1   # intact: the sweep may start
    (d / "plan.toml").write_text(plan_text(repeats=3), encoding="utf-8")
    args, argv = sweep_args(d)
    with pytest.raises(PlanError, match=r"not sealed and intact.*changed after sealing"):
        prepare_sweep(args, argv)
    # and through the runner's command line: exit 2, nothing written
    out = tmp_path / "o"
    assert runner_main(["sweep", "--plan", str(d), "--out", str(out), "--base-url", "http://127.0.0.1:9/v1",
                        "--model", "m", "--published", "2026-03-01", "--quiet"]) == 2
    assert "changed after sealing" in capsys.readouterr().err
    assert not (out / "ledger.jsonl").exists()


# ------------------------------------------------------------------------- params digest
def test_a_params_digest_mismatch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Plants: compare_digests over `REQUIRED_DIGESTS[:2]` (fixture and arms only), or prepare_sweep's
    # `actual["params"]` taken from the plan's own digest -> a sweep whose analysis Params differ from the
    # sealed ones started, and sealing accepted a plan naming the wrong params digest.
    wrong = {"fixture": fixture_digest("small"), "arms": arms_digest(["j", "q"]), "params": "0" * 64}
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "plan.toml").write_text(plan_text(digests=wrong), encoding="utf-8")
    with pytest.raises(PlanDigestMismatch, match=r"params: plan 0{64} vs current [0-9a-f]{64}"):
        seal_plan(bad)
    assert not (bad / "plan.lock").exists()
    # sealed with the right digest, then the analysis defaults change (an edited analysis/params.py): the
    # Params the sweep would analyse with no longer hash to the sealed digest
    d = sealed_plan(tmp_path)
    import analysis.params

    monkeypatch.setattr(analysis.params, "DEFAULT_PARAMS", DEFAULT_PARAMS.replace(bootstrap_resamples=999))
    sealed = params_digest(DEFAULT_PARAMS)
    now = params_digest(load_plan(d).params())
    assert now != sealed
    args, argv = sweep_args(d)
    with pytest.raises(PlanDigestMismatch, match=f"params: plan {sealed} vs this sweep {now}"):
        prepare_sweep(args, argv)


# ------------------------------------------------------------------------- --repeats=8
@pytest.mark.parametrize("typed", [["--repeats=8"], ["--repeats", "8"]])
def test_a_typed_repeats_in_either_form_is_kept_and_recorded_against_the_plan(tmp_path: Path,
                                                                              typed: list[str]) -> None:
    # Plant: `_typed` as `any(a == flag for a in argv)` -> `--repeats=8` looked untyped, the plan's 1 replaced
    # it, and the deviation (planned 1, run 8) disappeared from the record.
    d = sealed_plan(tmp_path)
    args, argv = sweep_args(d, *typed)
    assert args.repeats == 8
    prepare_sweep(args, argv)
    assert args.repeats == 8
    assert args.prereg["sweep"]["repeats"] == 8
    assert load_plan(d).repeats == 1
    # untyped: the plan's value
    args, argv = sweep_args(d)
    prepare_sweep(args, argv)
    assert args.repeats == 1 and args.prereg["sweep"]["repeats"] == 1


# ------------------------------------------------------------------------- first ledger record
def _block_for(tmp_path: Path, records: list[dict]) -> dict:
    """preregistration_block over a package written from a sealed plan and these ledger records."""
    from analysis.plan.report_blocks import preregistration_block

    d = sealed_plan(tmp_path)
    args, argv = sweep_args(d)
    prepare_sweep(args, argv)
    toml, files = package_extras(args, records, ["c/a", "c/b"])
    pkg = tmp_path / "pkg"
    kept = {"study.toml": toml.encode("utf-8"), PREREG_FILE: json.dumps(files[PREREG_FILE]).encode("utf-8")}
    study = Study(name="s", recency_cutoff=dt.date(2026, 1, 28), control="j", treatment="q", scenario="S5",
                  configurations={k: Configuration(k, "c", dt.date(2026, 3, 1), "loopback", None)
                                  for k in ("c/a", "c/b")},
                  partition_runs=(PartitionRun("c/a", "g1", 1), PartitionRun("c/b", "g1", 1)))
    package = SimpleNamespace(root=pkg, digests={PREREG_FILE: "pinned"}, study=study,
                              verified_bytes=kept.get)  # the verified bytes a loaded package keeps
    return preregistration_block(package, load_plan(d).params(), 2)


def test_sealed_before_the_first_ledger_record_uses_the_first_record(tmp_path: Path) -> None:
    # Plant: first_record_time iterating `reversed(records)` -> the LAST record's time; a sweep that started at
    # 10:00, before the 11:00 seal, was reported "sealed before the first record" because its last record
    # (12:00) followed the seal.
    before, after = "2026-02-01T10:00:00Z", "2026-02-01T12:00:00Z"
    assert first_record_time([{"started": before}, {"started": after}]) == before
    ts = [dt.datetime(2026, 2, 1, h, tzinfo=dt.UTC).timestamp() for h in (10, 12)]
    assert first_record_time([{"kind": "note"}, {"t": ts[0]}, {"t": ts[1]}]) == "2026-02-01T10:00:00+00:00"
    block = _block_for(tmp_path / "a", [{"started": before}, {"started": after}])
    assert block["intact"] and block["first_ledger_record"] == before
    assert block["sealed_before_first_record"] is False
    block = _block_for(tmp_path / "b", [{"started": after}, {"started": "2026-02-01T13:00:00Z"}])
    assert block["sealed_before_first_record"] is True


# ------------------------------------------------------------------------- K = 1
def test_a_plan_with_one_configuration_is_refused(tmp_path: Path) -> None:
    # Plant: parse_plan's `if k < 2 or ...` as `k < 1` -> a plan of K = 1 (no between-configuration variance,
    # no dispersion interval: docs/PREREGISTRATION.md "fewer than two configurations") was sealed.
    path = tmp_path / "plan.toml"
    with pytest.raises(PlanError, match="need configurations >= 2"):
        parse_plan(plan_text(configurations=1).encode(), path)
    assert parse_plan(plan_text(configurations=2).encode(), path).configurations == 2
    d = tmp_path / "plan"
    d.mkdir()
    (d / "plan.toml").write_text(plan_text(configurations=1), encoding="utf-8")
    with pytest.raises(PlanError, match="need configurations >= 2"):
        seal_plan(d)
    assert not (d / "plan.lock").exists()
    # the design grid refuses K = 1 too (PlanParams, `generate.py plan --configurations`)
    with pytest.raises(ParamsError, match="each >= 2"):
        DEFAULT_PLAN_PARAMS.replace(configurations=(1, 10))
    assert DEFAULT_PLAN_PARAMS.replace(configurations=(2,)).configurations == (2,)


def test_ledger_times_of_any_shape_give_an_order_or_none(tmp_path: Path) -> None:
    # issue 31 (dates parsed within a range): a naive first record beside the seal's aware time raised
    # TypeError (offset-naive vs offset-aware) and stopped the build; a year-1 time or a huge string gives None.
    block = _block_for(tmp_path / "a", [{"started": "2026-02-01T13:00:00"}])  # naive: read as UTC
    assert block["sealed_before_first_record"] is True
    for hostile in ("0001-01-01T00:00:00+14:00", "2026-02-01T13:00:00Z" + " " * 100):
        block = _block_for(tmp_path / str(len(hostile)), [{"started": hostile}])
        assert block["sealed_before_first_record"] is None
