"""Client, ledger, retries, pin audit and key hygiene, through the fault proxy.

The trajectory used here is a small test double of the protocol (three fold calls and a recall
call whose replies are echoes); it exercises the sweep machinery, not the arms.  The real protocol
runs through the CLI in test_runner_endpoints_cli.py.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
from pathlib import Path

import pytest

from analysis.evidence import load_package
from analysis.evidence.model import Configuration, PartitionRun, Study
from analysis.runner.arm_order import arm_order
from analysis.runner.cli import main as runner_main
from analysis.runner.client import ClientConfigError, EndpointClient, EndpointConfig, InfraFault
from analysis.runner.ledger import LEDGER_VERSION, Ledger, evidence_rows, read_records, write_evidence
from analysis.runner.pinning import Pin
from analysis.runner.sweep import Outcome, RetryPolicy, SweepSpec, plan_slots, run_sweep
from support.fault_proxy import EchoUpstream, FaultProxy

KEY = "sk-PLANTED-0123456789abcdef-never-log-me"
STUDY = Study(name="sweep test", recency_cutoff=dt.date(2026, 1, 28), control="j", treatment="q", scenario="S5",
              configurations={"m": Configuration("m", "test", dt.date(2026, 3, 1), None, None)},
              partition_runs=(PartitionRun("m", "g1", 3),))


async def echo_trajectory(slot, backend) -> Outcome:
    texts = []
    for i in range(3):
        res = await backend.call([{"role": "user", "content": f"{slot.arm} fold {i}"}], max_tokens=8)
        texts.append(res.text)
    ans = await backend.call([{"role": "user", "content": f"{slot.arm} recall"}], max_tokens=8, phase="recall")
    passed = [t.startswith("echo:") for t in [*texts, ans.text]]
    checks = [{"check": f"c{i}", "expected": "echo", "passed": p, "in_carrier": None} for i, p in enumerate(passed)]
    row = {"valid": True, "invalid_reason": None, "checks_total": 4, "checks_passed": sum(passed),
           "parse_failures": 0, "headings_carried": None, "carried_chars": len(texts[-1]), "declared_chars": None,
           "folds": 3, "folds_clipped": 0, "finish_stop": 3, "finish_length": 0, "prompt_tokens_est": 30,
           "answer": ans.text}
    folds = [{"fold": i, "chunks": [i], "carrier": t, "parse_ok": None, "clipped": False}  # folds.jsonl schema
             for i, t in enumerate(texts)]
    return Outcome(row=row, checks=checks, artifacts={"folds": folds, "answer": {"answer": ans.text}})


def _spec(arms="jqm", repeats=3, attempts=4) -> SweepSpec:
    slots = plan_slots(arm_order(list(arms), repeats), scenario="S5", configuration="m", execution_group="g1")
    return SweepSpec(tuple(slots), {"S5": 4}, {a: None for a in arms}, concurrency=4,
                     retry=RetryPolicy(max_attempts=attempts, base_s=0.01, cap_s=0.05))


def _run(base_url: str, out: Path, spec: SweepSpec, **cfg) -> dict:
    config = EndpointConfig(base_url=base_url, model="m", api_key_env="TEST_PLANTED_KEY", timeout_s=1.0, **cfg)

    async def go() -> dict:
        client = EndpointClient(config)
        with Ledger(out / "ledger.jsonl") as led:
            try:
                return await run_sweep(spec, led, client, Pin.from_config(config), echo_trajectory, progress=False)
            finally:
                await client.aclose()

    return asyncio.run(go())


def _package(out: Path, spec: SweepSpec) -> Path:
    ev = evidence_rows(read_records(out / "ledger.jsonl"), {s.slot_id for s in spec.slots})
    pkg = out / "evidence"
    write_evidence(pkg, STUDY, ev)
    return pkg


@pytest.fixture()
def planted_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TEST_PLANTED_KEY", KEY)
    return KEY


def test_faults_are_retried_kept_invalid_and_key_never_written(tmp_path: Path, planted_key: str) -> None:
    spec = _spec()
    with EchoUpstream() as up, FaultProxy(up.url, rate=0.15, seed=3, hang_s=1.5,
                                          faults=("reset", "timeout", "5xx", "429", "truncated")) as proxy:
        tally = _run(proxy.base_url, tmp_path, spec, seed=11)
        injected = sum(proxy.counts.values())
    assert injected > 0
    pkg = _package(tmp_path, spec)
    loaded = load_package(pkg)  # lock verifies, contract rules hold
    rows = loaded.rows
    valid = rows.filter(rows["valid"])
    assert valid.height == len(spec.slots)  # every slot eventually valid
    assert sorted(valid["row_id"].to_list()) == sorted(s.slot_id for s in spec.slots)
    invalid = rows.filter(~rows["valid"])
    assert set(invalid["invalid_reason"].to_list()) <= {"infrastructure"}
    assert invalid.height == tally["infra_failed"] > 0
    # each fault that hit a request ended one attempt (one fault per attempt at most)
    assert invalid.height <= injected
    # the upstream saw the key; no file we wrote contains it
    assert any(a and KEY in a for a in up.auth)
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p
    # seed sent and recorded on every request
    reqs = [r for r in read_records(tmp_path / "ledger.jsonl") if r["kind"] == "request"]
    assert reqs and all(r["body"]["seed"] == 11 and r["body"]["temperature"] == 0.0 for r in reqs)


@pytest.mark.parametrize("fault,kind", [("reset", "connection"), ("5xx", "http_5xx"), ("429", "http_429"),
                                        ("truncated", "truncated"), ("timeout", "timeout")])
def test_each_fault_maps_to_an_infrastructure_kind(fault: str, kind: str) -> None:
    with EchoUpstream() as up, FaultProxy(up.url, plan=lambda i, b: fault, hang_s=1.5, retry_after="7") as proxy:
        client = EndpointClient(EndpointConfig(base_url=proxy.base_url, model="m", api_key_env=None, timeout_s=0.5))

        async def go() -> InfraFault:
            try:
                with pytest.raises(InfraFault) as ei:
                    await client.chat([{"role": "user", "content": "x"}], max_tokens=4)
                return ei.value
            finally:
                await client.aclose()

        exc = asyncio.run(go())
    assert exc.kind == kind
    if fault == "429":
        assert exc.retry_after == 7.0
        # bounded backoff honours Retry-After up to the cap
        pol = RetryPolicy(base_s=1, cap_s=60, jitter=0)
        assert pol.delay(1, exc, random.Random(0)) == 7.0
        assert RetryPolicy(cap_s=3, jitter=0).delay(1, exc, random.Random(0)) == 3.0


def test_pin_violation_makes_rows_invalid_infrastructure(tmp_path: Path) -> None:
    spec = _spec(arms="jq", repeats=1, attempts=2)
    with EchoUpstream(served_model="m", provider="OtherCloud") as up:
        tally = _run(up.url + "/v1", tmp_path, spec, provider_order=("PinnedCloud",), allow_fallbacks=False)
    rows = evidence_rows(read_records(tmp_path / "ledger.jsonl")).rows
    assert tally["valid"] == 0
    assert len(rows) == 4 and all(not r["valid"] and r["infrastructure_fault"] == "pin_violation" for r in rows)
    body = up.bodies[0]
    assert body["provider"] == {"order": ["PinnedCloud"], "allow_fallbacks": False}


def test_served_alias_outside_pin_is_flagged(tmp_path: Path) -> None:
    spec = _spec(arms="j", repeats=1, attempts=1)
    with EchoUpstream(served_model="m-quantized-fp4") as up:
        _run(up.url + "/v1", tmp_path, spec)
    resp = [r for r in read_records(tmp_path / "ledger.jsonl") if r["kind"] == "response"]
    assert resp[0]["pin_violation"] and "m-quantized-fp4" in resp[0]["pin_violation"]


def test_resume_never_repeats_a_finished_slot(tmp_path: Path) -> None:
    spec = _spec()
    with EchoUpstream() as up:
        _run(up.url + "/v1", tmp_path, spec)
        n1 = len(up.bodies)
        tally = _run(up.url + "/v1", tmp_path, spec)
        assert len(up.bodies) == n1 and tally["ran"] == 0


def test_arm_behaviour_is_never_retried(tmp_path: Path) -> None:
    spec = _spec(arms="j", repeats=2)

    async def refusing(slot, backend) -> Outcome:
        out = await echo_trajectory(slot, backend)
        return Outcome(row={**out.row, "valid": False, "invalid_reason": "catchup"}, checks=out.checks)

    with EchoUpstream() as up:
        config = EndpointConfig(base_url=up.url + "/v1", model="m", api_key_env=None)

        async def go() -> dict:
            client = EndpointClient(config)
            with Ledger(tmp_path / "ledger.jsonl") as led:
                t = await run_sweep(spec, led, client, Pin.from_config(config), refusing, progress=False)
            await client.aclose()
            return t

        tally = asyncio.run(go())
    assert tally["ran"] == 2 and len(up.bodies) == 8
    rows = evidence_rows(read_records(tmp_path / "ledger.jsonl")).rows
    assert sorted(r["row_id"] for r in rows) == sorted(s.slot_id for s in spec.slots)


def test_torn_ledger_tail_is_set_aside_and_appends_stay_parseable(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        led.append_sync({"kind": "a", "i": 1})
    with path.open("ab") as fh:
        fh.write(b'{"kind": "b", "i"')  # killed mid-write
    with Ledger(path, say=lambda _m: None) as led:
        assert [r["i"] for r in led.records] == [1]
        led.append_sync({"kind": "c", "i": 3})
    assert [r["i"] for r in read_records(path)] == [1, 3]
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    # the torn fragment is cut off the ledger and kept beside it, never read again
    assert (tmp_path / "ledger.torn-1").read_bytes() == b'{"kind": "b", "i"'
    assert json.loads(lines[0])["i"] == 1 and json.loads(lines[1]) == {"kind": "c", "i": 3, "v": LEDGER_VERSION}
    assert len(lines) == 2
    with Ledger(path) as led:  # and it reopens cleanly again
        assert [r["i"] for r in led.records] == [1, 3]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from analysis.runner.ledger import slot_states  # noqa: E402
from analysis.runner.sweep import is_retryable  # noqa: E402

ENDS = st.sampled_from(["valid", "catchup", "infra", "interrupted"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(ENDS, min_size=1, max_size=6), min_size=1, max_size=5), st.integers(1, 4))
def test_ledger_folding_never_duplicates_or_loses_a_slot(histories: list[list[str]], max_attempts: int) -> None:
    # Each slot's history is cut where the sweep would stop: at a final outcome (valid/catchup)
    # or when infrastructure failures reach max_attempts; interrupted attempts do not count.
    records, expect_final = [], {}
    for k, hist in enumerate(histories):
        sid, fails = f"g:m:S5:r{k + 1:03d}:j", 0
        start = {"scenario": "S5", "configuration": "m", "execution_group": "g", "repeat": k + 1, "arm": "j",
                 "position": 1}
        for att, end in enumerate(hist, start=1):
            if fails >= max_attempts:
                break
            records.append({"kind": "attempt_start", "slot": sid, "attempt": att, **start})
            valid = end == "valid"
            reason = None if valid else ("catchup" if end == "catchup" else "infrastructure")
            records.append({"kind": "attempt_end", "slot": sid, "attempt": att, "valid": valid,
                            "invalid_reason": reason, "interrupted": end == "interrupted",
                            "row": {"checks_total": 14}, "checks": []})
            if end in ("valid", "catchup"):
                expect_final[sid] = end
                break
            fails += end == "infra"
    states = slot_states(records, is_retryable)
    rows = evidence_rows(records).rows
    ids = [r["row_id"] for r in rows]
    assert len(ids) == len(set(ids))
    for sid, st_ in states.items():
        finals = [r for r in rows if r["row_id"] == sid]
        if sid in expect_final:
            assert st_.final is not None and len(finals) == 1
            assert finals[0]["valid"] == (expect_final[sid] == "valid")
        else:
            assert st_.final is None and finals == []
        assert all(r["valid"] is False for r in rows if r["row_id"].startswith(sid + "#"))
    assert sum(r["valid"] for r in rows) == sum(v == "valid" for v in expect_final.values())


def test_progress_line_reports_rows_valid_failed_and_eta(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(arms="jq", repeats=1)
    with EchoUpstream() as up:
        config = EndpointConfig(base_url=up.url + "/v1", model="m", api_key_env=None)

        async def go() -> None:
            client = EndpointClient(config)
            with Ledger(tmp_path / "ledger.jsonl") as led:
                await run_sweep(spec, led, client, Pin.from_config(config), echo_trajectory, progress=True)
            await client.aclose()

        asyncio.run(go())
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("rows 0/2  valid 0  failed-attempts 0") and "eta ?" in err[0]
    assert err[-1].startswith("rows 2/2  valid 2  failed-attempts 0") and "eta 0s" in err[-1]


CREDENTIAL = "sk-ISSUE20-credential-never-write-me"


# ------------------------------------------------------------------ credentials in the base URL

@pytest.mark.parametrize("url", [f"http://user:{CREDENTIAL}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?api_key={CREDENTIAL}",
                                 "http://127.0.0.1:9/v1?x=1"])
def test_a_base_url_with_credentials_or_a_query_is_refused(url: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ClientConfigError) as info:
        EndpointConfig(base_url=url, model="m")
    assert ("--api-key-env" in str(info.value)) == ("x=1" not in url)
    rc = runner_main(["sweep", "--base-url", url, "--model", "m", "--published", "2026-03-01", "--arms", "j",
                      "--repeats", "1", "--out", str(tmp_path / "o"), "--api-key-env", "", "--no-probe",
                      "--structured-mode", "json_schema", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and CREDENTIAL not in err
    assert not any(CREDENTIAL.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())

