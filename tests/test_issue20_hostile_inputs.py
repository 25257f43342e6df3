"""Issue 20: the attacks on the surfaces outside the evidence package, each one a regression test.

Every attack ends in a named error (one line, the right exit status) or a recorded verdict, never
a traceback, a hang or a forged file. Item numbers are the issue's.
"""
from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis.evidence import EvidenceError, load_package, write_lock
from analysis.runner.cli import RUNNER_LOCK
from analysis.runner.cli import main as runner_main
from analysis.runner.client import ClientConfigError, EndpointConfig
from analysis.runner.ledger import LEDGER_VERSION, LedgerError, read_records
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.prereg import PlanError, check_plan, read_plan_lock, seal_plan
from analysis.safeio.lock import DirLock
from evidence_support import copy_handmade
from support.paths import REPO
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

KEY = "sk-ISSUE20-credential-never-write-me"


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def _generate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "generate.py"), *args], cwd=REPO, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


def _strict(line: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)
    line.decode("utf-8")  # strict: no lone surrogate's bytes
    return json.loads(line, parse_constant=refuse)


# ------------------------------------------------------------------ 1. only locked names are read

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


# ------------------------------------------------------------------ 2. credentials in the base URL

@pytest.mark.parametrize("url", [f"http://user:{KEY}@127.0.0.1:9/v1", f"http://127.0.0.1:9/v1?api_key={KEY}",
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
    assert rc == 2 and "Traceback" not in err and KEY not in err
    assert not any(KEY.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


# ------------------------------------------------------------------ 3. one runner per --out

def test_a_second_runner_into_the_same_out_is_refused_before_any_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    out.mkdir()
    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv, DirLock(out / RUNNER_LOCK):  # another runner holds it
        rc = runner_main(_sweep(srv.base_url, out))
        sent = len(srv.requests)
    err = capsys.readouterr().err
    assert rc == 2 and "another runner" in err and sent == 0, err


# ------------------------------------------------------------------ 4. ledger version and record shape

def _ledger(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "ledger.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


START = {"kind": "attempt_start", "slot": "s", "attempt": 1, "scenario": "S5", "configuration": "c",
         "execution_group": "g", "repeat": 1, "arm": "j", "position": 0}


@pytest.mark.parametrize(("end", "needle"), [
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "row": {"folds": 3}}, "lacks checks_total"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True,
      "row": {"checks_total": 1, "checks_passed": 1, "parse_failures": 0, "folds": "five"}}, "'folds' is 'five'"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "checks": "x"}, "checks"),
    ({"kind": "attempt_end", "slot": "s", "attempt": 1, "valid": True, "v": 2}, "format version 2"),
])
def test_resume_refuses_records_of_another_shape_or_version(tmp_path: Path, end: dict[str, Any], needle: str) -> None:
    with pytest.raises(LedgerError) as info:
        read_records(_ledger(tmp_path, START, end))
    assert needle in str(info.value) and "line 2" in str(info.value)


def test_records_carry_the_ledger_version(tmp_path: Path) -> None:
    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv:
        assert runner_main(_sweep(srv.base_url, tmp_path / "o")) == 0
    lines = (tmp_path / "o" / "ledger.jsonl").read_bytes().splitlines()
    assert lines and all(_strict(x)["v"] == LEDGER_VERSION for x in lines)


# ------------------------------------------------------------------ 5, 10, 15, 16: the server's replies

def _sweep(url: str, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--base-url", url, "--model", "scripted/model-1", "--published", "2026-03-01",
            "--family", "test", "--arms", "j", "--repeats", "1", "--out", str(out), "--quiet", "--backoff", "0",
            "--backoff-cap", "0", "--timeout", "20", "--api-key-env", "", "--no-probe",
            "--structured-mode", "json_schema", "--max-attempts", "3", *extra]


def _reply(content: Any, usage: str = '{"prompt_tokens": 1, "completion_tokens": 1}') -> bytes:
    return (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "scripted/model-1", '
            b'"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
            + content + b'}}], "usage": ' + usage.encode() + b"}")


BAD_REPLIES = {
    "nan usage": (_reply(b'"ok"', '{"prompt_tokens": NaN, "completion_tokens": Infinity}'), (), "not a JSON number"),
    "content list": (_reply(b'["a", "b"]'), (), "not a string"),
    "lone surrogate": (_reply(b'"\\ud800"'), (), "lone surrogate"),
    "deep reply": (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", (), "nested deeper"),
    "gzip bomb": (gzip.compress(b" " * (80 << 20), 9), (("Content-Encoding", "gzip"),), "when decompressed"),
    "redirect": (b"{}", (("Location", "http://elsewhere.example/v1"),), "redirect"),
}


@pytest.mark.parametrize("case", sorted(BAD_REPLIES))
def test_a_bad_reply_is_an_infrastructure_fault_and_never_reaches_the_files(tmp_path: Path, case: str) -> None:
    body, headers, needle = BAD_REPLIES[case]
    model = MemorizingModel(load_fixture_arg("small"))

    def responder(req: dict[str, Any], index: int) -> Reply:
        if index == 0:
            return Reply(raw_body=body, headers=headers, status=307 if case == "redirect" else 200)
        return model(req, index)

    with ScriptedServer(responder) as srv:
        rc = runner_main(_sweep(srv.base_url, tmp_path / "o"))
    assert rc == 0
    ledger = (tmp_path / "o" / "ledger.jsonl").read_bytes()
    records = [_strict(x) for x in ledger.splitlines()]
    assert needle in ledger.decode() and any(r.get("kind") == "attempt_end" and not r["valid"] for r in records)
    for line in (tmp_path / "o" / "evidence" / "folds.jsonl").read_bytes().splitlines():
        _strict(line)


def test_the_body_limit_is_in_the_help() -> None:
    from analysis.runner.arguments import build_runner_parser
    from analysis.runner.bounded_http import MAX_BODY_BYTES

    sub = build_runner_parser()._subparsers._group_actions[0].choices["sweep"]  # type: ignore[union-attr]
    assert f"{MAX_BODY_BYTES >> 20} MiB" in " ".join(sub.format_help().split())


# ------------------------------------------------------------------ 6, 7, 8, 9, 14: plan files

def _plan_dir(tmp_path: Path, text: str) -> Path:
    from test_plan_prereg import plan_text, write_plan
    return write_plan(tmp_path, plan_text() if text == "" else text)


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


def test_hostile_design_json_and_stamp_are_ignored_not_a_traceback(tmp_path: Path) -> None:
    from analysis.pipeline import _read_stamp
    from analysis.plan.report_blocks import design_block

    (tmp_path / "design.json").write_text('{"version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / ".build-stamp.json").symlink_to("/dev/zero")
    assert design_block(tmp_path) is None and _read_stamp(tmp_path) == {}


# ------------------------------------------------------------------ 17. plan arguments

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


# ------------------------------------------------------------------ 18, 20: stdout

def test_stdout_survives_an_ascii_terminal_and_paths_cannot_forge_lines(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / "évidence\nOK fake line")
    r = _generate("verify", str(pkg), PYTHONIOENCODING="ascii")
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("OK ") and "\\n" in r.stdout
    assert "\\xe9" in r.stdout  # é escaped for the ascii stream, never a UnicodeEncodeError
    r = _generate("lock", str(pkg), PYTHONIOENCODING="ascii")
    assert r.returncode == 0 and r.stdout.count("\n") == 2, r.stderr[-800:]


def test_emit_escapes_what_the_stream_cannot_carry() -> None:
    import io

    from analysis.escape import emit

    buf = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    emit("R* ± 2 \ud800 ok", buf)
    buf.flush()
    assert buf.buffer.getvalue() == b"R* \\xb1 2 \\ud800 ok\n"  # type: ignore[attr-defined]


# ------------------------------------------------------------------ 11. many folds stay linear

def test_a_million_folds_draw_with_capped_ticks() -> None:
    import time

    from analysis.figures.common import new_figure
    from analysis.figures.survival import MAX_FOLD_TICKS, set_fold_ticks

    fig, (ax,) = new_figure(1)
    t0 = time.perf_counter()
    ax.set_xlim(-0.1, 1_000_000.1)
    set_fold_ticks(ax, 1_000_000)
    fig.canvas.draw()
    assert time.perf_counter() - t0 < 5 and len(ax.get_xticks()) <= MAX_FOLD_TICKS + 2
    _fig2, (bx,) = new_figure(1)
    set_fold_ticks(bx, 5)
    assert list(bx.get_xticks()) == [0, 1, 2, 3, 4, 5]  # a short row keeps one tick per fold


# ------------------------------------------------------------------ 21. the viewer's names

def test_the_viewer_lists_names_that_shadow_object_members() -> None:
    """The viewer's uniq() (run by node) with __proto__, constructor and hasOwnProperty as names."""
    import re
    import shutil

    page = (REPO / "analysis" / "viewer" / "trajectories.html").read_text(encoding="utf-8")
    assert ".hasOwnProperty(" not in page and "seen = {}" not in page
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the uniq() call is checked textually only")
    body = re.search(r"function uniq\(list\) \{.*?\n  \}", page, re.S)
    assert body is not None
    names = ["__proto__", "constructor", "hasOwnProperty", "toString", "a", "__proto__"]
    script = body.group(0) + f"\nconsole.log(JSON.stringify(uniq({json.dumps(names)})));\n"
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)) == sorted(set(names))


# ------------------------------------------------------------------ 22. a killed build's staging

def test_stale_staging_is_removed_even_when_nothing_is_rebuilt(tmp_path: Path) -> None:
    from analysis.outdir import STAGING_PREFIX, remove_stale_staging

    said: list[str] = []
    (tmp_path / (STAGING_PREFIX + "abc") / "tables").mkdir(parents=True)
    (tmp_path / (STAGING_PREFIX + "link")).symlink_to(tmp_path / "keep")
    (tmp_path / "keep").mkdir()
    remove_stale_staging(tmp_path, said.append)
    assert not (tmp_path / (STAGING_PREFIX + "abc")).exists() and (tmp_path / "keep").is_dir()
    assert said and "was killed" in said[0]


# ------------------------------------------------------------------ 12. folds.jsonl in bounded memory

FOLDS_MEMORY = """
import resource, sys
import polars as pl
from analysis.evidence.folds import parse_folds
pl.DataFrame({"a": [1]})  # polars' own start-up memory is not the parser's
n = int(sys.argv[1])
buf = bytearray()
for i in range(n):  # 1,000 rows with n / 1,000 folds each
    buf += b'{"row_id":"r%d","fold":%d,"chunks":[0],"carrier":"","parse_ok":null,"clipped":false}\\n' % (
        i % 1000, i // 1000)
data = bytes(buf)
del buf
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
frame = parse_folds(data, None, [])
print(len(data), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024, frame.height)
"""


@pytest.mark.slow
def test_folds_jsonl_is_parsed_in_bounded_memory() -> None:
    """Peak memory growth at most 2x the file plus a constant (before: about 9x, one object per line)."""
    done = subprocess.run([sys.executable, "-c", FOLDS_MEMORY, "300000"], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=600)
    size, grew, height = (int(x) for x in done.stdout.split())
    assert height == 300_000
    assert grew <= 2 * size + (16 << 20), f"{grew >> 20} MiB for a {size >> 20} MiB file"


# ------------------------------------------------------------------ 13. SIGTERM in every stage

@pytest.mark.slow
@pytest.mark.parametrize("after", ["[1/5] verify", "[2/5] results", "[3/5] tables", "[4/5] figures"])
def test_sigterm_is_honoured_within_two_seconds_in_every_stage(tmp_path: Path, after: str) -> None:
    import signal
    import time

    from test_build_safety import _popen, _read_until

    proc = _popen("--evidence", str(REPO / "tests" / "fixtures" / "handmade"), "--out", str(tmp_path / "o"),
                  "--force")
    lines: list[str] = []
    try:
        _read_until(proc, after, lines)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == 143 and "Traceback" not in rest, rest[-800:]
    assert took < 2.0, f"SIGTERM after {after!r} took {took:.1f}s"


# ------------------------------------------------------------------ 19. a full disk under the runner

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


# ------------------------------------------------------------------ 16. every wrong type in a reply

SHAPES = {  # the fault names the field and its JSON type (issue 31: JSON's names, not Python's)
    b'{"choices": "x"}': "no choices",
    b'{"choices": [null]}': "choice is a JSON null",
    b'{"choices": [{"message": "str", "finish_reason": "stop"}]}': "message is a JSON string",
    b'{"choices": [{"message": {"content": ["a"]}, "finish_reason": "stop"}]}': "content is a JSON array",
    b'{"choices": [{"message": {"content": "ok"}, "finish_reason": 3}]}': "finish_reason is a JSON number",
    b'{"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "model": 5}': "model is a JSON number",
    b"[1, 2]": "no choices",
}


def test_each_wrong_type_in_a_reply_is_a_named_fault() -> None:
    import asyncio

    from analysis.runner.client import EndpointClient, InfraFault

    bodies = list(SHAPES)

    async def ask(url: str) -> list[str]:
        client = EndpointClient(EndpointConfig(base_url=url, model="m"))
        found = []
        try:
            for _ in bodies:
                try:
                    await client.chat([{"role": "user", "content": "hi"}], max_tokens=5)
                    found.append("accepted")
                except InfraFault as exc:
                    found.append(exc.detail)
        finally:
            await client.aclose()
        return found

    with ScriptedServer(lambda _body, index: Reply(raw_body=bodies[index])) as srv:
        details = asyncio.run(ask(srv.base_url))
    for body, detail in zip(bodies, details, strict=True):
        assert SHAPES[body] in detail, (body, detail)
