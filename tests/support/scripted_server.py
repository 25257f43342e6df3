"""A scripted OpenAI-compatible HTTP server on loopback: the test double for a model.

``ScriptedServer`` serves ``POST /v1/chat/completions`` and ``GET /v1/models``
from a thread (stdlib ``http.server``), records every request body, and answers
through a *responder* ``(body, call_index) -> Reply``. ``MemorizingModel`` is a
deterministic responder that knows the fixture: a fold carries forward every
graded value it can see in its prompt (optionally forgetting some), shaped as
the request asks (JSON for the schema in ``response_format``, five headings for
the shared heading prompt, prose otherwise); the recall turn answers
``label: value`` for every value present in the carrier it is given. Scripted
faults (malformed JSON, length cuts, refusals, empty replies, HTTP errors,
truncated bodies) are injected with ``faults``.

``OpenAIBackend`` is the minimal test backend: the official ``openai`` client
against any base URL, mapping transport and 5xx/429 errors to
``InfrastructureFault``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import openai

from analysis.runner.fixture import Fixture
from analysis.runner.graders import RECALL_SYSTEM_PROMPT
from analysis.runner.protocol import ChatReply, ChatRequest, InfrastructureFault
from support.loopback import LoopbackServer

HEADINGS = (
    "Identifiers and values",
    "Configuration and endpoints",
    "People and ownership",
    "Schedule and deadlines",
    "Open work",
)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted HTTP answer."""

    content: str | None = ""
    finish_reason: str = "stop"
    refusal: str | None = None
    status: int = 200
    model: str | None = None
    provider: str | None = None
    raw_body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


Responder = Callable[[dict[str, Any], int], Reply]


class ScriptedServer(LoopbackServer):
    """Threaded loopback server; use as a context manager."""

    def __init__(self, responder: Responder, *, model: str = "scripted/model-1") -> None:
        self.responder = responder
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        server = self

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
                    body = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "test"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                with server._lock:
                    index = len(server.requests)
                    server.requests.append(body)
                try:
                    reply = server.responder(body, index)
                except Exception as exc:  # a broken script must be loud, not a hang
                    server.errors.append(repr(exc))
                    reply = Reply(status=500)
                if reply.raw_body is not None:
                    self._send(reply.status, reply.raw_body, reply.headers)
                    return
                if reply.status != 200:
                    err = {"error": {"message": f"scripted status {reply.status}", "type": "scripted"}}
                    self._send(reply.status, json.dumps(err).encode(), reply.headers)
                    return
                text = reply.content or ""
                doc = {
                    "id": f"chatcmpl-{index}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": reply.model or server.model,
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
                self._send(200, json.dumps(doc, ensure_ascii=False).encode("utf-8"), reply.headers)

        self._listen(Handler)



# ---------------------------------------------------------------- the scripted model
def _purpose(body: dict[str, Any]) -> str:
    return "recall" if body["messages"][0]["content"] == RECALL_SYSTEM_PROMPT else "fold"


class MemorizingModel:
    """Deterministic responder that carries the graded values it sees.

    ``forget``: labels never carried by folds (the fact is lost in the fold).
    ``skip_in_answer``: labels the recall turn answers ``unknown`` even when the
    carrier holds them (carrier-present, answer-missed). ``faults``: optional
    ``(body, call_index, purpose) -> Reply | None`` overriding the default reply.
    """

    def __init__(
        self,
        fixture: Fixture,
        *,
        forget: Sequence[str] = (),
        skip_in_answer: Sequence[str] = (),
        faults: Callable[[dict[str, Any], int, str], Reply | None] | None = None,
        provider: str | None = None,
    ) -> None:
        self.facts = [(p.label or "", p.value) for p in fixture.graded]
        self.forget = set(forget)
        self.skip = set(skip_in_answer)
        self.faults = faults
        self.provider = provider
        self.fold_calls = 0

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        purpose = _purpose(body)
        if self.faults is not None:
            override = self.faults(body, index, purpose)
            if override is not None:
                return override
        user = body["messages"][-1]["content"]
        seen = [(label, v) for label, v in self.facts if v in user]
        if purpose == "recall":
            lines = [f"{label}: {v if (label, v) in seen and label not in self.skip else 'unknown'}"
                     for label, v in self.facts]
            return Reply("\n".join(lines), provider=self.provider)
        self.fold_calls += 1
        kept = [f"- {label}: {v}" for label, v in seen if label not in self.forget]
        return Reply(self._shape(body, kept), provider=self.provider)

    def _shape(self, body: dict[str, Any], kept: list[str]) -> str:
        rf = body.get("response_format")
        system = body["messages"][0]["content"]
        if rf is None:
            if "five headings" in system:
                first = "\n".join(kept) or "none"
                return "\n\n".join(f"## {h}\n{first if i == 0 else 'none'}" for i, h in enumerate(HEADINGS))
            return "So far the session recorded: " + "; ".join(k[2:] for k in kept)
        schema = rf.get("json_schema", {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
        if schema is None:  # JSON mode without a schema: the schema travels in the prompt
            schema = json.loads(body["messages"][-1]["content"].split("\nSchema:\n", 1)[1])
        obj: dict[str, Any] = {}
        first_string = True
        for name, prop in schema["properties"].items():
            if prop["type"] == "string":
                obj[name] = ("\n".join(kept) or "none") if first_string else "none"
                first_string = False
            elif prop["type"] == "array":
                obj[name] = ["maintenance"]
            else:
                obj[name] = False
        return json.dumps(obj, ensure_ascii=False)


# ---------------------------------------------------------------- test backends
class InProcessBackend:
    """Zero-latency ChatBackend calling a responder directly (no HTTP); for property tests and benchmarks."""

    def __init__(self, responder: Responder, model: str = "inprocess/model") -> None:
        self.responder = responder
        self.model = model
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatReply:
        body: dict[str, Any] = {"messages": list(request.messages), "response_format": request.response_format,
                                "max_tokens": request.max_tokens}
        reply = self.responder(body, self.calls)
        self.calls += 1
        if reply.status != 200 or reply.raw_body is not None:
            raise InfrastructureFault(f"http_{reply.status}", "scripted")
        return ChatReply(reply.content or "", reply.finish_reason, reply.model or self.model, reply.provider,
                         None, reply.refusal)


class OpenAIBackend:
    """Minimal ChatBackend on the official client (tests and benchmarks only)."""

    def __init__(self, base_url: str, model: str = "scripted/model-1", *, timeout: float = 30.0) -> None:
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key="test-key-not-secret", max_retries=0,
                                         timeout=timeout)
        self.model = model

    async def complete(self, request: ChatRequest) -> ChatReply:
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(request.messages),
                                  "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.response_format is not None:
            kwargs["response_format"] = request.response_format
        try:
            resp = await self.client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise InfrastructureFault(f"http_{exc.status_code}", str(exc)[:200]) from exc
        except openai.APIConnectionError as exc:
            raise InfrastructureFault("connection", str(exc)[:200]) from exc
        except (openai.APIError, ValueError) as exc:
            raise InfrastructureFault("bad_body", str(exc)[:200]) from exc
        if not resp.choices:
            raise InfrastructureFault("bad_body", "no choices")
        choice = resp.choices[0]
        extra = resp.model_extra or {}
        usage = resp.usage.model_dump() if resp.usage else None
        return ChatReply(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason,
            served_model=resp.model,
            provider=extra.get("provider"),
            usage={k: v for k, v in (usage or {}).items() if isinstance(v, int)} or None,
            refusal=getattr(choice.message, "refusal", None),
        )

    async def aclose(self) -> None:
        await self.client.close()
