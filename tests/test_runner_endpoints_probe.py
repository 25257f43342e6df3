"""Capability probe verdicts against scripted endpoints that behave like real serving stacks."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from analysis.runner.client import EndpointClient, EndpointConfig, describe_max_length
from analysis.runner.probe import apply, probe
from support.hostile_server import HostileServer
from support.paths import REPO
from support.scripted_server import Reply, ScriptedServer


def _probe(responder, **cfg: Any):  # type: ignore[no-untyped-def]
    with ScriptedServer(responder, model="acme/m") as srv:
        config = EndpointConfig(base_url=srv.base_url, model="acme/m", api_key_env=None, **cfg)
        report = asyncio.run(probe(config, max_declared=9600))
        return report, config, srv.requests


def _good_json() -> str:
    return json.dumps({"service": "ledger", "port": "7311"})


def openai_like(body: dict, i: int) -> Reply:
    rf = body.get("response_format")
    if rf and rf.get("type") == "json_object" and "schema" in rf:
        return Reply(status=400)  # OpenAI rejects the unknown field
    return Reply(_good_json() if rf else "OK")


def llama_cpp_like(body: dict, i: int) -> Reply:
    rf = body.get("response_format")
    if rf and rf.get("type") == "json_schema":
        return Reply(status=500)  # llama-cpp-python's pydantic literal error surfaces as HTTP 500
    if rf and "schema" in rf:
        props = rf["schema"]["properties"]
        if any(p.get("maxLength", 0) > 1500 for p in props.values()):
            return Reply(raw_body=b"", status=200)  # grammar compiler gives up; connection dropped
        return Reply(_good_json())
    return Reply("OK")


def test_openai_style_endpoint_gets_json_schema() -> None:
    report, _cfg, _reqs = _probe(openai_like)
    assert report.structured_mode == "json_schema" and report.schema_verdict == "json_schema_ok"
    assert report.max_length_mode == "schema" and report.seed_accepted and report.usable
    # the verdict is stored with the exact request that produced it
    v = next(v for v in report.verdicts if v.step == "json_schema")
    assert v.request["response_format"]["type"] == "json_schema" and v.request["seed"] == 0


def test_llama_cpp_style_endpoint_gets_json_object_schema_and_described_ceilings() -> None:
    report, cfg, _reqs = _probe(llama_cpp_like)
    assert report.structured_mode == "json_object_schema"
    assert report.schema_verdict == "json_object_schema_ok"
    assert report.max_length_mode == "describe"
    assert any(v.verdict == "schema_max_length_rejected" for v in report.verdicts)
    shaped = apply(cfg, report)
    client = EndpointClient(shaped)
    body = client.request_body([{"role": "user", "content": "x"}], max_tokens=5,
                               schema={"type": "object", "properties": {"s": {"type": "string", "maxLength": 9600}},
                                       "required": ["s"]})
    prop = body["response_format"]["schema"]["properties"]["s"]
    assert body["response_format"]["type"] == "json_object"
    assert "maxLength" not in prop and "At most 9600 characters." in prop["description"]


def test_reply_missing_a_required_property_is_nonconforming() -> None:
    def forgetful(body: dict, i: int) -> Reply:
        rf = body.get("response_format")
        return Reply(json.dumps({"service": "ledger"}) if rf else "OK")  # 'port' missing

    report, _, _ = _probe(forgetful)
    assert report.schema_verdict == "schema_advertised_reply_nonconforming"
    assert report.structured_mode == "json_schema"  # still measured, verdict disclosed


def test_no_structured_support_means_plain_requests() -> None:
    report, _, _ = _probe(lambda b, i: Reply(status=400) if b.get("response_format") else Reply("OK"))
    assert report.structured_mode == "none" and report.schema_verdict == "schema_unsupported"


def test_seed_rejected_is_recorded_and_dropped() -> None:
    report, cfg, _reqs = _probe(lambda b, i: Reply(status=400) if "seed" in b else
                               Reply(_good_json() if b.get("response_format") else "OK"))
    assert not report.seed_accepted and report.usable
    assert "seed" not in EndpointClient(apply(cfg, report)).request_body([], max_tokens=1)


def test_unroutable_parameters_are_probe_rejected() -> None:
    report, _, _ = _probe(lambda b, i: Reply(status=404))
    assert not report.usable
    assert report.verdicts[-1].verdict == "probe_rejected_no_endpoint_for_parameters"


def test_reasoning_that_cannot_be_disabled() -> None:
    def thinker(body: dict, i: int) -> Reply:
        doc = {"id": "x", "object": "chat.completion", "created": 0, "model": "acme/m",
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "OK", "reasoning": "let me think"}}]}
        return Reply(raw_body=json.dumps(doc).encode())

    report, _, reqs = _probe(thinker)
    assert report.reasoning_verdict == "probe_rejected_reasoning_not_disableable" and not report.usable
    # every dialect was tried, with its own request shape
    assert any(r.get("reasoning") == {"enabled": False} for r in reqs)
    assert any(r.get("chat_template_kwargs") == {"enable_thinking": False} for r in reqs)
    assert any(r.get("reasoning_effort") == "none" for r in reqs)


def test_describe_max_length_keeps_everything_else() -> None:
    rf = {"type": "json_object", "schema": {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 1920, "description": "Field a."},
        "b": {"type": "array", "items": {"type": "string"}}}, "required": ["a", "b"]}}
    out = describe_max_length(rf)
    assert out["schema"]["properties"]["a"] == {"type": "string", "description": "Field a. At most 1920 characters."}
    assert out["schema"]["properties"]["b"] == rf["schema"]["properties"]["b"]
    assert out["schema"]["required"] == ["a", "b"] and rf["schema"]["properties"]["a"]["maxLength"] == 1920


# ------------------------------------------------------------------ a probe that fails claims nothing unobserved
def _closed_port() -> int:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_endpoint_is_unreachable_and_claims_no_verdict() -> None:
    """No answer: the outcome is 'unreachable', no request shape or seed verdict is reported, and only
    the two requests sent (/models and the plain one) appear as verdicts."""
    cfg = EndpointConfig(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="m", api_key_env=None, seed=7,
                         timeout_s=5)
    report = asyncio.run(probe(cfg, max_declared=9600))
    assert report.outcome == "unreachable" and not report.usable
    assert report.seed_accepted is None  # never observed (the old report said True)
    assert {report.structured_mode, report.schema_verdict, report.reasoning_off, report.reasoning_verdict,
            report.max_length_mode} == {"not_probed"}
    assert [(v.step, v.verdict) for v in report.verdicts] == [("models", "models_unavailable"),
                                                              ("plain", "probe_unreachable")]
    assert set(report.observed_json()) == {"outcome", "base_url", "model", "usable", "verdicts"}


def test_rejected_endpoint_is_rejected_and_claims_no_seed_verdict() -> None:
    """Answered with an error to the plain request with and without the seed: seed acceptance unknown."""
    report, _, reqs = _probe(lambda b, i: Reply(status=404), seed=3)
    assert report.outcome == "rejected" and report.seed_accepted is None
    assert report.structured_mode == "not_probed" and len(reqs) == 2  # plain, then without the seed


def test_probe_command_says_unreachable_first_and_prints_only_what_it_observed(
        capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.runner.cli import main

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    assert main(["probe", "--base-url", url, "--model", "m", "--api-key-env", "", "--timeout", "5"]) == 1
    cap = capsys.readouterr()
    assert cap.err.startswith(f"error: unreachable: {url} did not answer"), cap.err
    assert "request_shape" not in cap.err and "Traceback" not in cap.err
    printed = json.loads(cap.out)
    assert printed["outcome"] == "unreachable" and printed["usable"] is False
    assert "seed_accepted" not in cap.out and "structured_mode" not in cap.out and "json_schema" not in cap.out
    assert [v["verdict"] for v in printed["verdicts"]] == ["models_unavailable", "probe_unreachable"]


def test_sweep_against_an_unreachable_endpoint_says_so(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.runner.cli import main

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    rc = main(["sweep", "--base-url", url, "--model", "m", "--published", "2026-03-01", "--arms", "j",
               "--repeats", "1", "--out", str(tmp_path / "o"), "--quiet", "--api-key-env", "", "--timeout", "5"])
    err = capsys.readouterr().err
    assert rc == 1 and f"probe unreachable: {url} did not answer" in err, err  # as probe: the endpoint failed
    assert "\nerror: probe unreachable" in err and "CheckError" not in err and "CliError" not in err  # no class name
    assert "seed_accepted" not in err


# ------------------------------------------------------------------ time bounds
def _run(argv: list[str], timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "analysis.runner", *argv], cwd=REPO, env=env, capture_output=True,
                       check=False, text=True, timeout=timeout)
    return r, time.monotonic() - t0


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
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


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
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

