"""`/models` goes through the bounded, depth-checked reader (issue 31, item 7).

The probe read GET /models with plain httpx and `r.json()`: a reply of 1 GiB or one that never
ends grew in memory until MemoryError (or the deadline), and one nested 100,000 deep raised
RecursionError out of the probe.  Now the body stops at the reply limit and the nesting depth is
checked before parsing; either is the verdict `models_unavailable`/`models_malformed` with a
reason, and the probe goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from analysis.runner.cli import main
from analysis.runner.client import EndpointConfig
from analysis.runner.probe import _models
from support.hostile_server import HostileServer
from support.loopback import LoopbackServer


class ModelsServer(LoopbackServer):
    """GET /models answered as `mode` says: deep, endless (chunked, never ends), huge (declared 1 GiB),
    deep_text (deep nesting served as text/plain) or ok."""

    def __init__(self, mode: str, payload: bytes = b"") -> None:
        self.mode = mode
        self.payload = payload
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _answer(self) -> None:
                if outer.mode in ("deep", "deep_text"):
                    body = b'{"object": "list", "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
                    kind = "application/json" if outer.mode == "deep" else "text/plain"
                    self.send_response(200)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if outer.mode in ("ok", "ids"):
                    body = (b'{"object": "list", "data": [{"id": "m", "context_length": 4096}]}' if outer.mode == "ok"
                            else outer.payload)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if outer.mode == "huge":
                    self.send_header("Content-Length", str(1 << 30))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b'{"data": [' + b'"x",' * 16_000
                block = chunk if outer.mode == "huge" else b"%x\r\n%s\r\n" % (len(chunk), chunk)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:  # never ends on its own (bounded for the test's sake)
                    self.wfile.write(block)

        self._listen(Handler)


def _probe_models(mode: str, payload: bytes = b"") -> tuple[Any, float]:
    with ModelsServer(mode, payload) as srv:
        cfg = EndpointConfig(base_url=srv.base_url, model="m", api_key_env=None, timeout_s=15.0)
        t0 = time.monotonic()
        got = asyncio.run(_models(cfg))
        return got, time.monotonic() - t0


@pytest.mark.parametrize("mode", ["deep", "deep_text"])
def test_models_nested_100000_deep_is_a_verdict_not_a_recursion_error(mode: str) -> None:
    (ids, ctx, verdict), _ = _probe_models(mode)  # before the fix: RecursionError out of the probe
    assert ids == () and ctx is None
    assert verdict.verdict in ("models_unavailable", "models_malformed")
    assert "nest" in verdict.detail.lower() or "deep" in verdict.detail.lower(), verdict.detail


@pytest.mark.parametrize("mode", ["endless", "huge"])
def test_models_reply_without_end_stops_at_the_reply_limit(mode: str) -> None:
    (ids, _ctx, verdict), took = _probe_models(mode)
    # before the fix: read into memory until the 15 s deadline (or MemoryError at 1 GiB)
    assert ids == () and verdict.verdict == "models_unavailable"
    assert "MiB" in verdict.detail and took < 10, (verdict.detail, took)


def test_models_well_formed_still_lists_and_reads_the_context_length() -> None:
    (ids, ctx, verdict), _ = _probe_models("ok")
    assert ids == ("m",) and ctx == 4096 and verdict.verdict == "models_listed"


def test_embedded_readiness_check_reads_the_status_only() -> None:
    from analysis.runner.embedded import EmbeddedServer

    with ModelsServer("endless") as srv:
        server = object.__new__(EmbeddedServer)  # no llama.cpp needed: only the readiness check
        server.port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        t0 = time.monotonic()
        assert server.answers(timeout=5)  # before: httpx.get read the endless body into memory
        assert time.monotonic() - t0 < 5


def test_models_keeps_only_string_ids_within_bounds_and_counts_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from analysis.runner import probe as probe_mod

    entries: list[dict[str, Any]] = [{"id": "m", "context_length": 4096}, {"id": 7}, {"id": {"x": [1]}},
                                     {"id": ["a"]}, {"id": True}, {"id": ""}, {"id": "L" * 300}]
    entries += [{"id": f"model-{i}"} for i in range(2_000)]
    parses: list[int] = []
    real = probe_mod.loads_json
    monkeypatch.setattr(probe_mod, "loads_json", lambda *a, **k: parses.append(1) or real(*a, **k))
    (ids, ctx, verdict), _ = _probe_models("ids", json.dumps({"data": entries}).encode())
    # before: every id kept, at any length, and str() of objects and numbers ("7", "{'x': [1]}", "True")
    assert len(ids) == 1_000 and ids[0] == "m" and all(isinstance(i, str) and 0 < len(i) <= 256 for i in ids)
    assert "7" not in ids and "True" not in ids and ctx == 4096
    # six ids that are not usable strings, and 1,001 past the cap
    assert verdict.verdict == "models_malformed" and "1007 model id(s) dropped" in verdict.detail
    assert parses == [1]  # the body is parsed once (the transport's own JSON check is off here)


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

