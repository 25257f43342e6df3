"""The ledger survives its own crash (issue 31, item 3): a torn tail is set aside, resume is idempotent.

A crash mid-write leaves the ledger without its final newline (possibly a whole record but its
newline) or with a partial record.  Before the fix, a reopening writer terminated the fragment in
place; when the fragment was a whole record, the next-but-one resume read it back and stopped on
"duplicate row_id" for good.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_runner_endpoints_sweep import _package, _run, _spec

from analysis.runner.cli import main
from analysis.runner.cli import main as runner_main
from analysis.runner.ledger import LEDGER_VERSION, Ledger, LedgerError, evidence_rows, read_records, slot_states
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.sweep import is_retryable
from support.fault_proxy import EchoUpstream
from support.scripted_server import MemorizingModel, ScriptedServer
from support.sweep_args import strict_json_line as _strict
from support.sweep_args import sweep_args as _sweep

START = {"scenario": "S5", "configuration": "m", "execution_group": "g", "repeat": 1, "arm": "j", "position": 1}
SESSION = {"kind": "session", "identity": "i", "probes": {}}
ROW = {"checks_total": 1, "checks_passed": 1, "parse_failures": 0, "folds": 1}


def _quiet(_message: str) -> None:
    return None


def _attempt(led: Ledger, slot: str, attempt: int) -> None:
    led.append_sync({"kind": "attempt_start", "slot": slot, "attempt": attempt, **START})
    led.append_sync({"kind": "attempt_end", "slot": slot, "attempt": attempt, "valid": True, "row": ROW,
                     "checks": []})


def _resume(path: Path) -> list[str]:
    """What a resume does: open, run every slot the ledger does not show finished, close."""
    with Ledger(path, say=_quiet) as led:
        states = slot_states(led.records, is_retryable)
        for slot in ("s1", "s2"):
            stt = states.get(slot)
            if stt is None or stt.final is None:
                _attempt(led, slot, (stt.started if stt else 0) + 1)
    return [r["row_id"] for r in evidence_rows(read_records(path)).rows]


def test_a_record_torn_at_its_newline_is_set_aside_and_every_later_resume_works(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
        _attempt(led, "s2", 1)
    path.write_bytes(path.read_bytes()[:-1])  # a crash mid-write: the last record lacks its newline
    torn = path.read_bytes()
    lines: list[str] = []
    with Ledger(path, say=lines.append) as led:
        assert len(led.records) == 3 and led.set_aside is None and path.read_bytes() == torn  # read-only so far
        led.append_sync(SESSION)
        assert led.set_aside == tmp_path / "ledger.torn-1"
    assert len(lines) == 1 and "ledger.torn-1" in lines[0] and "\n" not in lines[0]
    assert json.loads((tmp_path / "ledger.torn-1").read_bytes())["kind"] == "attempt_end"
    for _ in range(3):  # before the fix: the second resume failed with "duplicate row_id", and every later one
        ids = _resume(path)
        assert sorted(ids) == ["s1", "s2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.jsonl", "ledger.torn-1"]


def test_a_ledger_an_older_runner_terminated_in_place_reads_without_duplicates(tmp_path: Path) -> None:
    # what the runner before the fix left: the whole record, then "\n" + a torn_tail record naming it,
    # then the resumed attempt of the same slot
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    raw = path.read_bytes()[:-1]
    torn = json.dumps({"kind": "torn_tail", "line": 2, "v": 1}).encode()
    path.write_bytes(raw + b"\n" + torn + b"\n")
    with Ledger(path) as led:
        led.append_sync({"kind": "attempt_start", "slot": "s1", "attempt": 2, **START})
        led.append_sync({"kind": "attempt_end", "slot": "s1", "attempt": 2, "valid": True, "row": ROW, "checks": []})
    ids = [r["row_id"] for r in evidence_rows(read_records(path)).rows]
    assert ids == ["s1"]  # the named line is skipped even though it parses


def test_an_older_runners_fragment_terminated_alone_is_torn_too(tmp_path: Path) -> None:
    # the older runner terminated a fragment with b"\n" + a torn_tail record in one write; a crash
    # could leave only the newline: a final line of JSON cut short
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    with path.open("ab") as fh:
        fh.write(b'{"attempt":1,"kind":"attempt_st\n')
    lines: list[str] = []
    with Ledger(path, say=lines.append) as led:
        assert len(led.records) == 2
        led.append_sync(SESSION)
    assert (tmp_path / "ledger.torn-1").read_bytes() == b'{"attempt":1,"kind":"attempt_st\n'
    assert path.read_bytes().count(b"\n") == 3 and "line 3," in lines[0]


def test_an_older_runners_fragment_and_its_torn_tail_record_cut_short_are_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    clean = path.read_bytes()
    path.write_bytes(clean + b'{"attempt":2,"ki\n{"kind":"torn_tail","li')
    lines: list[str] = []
    with Ledger(path, say=lines.append) as led:
        assert len(led.records) == 2
        led.append_sync(SESSION)
    assert path.read_bytes().startswith(clean) and path.read_bytes().count(b"\n") == 3
    assert (tmp_path / "ledger.torn-1").read_bytes() == b'{"attempt":2,"ki\n{"kind":"torn_tail","li'
    assert "lines 3-4" in lines[0]


def _refused(path: Path, line: int) -> str:
    before = path.read_bytes()
    with pytest.raises(LedgerError) as info:
        Ledger(path, say=_quiet)
    with pytest.raises(LedgerError):
        read_records(path)
    assert path.read_bytes() == before and not list(path.parent.glob("ledger.torn-*"))  # nothing moved or cut
    assert f"line {line} " in str(info.value)
    return str(info.value)


def test_a_changed_byte_in_the_last_acknowledged_record_stops_the_run(tmp_path: Path) -> None:
    # before: the acknowledged attempt_end was set aside as "torn" and its paid attempt ran again
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    raw = bytearray(path.read_bytes())
    at = raw.rindex(b'"valid":true')
    raw[at + len(b"\"valid\"")] = ord("#")  # one flipped byte (its colon) in the last record; newline intact
    path.write_bytes(bytes(raw))
    assert "damaged or edited" in _refused(path, 2)


def test_lines_that_are_not_records_stop_the_run_however_many(tmp_path: Path) -> None:
    # before: every unparsable line after the last record counted as "torn", without limit
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    with path.open("ab") as fh:
        fh.write(b"not json\nnor this\n{\"partial\n")
    message = _refused(path, 3)
    assert "(and 2 more line(s): [4, 5])" in message  # the last one, JSON cut short, is counted too


def test_a_file_of_only_foreign_lines_is_refused_not_emptied(tmp_path: Path) -> None:
    # before: moved aside and cut to 0 bytes, so the sweep restarted from scratch
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"hello\nworld\n")
    _refused(path, 1)
    path.write_bytes(b"hello world")  # one line, no newline, and no record anywhere
    assert "not a ledger the runner wrote" in _refused(path, 1)


def test_a_zero_block_with_a_newline_is_not_a_crash_shape(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    with path.open("ab") as fh:
        fh.write(b'{"kind": "attempt_st\x00\x00\n')
    _refused(path, 3)
    path.write_bytes(path.read_bytes()[:-1])  # the same without its newline: torn, set aside
    with Ledger(path, say=_quiet) as led:
        assert len(led.records) == 2


def test_the_cli_names_the_damaged_line_without_a_traceback(tmp_path: Path, capsys) -> None:
    from analysis.runner.cli import main

    out = tmp_path / "o"
    out.mkdir()
    (out / "ledger.jsonl").write_bytes(b"hello\nworld\n")
    code = main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published", "2026-03-01",
                 "--family", "test", "--arms", "j", "--repeats", "1", "--recency-cutoff", "2026-01-01",
                 "--out", str(out), "--no-probe", "--api-key-env", "", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "error: " in err and "line 1 " in err and "Traceback" not in err
    assert (out / "ledger.jsonl").read_bytes() == b"hello\nworld\n"


@settings(max_examples=40, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_cutting_the_ledger_anywhere_resumes_to_the_same_rows(tmp_path_factory, cut: int) -> None:
    tmp = tmp_path_factory.mktemp("cut")
    path = tmp / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
        _attempt(led, "s2", 1)
    full = path.read_bytes()
    path.write_bytes(full[: cut % (len(full) + 1)])
    first = _resume(path)
    after = path.read_bytes()
    second = _resume(path)  # resume is idempotent: a second one changes nothing
    assert sorted(first) == sorted(second) == ["s1", "s2"]
    assert path.read_bytes() == after
    assert len(list(tmp.glob("ledger.torn-*"))) <= 1


def test_sweep_resumed_twice_after_a_torn_newline_packages_cleanly(tmp_path: Path) -> None:
    spec = _spec(arms="jq", repeats=1)
    with EchoUpstream() as up:
        _run(up.url + "/v1", tmp_path, spec)
        ledger = tmp_path / "ledger.jsonl"
        ledger.write_bytes(ledger.read_bytes()[:-1])
        for _ in range(2):
            _run(up.url + "/v1", tmp_path, spec)
    rows = evidence_rows(read_records(tmp_path / "ledger.jsonl"), {s.slot_id for s in spec.slots}).rows
    ids = [r["row_id"] for r in rows]
    assert len(ids) == len(set(ids)) and {s.slot_id for s in spec.slots} <= set(ids)
    _package(tmp_path, spec)  # before the fix: "duplicate row_id"


def test_a_ledger_only_read_is_left_as_it_was_found(tmp_path: Path) -> None:
    # --package-only, or a refused identity: before, opening the ledger already moved the tail and cut it
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    path.write_bytes(path.read_bytes()[:-1])
    torn = path.read_bytes()
    with Ledger(path, say=_quiet) as led:
        assert len(led.records) == 1
    assert path.read_bytes() == torn and not list(tmp_path.glob("ledger.torn-*"))


def test_a_ledger_of_another_sweep_is_refused_untouched(tmp_path: Path, capsys) -> None:
    from analysis.runner.cli import main

    out = tmp_path / "o"
    out.mkdir()
    ledger = out / "ledger.jsonl"
    with Ledger(ledger) as led:
        led.append_sync({**SESSION, "identity": "another sweep"})
        _attempt(led, "s1", 1)
    ledger.write_bytes(ledger.read_bytes()[:-1])
    torn = ledger.read_bytes()
    code = main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published", "2026-03-01",
                 "--family", "test", "--arms", "j", "--repeats", "1", "--recency-cutoff", "2026-01-01",
                 "--out", str(out), "--no-probe", "--api-key-env", "", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "belongs to a different sweep" in err and "torn" not in err
    assert ledger.read_bytes() == torn and not list(out.glob("ledger.torn-*"))


def test_the_side_file_keeps_the_ledgers_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as led:
        _attempt(led, "s1", 1)
    path.write_bytes(path.read_bytes()[:-1])
    path.chmod(0o600)  # a private ledger (it holds every prompt and reply)
    with Ledger(path, say=_quiet) as led:
        led.append_sync(SESSION)
    assert (tmp_path / "ledger.torn-1").stat().st_mode & 0o777 == 0o600  # before: always 0o644




# ------------------------------------------------------------------ ledger version and record shape

def _ledger(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "ledger.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


ATTEMPT_START = {"kind": "attempt_start", "slot": "s", "attempt": 1, "scenario": "S5", "configuration": "c",
         "execution_group": "g", "repeat": 1, "arm": "j", "position": 0}


# ------------------------------------------------------------------ a sweep against a scripted server



@pytest.mark.parametrize(("end", "needle"), [
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "row": {"folds": 3}}, "lacks checks_total"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True,
      "row": {"checks_total": 1, "checks_passed": 1, "parse_failures": 0, "folds": "five"}}, "'folds' is 'five'"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "checks": "x"}, "checks"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "v": 2}, "format version 2"),
])
def test_resume_refuses_records_of_another_shape_or_version(tmp_path: Path, end: dict[str, Any], needle: str) -> None:
    with pytest.raises(LedgerError) as info:
        read_records(_ledger(tmp_path, ATTEMPT_START, end))
    assert needle in str(info.value) and "line 2" in str(info.value)


def test_records_carry_the_ledger_version(tmp_path: Path) -> None:
    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv:
        assert runner_main(_sweep(srv.base_url, tmp_path / "o")) == 0
    lines = (tmp_path / "o" / "ledger.jsonl").read_bytes().splitlines()
    assert lines and all(_strict(x)["v"] == LEDGER_VERSION for x in lines)


def _hostile_sweep(base_url: str, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--base-url", base_url, "--model", "m", "--published", "2026-03-01", "--family", "test",
            "--arms", "j,q", "--repeats", "1", "--out", str(out), "--quiet", "--backoff", "0",
            "--backoff-cap", "0", "--timeout", "5", *extra]


# ------------------------------------------------------------------ the ledger
@pytest.mark.parametrize("damage", [b"garbage{\n", b"[1]\n", b'{"kind": "attempt_start", "slot": 5}\n'])
def test_a_corrupt_ledger_line_stops_the_resume_naming_the_line(tmp_path: Path, damage: bytes,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with EchoUpstream() as up:
        args = _hostile_sweep(up.url + "/v1", tmp_path / "o", "--api-key-env", "", "--no-probe",
                      "--structured-mode", "json_schema")
        assert main(args) == 0
        ledger = tmp_path / "o" / "ledger.jsonl"
        lines = ledger.read_bytes().splitlines(keepends=True)
        lines[2] = damage
        ledger.write_bytes(b"".join(lines))
        n = len(up.bodies)
        rc = main(args)
        assert len(up.bodies) == n  # nothing sent
    err = capsys.readouterr().err
    assert rc == 1 and "line 3" in err and "Traceback" not in err, err
    assert "LedgerError" not in err  # the message, never the class name (issue 33)

