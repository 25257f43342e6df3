"""Redaction of registered keys: the longest secret is replaced first (issue 32)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner import secrets
from analysis.runner.cli import main
from support.fault_proxy import EchoUpstream
from support.hostile_server import HostileServer


@pytest.fixture()
def registry() -> Iterator[None]:
    secrets.forget_secrets()
    yield
    secrets.forget_secrets()


@pytest.mark.parametrize("order", [("sk-abcd", "sk-abcd-EFGH-long"), ("sk-abcd-EFGH-long", "sk-abcd")])
def test_a_key_that_contains_another_key_is_never_half_redacted(registry: None, order: tuple[str, str]) -> None:
    # Plant: `sorted(_secrets, key=len)` (shortest first) in redact_text -> the short key is replaced
    # inside the long one and "-EFGH-long", a part of the long key, is written to disk.
    for key in order:
        secrets.register_secret(key)
    text = "auth: sk-abcd-EFGH-long; other: sk-abcd."
    assert secrets.redact_text(text) == "auth: [REDACTED]; other: [REDACTED]."
    assert secrets.redact({"k": [text]}) == {"k": ["auth: [REDACTED]; other: [REDACTED]."]}


# -------------------------------------------------------------------------------- key redaction
def test_redaction_covers_the_json_escaped_spelling_and_dict_keys_at_any_depth() -> None:
    # Plants: register_secret without json.dumps(value)[1:-1] -> the escaped spelling survived;
    # redact() without redact(k) for mapping keys -> a key used as a dict key survived.
    key = 'sk-"quoted"\\back'
    secrets.forget_secrets()
    try:
        secrets.register_secret(key)
        escaped = json.dumps(key)[1:-1]
        assert escaped != key
        assert secrets.redact_text(f"body: {escaped}") == "body: [REDACTED]"
        nested = {"a": [{"b": ({key: "v"},)}]}
        assert json.dumps(secrets.redact(nested)).count("REDACTED") == 1
        assert key not in json.dumps(secrets.redact(nested))
    finally:
        secrets.forget_secrets()


HOSTILE_KEY = "sk-HOSTILE-7c1d9e0f4a2b-never-write-me"


def _leaks(root: Path, *streams: str) -> list[str]:
    """Every file under root, and every stream, that holds the key in any spelling we redact."""
    spellings = [HOSTILE_KEY.encode(), json.dumps(HOSTILE_KEY)[1:-1].encode()]
    found = [str(p) for p in root.rglob("*") if p.is_file() and any(s in p.read_bytes() for s in spellings)]
    return found + [f"stream {i}" for i, s in enumerate(streams) if HOSTILE_KEY in s]


def _sweep(base_url: str, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--base-url", base_url, "--model", "m", "--published", "2026-03-01", "--family", "test",
            "--arms", "j,q", "--repeats", "1", "--out", str(out), "--quiet", "--backoff", "0",
            "--backoff-cap", "0", "--timeout", "5", *extra]


# ------------------------------------------------------------------ the redaction mechanism itself
KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=8,
               max_size=40)


# ------------------------------------------------------------------ the key
def test_key_echoed_in_401_bodies_is_redacted_from_every_artefact(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOSTILE_KEY", HOSTILE_KEY)
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


@pytest.mark.parametrize("value", [HOSTILE_KEY, "abcdEFGH1234567890xyzKEY"])
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


def test_a_key_in_a_plan_api_key_env_is_refused_and_never_written(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[[configurations]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\npublished = 2026-03-01\n'
                    f'api_key_env = "{HOSTILE_KEY}"\n', encoding="utf-8")
    rc = main(["sweep", "--plan", str(plan), "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "api_key_env" in err and HOSTILE_KEY not in err and not (tmp_path / "o").exists()


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

