"""A scripted OpenAI-compatible HTTP server on loopback: the test double for a model.

``ScriptedServer`` is the package's loopback server
(analysis.runner.simulate.server.ResponderServer: ``POST /v1/chat/completions`` and
``GET /v1/models`` from a thread, every request body recorded), answering through a
*responder* ``(body, call_index) -> Reply``; replies are shaped by
analysis.runner.simulate.replies, which the simulated summariser shares. ``MemorizingModel`` is a
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

from collections.abc import Callable, Sequence
from typing import Any

import openai

from analysis.runner.fixture import Fixture
from analysis.runner.protocol import ChatReply, ChatRequest, InfrastructureFault
from analysis.runner.simulate.replies import HEADINGS, Reply, purpose_of, shape_reply
from analysis.runner.simulate.server import Responder, ResponderServer

__all__ = ["HEADINGS", "InProcessBackend", "MemorizingModel", "OpenAIBackend", "Reply", "Responder",
           "ScriptedServer"]


class ScriptedServer(ResponderServer):
    """Threaded loopback server (analysis.runner.simulate.server); use as a context manager."""


# ---------------------------------------------------------------- the scripted model
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
        purpose = purpose_of(body)
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
        return shape_reply(body, kept)


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
