"""A misbehaving OpenAI-compatible server on loopback, for the runner's hostile-input tests.

``HostileServer(mode=..., models=...)``:

- ``mode="echo_key_401"``: every request is answered HTTP 401 with the Authorization header it
  carried echoed in the error body (as some gateways do), plain and JSON-escaped;
- ``mode="drip"``: a 200 whose declared body is dripped one byte per ``drip_s`` seconds, so a
  socket-read timeout never trips;
- ``mode="ok"``: a well-formed chat completion answering ``{"service": "ledger", "port": "7311"}``.

``models`` is the raw JSON document GET /models returns (any shape, e.g. ``[1]``); every request
is counted in ``requests`` (method, path).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer


class HostileServer(LoopbackServer):
    """Threaded loopback server; use as a context manager."""

    def __init__(self, mode: str = "ok", *, models: Any = None, drip_s: float = 1.0) -> None:
        self.mode = mode
        self.models = {"object": "list", "data": [{"id": "m"}]} if models is None else models
        self.drip_s = drip_s
        self.requests: list[tuple[str, str]] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.mode == "drip" and status == 200:
                    for i in range(len(body)):
                        if outer._stop.is_set():
                            return
                        self.wfile.write(body[i:i + 1])
                        self.wfile.flush()
                        time.sleep(outer.drip_s)
                else:
                    self.wfile.write(body)

            def _hostile(self) -> bool:
                if outer.mode != "echo_key_401":
                    return False
                auth = self.headers.get("authorization") or ""
                msg = f"Incorrect API key provided: {auth}. Key was {json.dumps(auth)}"
                self._send(401, json.dumps({"error": {"message": msg, "code": "invalid_api_key"}}).encode())
                return True

            def do_GET(self) -> None:
                outer.requests.append(("GET", self.path))
                if self._hostile():
                    return
                self._send(200, json.dumps(outer.models).encode())

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(n)
                outer.requests.append(("POST", self.path))
                if self._hostile():
                    return
                doc = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant",
                                                "content": '{"service": "ledger", "port": "7311"}'}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                self._send(200, json.dumps(doc).encode())

        self._listen(Handler)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        super().__exit__(*exc)
