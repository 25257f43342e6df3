"""Every record the ledger acknowledges can be read back (issue 31, review of the ledger fix).

The reader refuses a line longer than 64 MiB; the writer used to accept any length.  An
attempt_end carries every fold's reply, so two 34 MiB replies made a 71 MB line that every later
resume refused ("line longer than 64 MiB").  Now the writer refuses a record longer than the
reader's limit (RecordTooLong, nothing written) and the sweep ends that attempt invalid with the
reason `record_too_long`.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_runner_endpoints_sweep import _package, _run, _spec, echo_trajectory

from analysis.runner import ledger as ledger_mod
from analysis.runner import sweep as sweep_mod
from analysis.runner.cli import main as runner_main
from analysis.runner.ledger import RECORD_LIMIT, Ledger, RecordTooLong, evidence_rows, read_records
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.safeio.read import LINE_LIMIT
from support.fault_proxy import EchoUpstream
from support.scripted_server import MemorizingModel, ScriptedServer
from support.sweep_args import strict_json_line as _strict
from support.sweep_args import sweep_args as _sweep

START = {"kind": "attempt_start", "slot": "s1", "attempt": 1, "scenario": "S5", "configuration": "m",
         "execution_group": "g", "repeat": 1, "arm": "j", "position": 1}


def test_the_writers_limit_is_the_readers() -> None:
    assert RECORD_LIMIT == LINE_LIMIT  # the door's line limit, which iter_lines applies by default too


def test_a_maximal_record_reopens_and_one_byte_more_is_refused_unwritten(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        led.append_sync({**START, "note": ""})
        empty = path.stat().st_size - 1  # the record without its newline, note empty
        with pytest.raises(RecordTooLong):
            led.append_sync({**START, "attempt": 2, "note": "x" * (RECORD_LIMIT - empty + 1)})
        assert len(led.records) == 1
        size = path.stat().st_size
        led.append_sync({**START, "attempt": 2, "note": "x" * (RECORD_LIMIT - empty)})
    assert path.stat().st_size - size == RECORD_LIMIT + 1  # exactly the longest line, and its newline
    records = read_records(path)  # before: nothing stopped a longer record, which no resume could read
    assert [r["attempt"] for r in records] == [1, 2] and len(records[1]["note"]) == RECORD_LIMIT - empty
    del records
    with Ledger(path) as led:
        assert len(led.records) == 2


def test_an_attempt_whose_replies_exceed_a_ledger_line_ends_invalid_and_the_sweep_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the limit scaled down (for the writer and the reader alike), so the test holds kilobytes
    monkeypatch.setattr(ledger_mod, "RECORD_LIMIT", 4096)

    async def long_replies(slot, backend) -> sweep_mod.Outcome:
        out = await echo_trajectory(slot, backend)
        if slot.arm != "q":
            return out
        folds = [{**f, "carrier": "y" * 3000} for f in out.artifacts["folds"]]  # 9 KB together
        return sweep_mod.Outcome(row=out.row, checks=out.checks, artifacts={**out.artifacts, "folds": folds})

    monkeypatch.setattr("test_runner_endpoints_sweep.echo_trajectory", long_replies)
    spec = _spec(arms="jq", repeats=1, attempts=2)
    with EchoUpstream() as up:
        tally = _run(up.url + "/v1", tmp_path, spec)
        again = _run(up.url + "/v1", tmp_path, spec)  # before: "line longer than" on every resume
    assert tally["infra_failed"] == 2 and again["ran"] == 0
    ledger = tmp_path / "ledger.jsonl"
    assert max(len(line) for line in ledger.read_bytes().splitlines()) <= 4096
    ends = [r for r in read_records(ledger) if r["kind"] == "attempt_end"]
    q = [r for r in ends if r.get("fault")]
    assert [r["fault"] for r in q] == ["record_too_long", "record_too_long"]
    assert all(r["row"]["infrastructure_fault"] == "record_too_long" and r["artifacts"] == {} for r in q)
    rows = evidence_rows(read_records(ledger), {s.slot_id for s in spec.slots}).rows
    assert sorted(r["valid"] for r in rows) == [False, False, True]
    _package(tmp_path, spec)


def test_a_request_longer_than_a_ledger_line_is_never_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_mod, "RECORD_LIMIT", 1024)
    sent: list[int] = []

    class Client:
        def request_body(self, messages, **_kw):
            return {"messages": list(messages)}

        async def send(self, body):
            sent.append(1)
            raise AssertionError("sent")

    async def go() -> None:
        with Ledger(tmp_path / "ledger.jsonl") as led:
            backend = sweep_mod.LedgeredBackend(Client(), led, _spec("j", 1).slots[0], 1, None, {})  # type: ignore[arg-type]
            with pytest.raises(sweep_mod.InfraFault) as info:
                await backend.call([{"role": "user", "content": "z" * 2000}], max_tokens=8)
            assert info.value.kind == "record_too_long"

    asyncio.run(go())
    assert sent == [] and json.loads((tmp_path / "ledger.jsonl").read_bytes() or b"null") is None




# ------------------------------------------------------------------ a sweep against a scripted server



# ------------------------------------------------------------------ a full disk under the runner

def test_a_full_disk_under_the_runner_is_one_line_and_the_ledger_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    real = os.write
    calls = {"n": 0}

    def filling(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] > 6:  # the disk fills after a few records
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv:
        monkeypatch.setattr(os, "write", filling)
        rc = runner_main(_sweep(srv.base_url, tmp_path / "o"))
        monkeypatch.undo()
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and "Traceback" not in err and len(errors) == 1 and "disk is full" in errors[0], err
    assert "kept" in errors[0]
    kept = (tmp_path / "o" / "ledger.jsonl").read_bytes().splitlines()
    assert kept and all(_strict(x) for x in kept[:-1])  # every acknowledged record is intact

