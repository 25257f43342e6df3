"""An OpenAI-compatible HTTP server on loopback that answers through a responder (stdlib http.server).

``ResponderServer`` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` from a daemon
thread on a free 127.0.0.1 port, records every request body, and answers through a *responder*
``(body, call_index) -> Reply`` (analysis.runner.simulate.replies.Reply): a status other than 200
is sent as an OpenAI error body, ``raw_body`` is sent as is. A responder that raises is answered
500 and its error kept in ``errors`` (loud, never a hang). The simulated summariser and the test
doubles (tests/support/scripted_server.py) are served by it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from analysis.runner.simulate.replies import Reply
from analysis.safeio import loads_json

Responder = Callable[[dict[str, Any], int], Reply]


class LoopbackServer:
    """Context manager around ``ThreadingHTTPServer(("127.0.0.1", 0), handler)``; ``base_url`` ends in /v1."""

    def _listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class ResponderServer(LoopbackServer):
    """Threaded loopback chat-completions server answering through ``responder``; a context manager."""

    def __init__(self, responder: Responder, *, model: str = "scripted/model-1", keep_requests: bool = True) -> None:
        self.responder = responder
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.calls = 0
        self.keep_requests = keep_requests
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._listen(_handler(self))

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes, Sequence[tuple[str, str]]]:
        """Status, body and headers of the reply to one chat-completions request."""
        with self._lock:
            index = self.calls
            self.calls += 1
            if self.keep_requests:
                self.requests.append(body)
        try:
            reply = self.responder(body, index)
        except Exception as exc:  # a broken responder must be loud, not a hang
            self.errors.append(repr(exc))
            reply = Reply(status=500)
        if reply.raw_body is not None:
            return reply.status, reply.raw_body, reply.headers
        if reply.status != 200:
            err = {"error": {"message": f"scripted status {reply.status}", "type": "scripted"}}
            return reply.status, json.dumps(err).encode(), reply.headers
        text = reply.content or ""
        doc: dict[str, Any] = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                "finish_reason": reply.finish_reason,
            }],
            "usage": {"prompt_tokens": 1, "completion_tokens": max(1, len(text) // 4),
                      "total_tokens": 1 + max(1, len(text) // 4)},
        }
        if reply.provider:
            doc["provider"] = reply.provider
        return 200, json.dumps(doc, ensure_ascii=False).encode("utf-8"), reply.headers


def _handler(server: ResponderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # zero-latency: no 40 ms delayed-ACK stalls

        def log_message(self, *args: Any) -> None:  # silence
            return

        def _send(self, status: int, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                body = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "local"}]}
                self._send(200, json.dumps(body).encode())
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length", "0"))
            try:
                body = loads_json(self.rfile.read(n) or b"{}", "request body")
            except ValueError:
                self._send(400, b'{"error": {"message": "body is not JSON"}}')
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            self._send(*server.answer(body))

    return Handler
