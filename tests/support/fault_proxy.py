"""A fault-injecting loopback HTTP proxy for runner tests.

It sits between the runner and an upstream OpenAI-compatible server (the scripted server) and, per
request, either relays it or injects one infrastructure fault:

- ``reset``: the connection is closed with an RST and no reply;
- ``timeout``: the proxy holds the request for ``hang_s`` seconds and then closes without reply;
- ``5xx``: HTTP 503 with a JSON error body;
- ``429``: HTTP 429 with ``Retry-After`` (seconds);
- ``truncated``: the upstream reply is relayed with its full Content-Length but only half its body.

Which request gets which fault comes from ``plan`` (a callable of the 0-based request index and the
request body returning a fault name or None) or, by default, a seeded random draw at ``rate``.
Usage::

    with FaultProxy(upstream="http://127.0.0.1:8001", rate=0.2, seed=7) as proxy:
        base_url = proxy.base_url  # ends in /v1
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from urllib.parse import urlsplit

FAULTS = ("reset", "timeout", "5xx", "429", "truncated")


class FaultProxy:
    """Loopback proxy that injects infrastructure faults in front of an upstream server."""

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.0,
        seed: int = 0,
        faults: tuple[str, ...] = FAULTS,
        plan: Callable[[int, bytes], str | None] | None = None,
        hang_s: float = 5.0,
        retry_after: str = "0",
        only_path_suffix: str = "/chat/completions",
    ) -> None:
        parts = urlsplit(upstream)
        self.up_host = parts.hostname or "127.0.0.1"
        self.up_port = parts.port or 80
        self.rate = rate
        self.rng = random.Random(seed)
        self.faults = faults
        self.plan = plan
        self.hang_s = hang_s
        self.retry_after = retry_after
        self.only_path_suffix = only_path_suffix
        self.counts: Counter[str] = Counter()
        self.requests = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fault proxy did not start within 10 s")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)

        async def boot() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        loop.run_until_complete(boot())
        loop.run_forever()
        loop.close()

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            me = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not me]
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(shutdown(), loop)
        self._thread.join(timeout=10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- request handling ------------------------------------------------------------------------
    def _choose(self, index: int, path: str, body: bytes) -> str | None:
        if not path.endswith(self.only_path_suffix):
            return None
        if self.plan is not None:
            return self.plan(index, body)
        with self._lock:
            if self.rng.random() < self.rate:
                return self.rng.choice(self.faults)
        return None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                with self._lock:
                    index = self.requests
                    self.requests += 1
                fault = self._choose(index, path, body)
                if fault is not None:
                    with self._lock:
                        self.counts[fault] += 1
                if fault == "reset":
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.close()
                    return
                if fault == "timeout":
                    await asyncio.sleep(self.hang_s)
                    writer.close()
                    return
                if fault == "5xx":
                    self._reply(writer, 503, b'{"error":{"message":"injected upstream failure"}}')
                    await writer.drain()
                    continue
                if fault == "429":
                    self._reply(writer, 429, b'{"error":{"message":"injected rate limit"}}',
                                extra={"Retry-After": self.retry_after})
                    await writer.drain()
                    continue
                status, rheaders, rbody = await self._forward(method, path, headers, body)
                if fault == "truncated":
                    self._reply(writer, status, rbody[: len(rbody) // 2], extra=rheaders, length=len(rbody))
                    await writer.drain()
                    writer.close()
                    return
                self._reply(writer, status, rbody, extra=rheaders)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if not writer.is_closing():
                writer.close()

    @staticmethod
    def _reply(writer: asyncio.StreamWriter, status: int, body: bytes, *, extra: dict[str, str] | None = None,
               length: int | None = None) -> None:
        reason = {200: "OK", 429: "Too Many Requests", 503: "Service Unavailable"}.get(status, "Status")
        hdrs = {"Content-Type": "application/json"}
        for k, v in (extra or {}).items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-type"):
                hdrs[k] = v
        hdrs["Content-Length"] = str(len(body) if length is None else length)
        out = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
        writer.write(out.encode("latin-1") + body)

    async def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes
                       ) -> tuple[int, dict[str, str], bytes]:
        r, w = await asyncio.open_connection(self.up_host, self.up_port)
        fwd = {k: v for k, v in headers.items() if k not in ("connection", "content-length", "host")}
        fwd["host"] = f"{self.up_host}:{self.up_port}"
        fwd["connection"] = "close"
        fwd["content-length"] = str(len(body))
        req = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fwd.items()) + "\r\n"
        w.write(req.encode("latin-1") + body)
        await w.drain()
        raw = await r.read()
        w.close()
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        rheaders: dict[str, str] = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                rheaders[k.strip()] = v.strip()
        if any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in rheaders.items()):
            rest = _dechunk(rest)
        return status, rheaders, rest


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return bytes(out)


def counts_json(proxy: FaultProxy) -> str:
    """The injected-fault tally as JSON (for test diagnostics)."""
    return json.dumps({"requests": proxy.requests, **proxy.counts}, sort_keys=True)


class EchoUpstream:
    """A minimal zero-latency OpenAI-compatible upstream for client/ledger tests.

    It answers every chat completion with ``echo:<sha256 of the last message>[:12]``, reports
    ``served_model`` (default: the requested model) and ``provider`` when given, and keeps every
    request body and Authorization header it saw (so tests can check what was sent).
    The protocol-level test double is runner-protocol's scripted server; this one only echoes.
    """

    def __init__(self, *, served_model: str | None = None, provider: str | None = None,
                 latency_s: float = 0.0) -> None:
        self.served_model = served_model
        self.provider = provider
        self.latency_s = latency_s
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []

    def start(self) -> EchoUpstream:
        import hashlib
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:
                body = json.dumps({"object": "list", "data": [{"id": outer.served_model or "m",
                                                               "context_length": 8192}]}).encode()
                self._send(200, body)

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length", "0"))
                req = json.loads(self.rfile.read(n))
                outer.bodies.append(req)
                outer.auth.append(self.headers.get("authorization"))
                if outer.latency_s:
                    time.sleep(outer.latency_s)
                last = req["messages"][-1]["content"]
                text = "echo:" + hashlib.sha256(last.encode()).hexdigest()[:12]
                resp = {"id": "x", "object": "chat.completion", "created": 0,
                        "model": outer.served_model or req.get("model"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}
                if outer.provider:
                    resp["provider"] = outer.provider
                self._send(200, json.dumps(resp).encode())

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._t = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._t.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> EchoUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
