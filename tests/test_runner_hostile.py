"""The runner against careless commands and a misbehaving server (issue 11, class 7).

Every attack must end in a named error or a recorded verdict: no traceback, no hang past its
bound, no key in any file or stream.  The servers are loopback doubles (support/hostile_server.py,
support/fault_proxy.EchoUpstream).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner import secrets
from analysis.runner.cli import main
from support.fault_proxy import EchoUpstream
from support.hostile_server import HostileServer
from support.paths import REPO

KEY = "sk-HOSTILE-7c1d9e0f4a2b-never-write-me"


def _leaks(root: Path, *streams: str) -> list[str]:
    """Every file under root, and every stream, that holds the key in any spelling we redact."""
    spellings = [KEY.encode(), json.dumps(KEY)[1:-1].encode()]
    found = [str(p) for p in root.rglob("*") if p.is_file() and any(s in p.read_bytes() for s in spellings)]
    return found + [f"stream {i}" for i, s in enumerate(streams) if KEY in s]


def _sweep(base_url: str, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--base-url", base_url, "--model", "m", "--published", "2026-03-01", "--family", "test",
            "--arms", "j,q", "--repeats", "1", "--out", str(out), "--quiet", "--backoff", "0",
            "--backoff-cap", "0", "--timeout", "5", *extra]


# ------------------------------------------------------------------ the key
def test_key_echoed_in_401_bodies_is_redacted_from_every_artefact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOSTILE_KEY", KEY)
    with HostileServer("echo_key_401") as srv:
        # the sweep path: every attempt fails with the echoing 401; rows, ledger, manifest are written
        out = tmp_path / "sweep"
        rc = main(_sweep(srv.base_url, out, "--api-key-env", "HOSTILE_KEY", "--no-probe",
                         "--structured-mode", "json_schema", "--max-attempts", "2"))
        assert rc == 0
        # the probe path: the plain request is rejected; the error message quotes the verdicts
        rc_probe_sweep = main(_sweep(srv.base_url, tmp_path / "probed", "--api-key-env", "HOSTILE_KEY"))
        rc_probe = main(["probe", "--base-url", srv.base_url, "--model", "m", "--api-key-env", "HOSTILE_KEY"])
    cap = capsys.readouterr()
    assert rc_probe_sweep == 1 and "probe rejected" in cap.err  # the endpoint failed a check: 1, as probe
    assert rc_probe == 1
    assert "[REDACTED]" in cap.out and "[REDACTED]" in cap.err  # the echo was there, and redacted
    ledger = (out / "ledger.jsonl").read_text()
    assert "[REDACTED]" in ledger and "invalid_api_key" in ledger  # the rest of the body is kept
    for name in ("rows.csv", "run_manifest.json", "study.toml"):
        assert (out / "evidence" / name).exists()
    assert _leaks(tmp_path, cap.out, cap.err) == []


@pytest.mark.parametrize("value", [KEY, "abcdEFGH1234567890xyzKEY"])
def test_a_key_given_as_the_api_key_env_value_is_refused_and_never_written(
        tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with EchoUpstream() as up:
        rc = main(_sweep(up.url + "/v1", tmp_path / "o", "--api-key-env", value))
        assert up.bodies == []  # nothing was sent
    err = capsys.readouterr().err
    assert rc == 2 and "--api-key-env" in err and "Traceback" not in err
    assert value not in err
    assert not (tmp_path / "o").exists()


def test_an_unset_key_variable_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("NOT_SET_API_KEY", raising=False)
    rc = main(_sweep("http://127.0.0.1:9/v1", tmp_path / "o", "--api-key-env", "NOT_SET_API_KEY"))
    err = capsys.readouterr().err
    assert rc == 2 and "NOT_SET_API_KEY" in err and "not set" in err and "--api-key-env ''" in err


def test_an_empty_api_key_env_still_means_no_key(capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer("ok") as srv:
        rc = main(["probe", "--base-url", srv.base_url, "--model", "m", "--api-key-env", ""])
    assert rc == 0, capsys.readouterr().err


# ------------------------------------------------------------------ /models of any shape
@pytest.mark.parametrize("models", [[1], {"data": [5]}, {"data": [{"id": "m", "meta": "str"}]}, "text",
                                    {"data": {"id": "m"}}, {"data": [{"id": "m", "context_length": "big"}]}])
def test_malformed_models_listing_is_a_verdict_not_a_traceback(models: object,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with HostileServer("ok", models=models) as srv:
        rc = main(["probe", "--base-url", srv.base_url, "--model", "m", "--api-key-env", ""])
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.err, cap.err
    report = json.loads(cap.out)
    verdict = report["verdicts"][0]
    assert verdict["step"] == "models" and verdict["verdict"] in ("models_malformed", "models_listed")
    if models != {"data": [{"id": "m", "meta": "str"}]} and not isinstance(models, dict):
        assert verdict["verdict"] == "models_malformed"


# ------------------------------------------------------------------ arguments, before any request
@pytest.mark.parametrize("extra,needle", [
    (["--repeats", "0"], "--repeats"),
    (["--concurrency", "0"], "--concurrency"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--max-attempts", "0"], "--max-attempts"),
    (["--fixture", "/etc/hostname"], "--fixture"),
    (["--fixture", "/nonexistent/f.json"], "--fixture"),
    (["--recency-cutoff", "notadate"], "--recency-cutoff"),
    (["--published", "2026-13-01"], "--published"),
    (["--arms", "j,ԛ"], "--arms"),
    (["--out", ""], "--out"),
])
def test_bad_arguments_are_refused_before_the_first_request(tmp_path: Path, extra: list[str], needle: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with EchoUpstream() as up:
        args = _sweep(up.url + "/v1", tmp_path / "o", "--api-key-env", "")
        for i in range(0, len(extra), 2):  # later options override the defaults of _sweep
            args += [extra[i], extra[i + 1]]
        rc = main(args)
        assert up.bodies == []
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err, err


def test_out_naming_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "afile"
    f.write_text("mine\n")
    rc = main(_sweep("http://127.0.0.1:9/v1", f, "--api-key-env", ""))
    err = capsys.readouterr().err
    assert rc == 2 and "is a file" in err and f.read_text() == "mine\n"


def test_embedded_arguments_are_checked_before_the_server_starts(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["embedded", "--out", str(tmp_path / "e"), "--repeats", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "--repeats" in err and not (tmp_path / "e" / "llama_server.log").exists()


# ------------------------------------------------------------------ the ledger
@pytest.mark.parametrize("damage", [b"garbage{\n", b"[1]\n", b'{"kind": "attempt_start", "slot": 5}\n'])
def test_a_corrupt_ledger_line_stops_the_resume_naming_the_line(tmp_path: Path, damage: bytes,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with EchoUpstream() as up:
        args = _sweep(up.url + "/v1", tmp_path / "o", "--api-key-env", "", "--no-probe",
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


# ------------------------------------------------------------------ time bounds
def _run(argv: list[str], timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "analysis.runner", *argv], cwd=REPO, env=env, capture_output=True,
                       check=False, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def test_timeout_bounds_a_slow_drip_endpoint(tmp_path: Path) -> None:
    with HostileServer("drip", drip_s=1.0) as srv:
        r, wall = _run(["sweep", "--base-url", srv.base_url, "--model", "m", "--published", "2026-03-01",
                        "--arms", "j", "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet",
                        "--api-key-env", "", "--no-probe", "--structured-mode", "json_schema",
                        "--timeout", "3", "--max-attempts", "2", "--backoff", "0"], timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    assert wall < 30, f"two 3 s attempts took {wall:.0f}s"
    ledger = (tmp_path / "o" / "ledger.jsonl").read_text()
    assert ledger.count('"fault":"timeout"') >= 2 and "total deadline" in ledger


def test_probe_of_a_slow_drip_endpoint_is_bounded_and_exits_1() -> None:
    with HostileServer("drip", drip_s=1.0) as srv:
        r, wall = _run(["probe", "--base-url", srv.base_url, "--model", "m", "--api-key-env", "",
                        "--timeout", "2"], timeout=90)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert wall < 30


def test_probe_exits_1_for_an_unreachable_endpoint() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r, _ = _run(["probe", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--api-key-env", "",
                 "--timeout", "5"], timeout=90)
    assert r.returncode == 1 and "not usable" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_a_key_in_a_plan_api_key_env_is_refused_and_never_written(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[[configurations]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\npublished = 2026-03-01\n'
                    f'api_key_env = "{KEY}"\n', encoding="utf-8")
    rc = main(["sweep", "--plan", str(plan), "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "api_key_env" in err and KEY not in err and not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the redaction mechanism itself
KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=8,
               max_size=40)


@settings(max_examples=80, deadline=None)
@given(KEYS, st.text(max_size=60), st.text(max_size=60))
def test_redaction_removes_every_occurrence_at_any_depth(key: str, before: str, after: str) -> None:
    secrets.forget_secrets()
    try:
        secrets.register_secret(key)
        text = before + key + after + json.dumps(key) + key
        doc = {"a": [text, (text,)], text: {"b": text.encode()}, "n": 5}
        out = json.dumps(secrets.redact({k: v for k, v in doc.items() if k != text}) | {"k": secrets.redact(text)},
                         default=lambda b: b.decode())
        assert key not in out
        assert key.encode() not in secrets.redact(text.encode())
        assert secrets.redact(5) == 5 and secrets.redact(None) is None
    finally:
        secrets.forget_secrets()


def test_short_values_are_not_registered_and_url_spellings_are() -> None:
    secrets.forget_secrets()
    try:
        secrets.register_secret("abc")
        assert secrets.redact_text("abc abc") == "abc abc"
        secrets.register_secret("k/ey+with space")
        assert secrets.redact_text("q=k%2Fey%2Bwith%20space&p=k%2Fey%2Bwith+space") == "q=[REDACTED]&p=[REDACTED]"
    finally:
        secrets.forget_secrets()
