"""Endpoint client for any OpenAI-compatible chat-completions base URL.

Methods note: built on the official `openai` AsyncOpenAI client with its own retries switched off
(max_retries=0): retries are the sweep's job, because each failed attempt must stay in the data as
an invalid row.  The API key is read from an environment variable at construction and held only
inside the openai client; nothing this module returns or records contains it (request records are
built from the body we send, never from headers).  Temperature is fixed per sweep; a seed is sent
when the probe found the endpoint accepts one, and `seed_sent` is recorded on every call either way.
The request shape for schema arms follows the probe verdict (`structured_mode`): OpenAI's
`json_schema` response format, llama.cpp's `json_object` + `schema`, or no response_format.
Every reply records the model (`model`) and provider (`provider`, as gateways such as OpenRouter
report it) that actually served it, for the pin audit.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from analysis.runner.bounded_http import bounded_http_client
from analysis.runner.protocol import InfrastructureFault
from analysis.runner.secrets import read_api_key, redact_text

STRUCTURED_MODES = ("json_schema", "json_object_schema", "none")
REASONING_OFF = ("none", "openrouter", "effort", "chat_template")


class ClientConfigError(ValueError):
    """The endpoint configuration is unusable as given."""


_CREDENTIAL_QUERY = ("key", "token", "secret", "password", "auth", "signature", "sig")


def base_url_problem(url: object) -> str | None:
    """Why ``url`` cannot be a base URL (credentials in it, a query or fragment), or None.

    A key in the URL would be written into the ledger, the run manifest and the published
    package; a query string would be glued in front of ``/chat/completions``.
    """
    if not isinstance(url, str):
        return f"base URL {url!r} is not a string; write e.g. http://127.0.0.1:8080/v1"
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return ("the base URL carries credentials (user:password@host); they would be written into the "
                "ledger and the published package. Remove them and put the key in an environment variable "
                "named by --api-key-env")
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        names = [p.split("=", 1)[0].lower() for p in parts.query.split("&") if p]
        if any(any(c in n for c in _CREDENTIAL_QUERY) for n in names):
            return ("the base URL carries a key in its query string; it would be written into the ledger and "
                    "the published package. Remove it and put the key in an environment variable named by "
                    "--api-key-env")
        return ("the base URL has a query string or fragment; the request path is appended to the base URL, "
                "so write the URL without '?' or '#' (e.g. http://127.0.0.1:8080/v1)")
    return None


class InfraFault(InfrastructureFault):
    """An infrastructure fault: the endpoint, network or gateway failed, not the arm."""

    def __init__(self, kind: str, detail: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(kind, detail)
        self.kind = kind
        """Fault class: connection, timeout, http_5xx, http_429, http_4xx, truncated, pin_violation,
        record_too_long (the ledger could not hold the request, reply or attempt)."""
        self.detail = detail
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class EndpointConfig:
    """Everything that shapes a request to one served configuration (never the key itself)."""

    base_url: str
    """OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."""
    model: str
    """Model id sent in every request."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; None for keyless local servers."""
    temperature: float = 0.0
    """Sampling temperature, fixed for the whole sweep."""
    seed: int | None = 0
    """Seed to send; None sends none."""
    send_seed: bool = True
    """Whether the endpoint accepts a seed (probe verdict); recorded on every call."""
    timeout_s: float = 300.0
    """Total deadline of one call (connect to last byte); a call exceeding it is an infrastructure fault."""
    structured_mode: str = "json_schema"
    """How schema arms ask for structure: json_schema, json_object_schema (llama.cpp) or none."""
    reasoning_off: str = "none"
    """How reasoning is disabled: none (not sent), openrouter, effort, chat_template."""
    provider_order: tuple[str, ...] = ()
    """Gateway provider pin (OpenRouter-style `provider.order`); empty for no pin."""
    allow_fallbacks: bool | None = None
    """Gateway fallback setting sent with the pin; None sends none."""
    quantization: str | None = None
    """Pinned quantization (sent as `provider.quantizations` when a pin is given)."""
    max_length_mode: str = "schema"
    """Declared per-field ceilings: `schema` sends maxLength; `describe` moves it into the field
    description (probe verdict schema_max_length_rejected, e.g. llama.cpp's grammar limit)."""
    accept_served_models: tuple[str, ...] = ()
    """Served model ids accepted besides `model` itself (aliases the endpoint reports)."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Further JSON body fields, passed through verbatim and recorded."""

    def __post_init__(self) -> None:
        if self.structured_mode not in STRUCTURED_MODES:
            raise ClientConfigError(f"structured_mode {self.structured_mode!r}; use one of {STRUCTURED_MODES}")
        if self.max_length_mode not in ("schema", "describe"):
            raise ClientConfigError(f"max_length_mode {self.max_length_mode!r}; use schema or describe")
        if not (self.timeout_s > 0 and self.timeout_s < float("inf")):
            raise ClientConfigError(f"timeout_s {self.timeout_s!r}; use a finite number of seconds > 0")
        if self.reasoning_off not in REASONING_OFF:
            raise ClientConfigError(f"reasoning_off {self.reasoning_off!r}; use one of {REASONING_OFF}")
        problem = base_url_problem(self.base_url)
        if problem:
            raise ClientConfigError(problem)

    def pin_body(self) -> dict[str, Any]:
        """The gateway routing fields (empty without a pin)."""
        prov: dict[str, Any] = {}
        if self.provider_order:
            prov["order"] = list(self.provider_order)
        if self.allow_fallbacks is not None:
            prov["allow_fallbacks"] = self.allow_fallbacks
        if self.quantization and self.provider_order:
            prov["quantizations"] = [self.quantization]
        return {"provider": prov} if prov else {}


@dataclass(frozen=True, slots=True)
class CallResult:
    """One completed chat call as the sweep records it."""

    text: str
    """Assistant message content ('' when the endpoint returned none)."""
    finish_reason: str | None
    """Finish reason as reported (stop, length, ...)."""
    served_model: str | None
    """Model id the response reports."""
    served_provider: str | None
    """Provider the response reports (gateways), else None."""
    prompt_tokens: int | None
    """Prompt tokens the endpoint counted, when reported."""
    completion_tokens: int | None
    """Completion tokens the endpoint counted, when reported."""
    seed_sent: bool
    """Whether a seed was in the request."""
    latency_s: float
    """Wall time of the call."""
    reasoning_chars: int
    """Characters of reasoning content the reply carried (0 when none)."""
    refusal: str | None = None
    """Structured-output refusal text, when the API reports one."""


def _reasoning_fields(mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level kwargs, extra_body) that disable reasoning in the given dialect."""
    if mode == "openrouter":
        return {}, {"reasoning": {"enabled": False}}
    if mode == "effort":
        return {"reasoning_effort": "none"}, {}
    if mode == "chat_template":
        return {}, {"chat_template_kwargs": {"enable_thinking": False}}
    return {}, {}


def response_format_for(mode: str, schema: Mapping[str, Any] | None, name: str = "carrier") -> dict[str, Any] | None:
    """The response_format a schema arm sends under a structured mode; None for plain arms."""
    if schema is None or mode == "none":
        return None
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": dict(schema)}}
    return {"type": "json_object", "schema": dict(schema)}


def describe_max_length(node: Any) -> Any:
    """A copy of a response_format/schema with every `maxLength` moved into its description.

    Methods note: the declared ceiling stays declared to the model ("at most N characters") but is
    no longer a grammar constraint; used only where the probe found the endpoint cannot compile it.
    """
    if isinstance(node, list):
        return [describe_max_length(x) for x in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: describe_max_length(v) for k, v in node.items() if k != "maxLength"}
    if "maxLength" in node and isinstance(node["maxLength"], int):
        note = f"At most {node['maxLength']} characters."
        out["description"] = (str(node.get("description", "")).rstrip() + " " + note).strip()
    return out


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    val = headers.get("retry-after")
    if val is None:
        return None
    try:
        return max(0.0, float(val))
    except ValueError:
        return None


class EndpointClient:
    """Async chat client for one endpoint configuration."""

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        key = read_api_key(config.api_key_env)  # registered for redaction from every written artefact
        # Local servers need no key; the openai client insists on a non-empty string.
        self._client = AsyncOpenAI(
            api_key=key or "unused-local",
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
            http_client=bounded_http_client(timeout=config.timeout_s),  # bodies bounded, no redirects
        )

    def request_body(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "carrier",
        response_format: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """The exact JSON body sent (no headers, hence no key): recorded in the ledger.

        A ready `response_format` (shaped by the protocol for this endpoint's style) wins over
        `schema`, which is shaped here by `structured_mode`.  `seed` overrides the sweep seed for
        this request (per-repeat seeds); it is sent only where the endpoint accepts seeds.
        """
        cfg = self.config
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": [dict(m) for m in messages],
            "temperature": cfg.temperature,
            "max_tokens": max_tokens,
        }
        use_seed = cfg.seed if seed is None else seed
        if cfg.send_seed and use_seed is not None:
            body["seed"] = use_seed
        fmt = dict(response_format) if response_format is not None else \
            response_format_for(cfg.structured_mode, schema, schema_name)
        if fmt is not None:
            if cfg.max_length_mode == "describe":
                fmt = describe_max_length(fmt)
            body["response_format"] = fmt
        top, extra = _reasoning_fields(cfg.reasoning_off)
        body.update(top)
        body.update(extra)
        body.update(cfg.pin_body())
        body.update(dict(cfg.extra_body))
        return body

    async def send(self, body: Mapping[str, Any]) -> CallResult:
        """Send a body built by `request_body`; raise InfraFault for infrastructure failures."""
        t0 = time.perf_counter()
        try:
            # the documented low-level call of the official client: the body is already the exact JSON we
            # record, so the SDK's per-parameter transformation (about 2 ms per request) is skipped.
            # httpx's timeout bounds each socket read only (a server dripping a byte a second never trips
            # it), so the whole call also runs under one total deadline.
            async with asyncio.timeout(self.config.timeout_s):
                resp = await self._client.post("/chat/completions", body=dict(body), cast_to=ChatCompletion)
        except TimeoutError as exc:
            raise InfraFault("timeout", f"no complete reply within {self.config.timeout_s}s (total deadline)") from exc
        except openai.APITimeoutError as exc:
            raise InfraFault("timeout", f"no reply within {self.config.timeout_s}s") from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            truncated = "incomplete" in str(cause).lower() or "protocol" in type(cause).__name__.lower()
            kind = "truncated" if truncated else "connection"
            raise InfraFault(kind, f"{type(cause).__name__}: {cause}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            msg = _status_message(exc)
            if status == 429:
                raise InfraFault("http_429", msg, status=status,
                                 retry_after=_retry_after(exc.response.headers)) from exc
            if status >= 500:
                raise InfraFault("http_5xx", msg, status=status,
                                 retry_after=_retry_after(exc.response.headers)) from exc
            raise InfraFault("http_4xx", msg, status=status) from exc
        except (json.JSONDecodeError, ValueError, openai.APIResponseValidationError) as exc:
            raise InfraFault("truncated", f"reply body is not a complete chat completion: {exc}") from exc
        latency = time.perf_counter() - t0
        return _to_result(resp, seed_sent="seed" in body, latency=latency)

    async def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "carrier",
    ) -> CallResult:
        """Build and send one request."""
        return await self.send(self.request_body(messages, max_tokens=max_tokens, schema=schema,
                                                 schema_name=schema_name))

    async def aclose(self) -> None:
        """Close the underlying HTTP connections."""
        await self._client.close()


def _status_message(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except Exception:  # pragma: no cover - body unreadable
        text = ""
    return redact_text(f"HTTP {exc.status_code}: {text[:300]}")


_SCALARS = (str, int, float, bool, list, dict)
"""What a parsed reply object may never be where the shape wants an object (the SDK keeps them as is)."""


def _count(value: Any) -> int | None:
    """A usage count as sent when it is a non-negative integer, else None (a float, string or
    negative count is not a count: it is recorded as unknown, never copied into the ledger)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _string_field(value: Any, name: str) -> str | None:
    """``value`` when it is a string or absent (None); any other JSON type is a malformed reply."""
    if value is None or isinstance(value, str):
        return value
    raise InfraFault("truncated", f"reply {name} is a JSON {_json_type(value)}, not a string")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return next((n for t, n in names.items() if isinstance(value, t)), "object")


def _to_result(resp: Any, *, seed_sent: bool, latency: float) -> CallResult:
    """The CallResult of a parsed reply; every field it reads is type-checked first (an unexpected
    type is an InfraFault naming the field: the attempt ends invalid with that reason)."""
    choices = getattr(resp, "choices", None)
    if not choices or not isinstance(choices, list):
        raise InfraFault("truncated", "reply carries no choices")
    choice = choices[0]
    if isinstance(choice, _SCALARS) or choice is None:
        raise InfraFault("truncated", f"reply choice is a JSON {_json_type(choice)}, not an object")
    msg = getattr(choice, "message", None)
    if isinstance(msg, _SCALARS):
        raise InfraFault("truncated", f"reply message is a JSON {_json_type(msg)}, not an object")
    text = _string_field(getattr(msg, "content", None) if msg is not None else None, "content") or ""
    refusal = _string_field(getattr(msg, "refusal", None) if msg is not None else None, "refusal")
    finish = _string_field(getattr(choice, "finish_reason", None), "finish_reason")
    served = _string_field(getattr(resp, "model", None), "model")
    extra_msg = (getattr(msg, "model_extra", None) or {}) if msg is not None else {}
    reasoning = (_string_field(extra_msg.get("reasoning"), "reasoning")
                 or _string_field(extra_msg.get("reasoning_content"), "reasoning_content") or "")
    extra = getattr(resp, "model_extra", None) or {}
    provider = _string_field(extra.get("provider"), "provider")
    usage = getattr(resp, "usage", None)
    return CallResult(
        text=text,
        finish_reason=finish,
        served_model=served,
        served_provider=provider,
        prompt_tokens=_count(getattr(usage, "prompt_tokens", None)) if usage else None,
        completion_tokens=_count(getattr(usage, "completion_tokens", None)) if usage else None,
        seed_sent=seed_sent,
        latency_s=latency,
        reasoning_chars=len(reasoning),
        refusal=refusal,
    )
