"""Capability probe: what one endpoint accepts and honours under the exact parameters a sweep sends.

Methods note (paper section 4.2): a probe through a gateway measures the conjunction of model,
endpoint and request parameters, so every verdict here is stored with the request body that
produced it (pin fields included) and must not be reported as a property of the model alone.
Steps, each a real request through `EndpointClient` with the sweep's pin, temperature and seed:

1. plain request (no response_format); no answer at all (connection refused, timeout) is
   `probe_unreachable`, an HTTP error here `probe_rejected_no_endpoint_for_parameters`; if it fails
   only with the seed, the seed is recorded as not accepted and left out afterwards.  When the
   plain request fails, no later step runs and the report claims nothing it did not observe: the
   request-shape fields read `not_probed` and `seed_accepted` is None;
2. OpenAI `json_schema` response format with a two-property required schema; then llama.cpp's
   `json_object` + `schema`.  Accepted (HTTP 200) and the reply validates against the schema:
   that mode is used.  Accepted but a required property missing or the JSON invalid:
   `schema_advertised_reply_nonconforming` (the mode is still used, as the paper's sweep did, and
   the verdict is disclosed).  Neither accepted: `schema_unsupported`, mode `none`;
3. reasoning: without any reasoning field first (a reply without reasoning content means there is
   nothing to disable), then the OpenRouter, chat-template and reasoning_effort dialects; none of
   them yielding a reasoning-free reply is `probe_rejected_reasoning_not_disableable`;
4. the largest per-field ceiling the sweep declares (`max_declared`) as a schema maxLength: if the
   endpoint cannot serve it (llama.cpp's grammar compiler rejects large repetition counts and
   may drop the connection), `schema_max_length_rejected` and ceilings are moved into the field
   descriptions (`max_length_mode = describe`), disclosed in the manifest and study.toml;
5. context length from GET /models (`context_length`, vLLM's `max_model_len`, llama.cpp's
   `meta.n_ctx_train`), else the declared value.  A /models reply that is not the OpenAI list
   shape is the verdict `models_malformed` (what was usable is kept), never an error; /models is
   informative only, the chat requests decide `usable`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from analysis.evidence.schema import MAX_TOKENS
from analysis.runner.bounded_http import BoundedTransport, http
from analysis.runner.client import EndpointClient, EndpointConfig, InfraFault
from analysis.runner.secrets import read_api_key, redact_text
from analysis.safeio import SafeIOError, loads_json

PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "port": {"type": "string"}},
    "required": ["service", "port"],
    "additionalProperties": False,
}
PROBE_MESSAGES = [
    {"role": "system", "content": "You extract facts and answer in JSON."},
    {"role": "user", "content": "The ledger service listens on port 7311. Reply with a JSON object with the "
                                "string fields service and port."},
]
PLAIN_MESSAGES = [{"role": "user", "content": "Say OK."}]


@dataclass(frozen=True, slots=True)
class ProbeStepVerdict:
    """One probe step's outcome with the request that produced it."""

    step: str
    """Probe step: plain, seed, json_schema, json_object_schema, reasoning:<dialect>, models."""
    verdict: str
    """Verdict code, e.g. json_schema_ok, schema_advertised_reply_nonconforming."""
    status: int | None
    """HTTP status (None for transport failures)."""
    detail: str
    """Short human-readable evidence (error excerpt or reply excerpt)."""
    request: Mapping[str, Any]
    """The exact request body sent (no headers, hence no key)."""


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """All verdicts for one endpoint and the request shape they imply."""

    base_url: str
    """Probed base URL."""
    model: str
    """Probed model id."""
    structured_mode: str
    """Request shape for schema arms: json_schema, json_object_schema or none."""
    schema_verdict: str
    """json_schema_ok, json_object_schema_ok, schema_advertised_reply_nonconforming or schema_unsupported."""
    seed_accepted: bool | None
    """Whether a request with a seed was accepted (None: not observed, the plain request failed)."""
    reasoning_off: str
    """Dialect that gives reasoning-free replies, or 'none'."""
    reasoning_verdict: str
    """reasoning_absent, reasoning_disabled, or probe_rejected_reasoning_not_disableable."""
    usable: bool
    """False when the plain request itself was rejected (probe_rejected_no_endpoint_for_parameters)."""
    max_length_mode: str
    """`schema` when a schema with the largest declared maxLength is served, else `describe`."""
    context_length: int | None
    """Context length reported by /models, else the declared one."""
    served_models: tuple[str, ...]
    """Model ids /models lists."""
    verdicts: tuple[ProbeStepVerdict, ...] = field(default_factory=tuple)
    """Every step, in order."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def outcome(self) -> str:
        """``usable``, ``unreachable`` (no answer to the plain request) or ``rejected``."""
        return outcome_of(self.to_json())

    def observed_json(self) -> dict[str, Any]:
        """What a probe that failed observed: its outcome and verdicts, no request shape it never tested."""
        return observed(self.to_json())


UNREACHABLE = "probe_unreachable"
"""Verdict of a plain request that got no answer (connection refused, DNS, timeout)."""
NOT_PROBED = "not_probed"
"""A request-shape field the probe never tested (the plain request failed first)."""


def outcome_of(report: Mapping[str, Any]) -> str:
    """``usable``, ``unreachable`` or ``rejected`` for a report as JSON (``ProbeReport.to_json``)."""
    if report.get("usable"):
        return "usable"
    verdicts = report.get("verdicts") or ()
    return "unreachable" if any(v.get("verdict") == UNREACHABLE for v in verdicts) else "rejected"


def observed(report: Mapping[str, Any]) -> dict[str, Any]:
    """A failed probe's report as JSON, reduced to what it observed (outcome first, then the verdicts)."""
    return {"outcome": outcome_of(report), "base_url": report.get("base_url"), "model": report.get("model"),
            "usable": bool(report.get("usable")), "verdicts": list(report.get("verdicts") or ())}


def failure_line(report: Mapping[str, Any]) -> str:
    """One line saying why a probe report is not usable, the outcome first (``unreachable: ...``)."""
    verdicts = list(report.get("verdicts") or ())
    last = verdicts[-1] if verdicts else {}
    detail = str(last.get("detail") or "")[:300]
    where = f"{report.get('model')} at {report.get('base_url')}"
    if outcome_of(report) == "unreachable":
        return (f"unreachable: {report.get('base_url')} did not answer the probe ({detail}); the endpoint is not "
                "usable: check --base-url and that the server is running")
    status = f"HTTP {last['status']}: " if last.get("status") is not None else ""
    return (f"rejected: {where} answered, but is not usable for these parameters: "
            f"{last.get('verdict', 'no verdict')} ({status}{detail})")


async def _try(client: EndpointClient, step: str, body: dict[str, Any]) -> tuple[ProbeStepVerdict, Any]:
    try:
        res = await client.send(body)
    except InfraFault as exc:
        return ProbeStepVerdict(step, f"rejected_{exc.kind}", exc.status, exc.detail[:300], body), None
    return ProbeStepVerdict(step, "accepted", 200, res.text[:300], body), res


def _conforms(text: str) -> tuple[bool, str]:
    try:
        obj = loads_json(text, "reply")  # the door's parser: depth checked first, no NaN
    except ValueError as exc:
        return False, f"reply is not JSON: {exc}"
    try:
        jsonschema.validate(obj, PROBE_SCHEMA)
    except jsonschema.ValidationError as exc:
        return False, f"reply violates the schema: {exc.message}"
    return True, "reply validates"


def _listed_models(doc: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The model entries of a /models reply, or why the reply is not the OpenAI list shape.

    OpenAI's shape is {"data": [{"id": ...}, ...]}; a bare list of entries is accepted too.
    Entries that are not objects are ignored and named in the problem.
    """
    data = doc.get("data") if isinstance(doc, dict) else doc
    if not isinstance(data, list):
        return [], f"reply is {type(doc).__name__} without a `data` list of models"
    entries = [d for d in data if isinstance(d, dict)]
    if len(entries) != len(data):
        return entries, f"{len(data) - len(entries)} of {len(data)} entries in `data` are not objects"
    return entries, None


MAX_MODEL_IDS = 1_000
"""Most model ids kept from a /models reply (the rest are counted, not kept)."""
MAX_MODEL_ID_CHARS = 256
"""Longest model id kept from a /models reply."""


def _model_ids(entries: list[dict[str, Any]]) -> tuple[tuple[str, ...], int]:
    """The string ids of /models entries (at most MAX_MODEL_IDS, each at most MAX_MODEL_ID_CHARS long),
    and how many ids were dropped (not strings, empty or too long, or past the cap)."""
    ids: list[str] = []
    dropped = 0
    for entry in entries:
        value = entry.get("id")
        if value is None:
            continue
        if isinstance(value, str) and 0 < len(value) <= MAX_MODEL_ID_CHARS and len(ids) < MAX_MODEL_IDS:
            ids.append(value)
        else:
            dropped += 1
    return tuple(ids), dropped


def _context_from(entry: dict[str, Any]) -> int | None:
    meta = entry.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    for val in (entry.get("context_length"), entry.get("max_model_len"), meta.get("n_ctx_train")):
        if isinstance(val, int) and not isinstance(val, bool) and 0 < val <= MAX_TOKENS:  # else: not a context
            return val
    return None


async def _models(cfg: EndpointConfig) -> tuple[tuple[str, ...], int | None, ProbeStepVerdict]:
    headers = {}
    key = read_api_key(cfg.api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = cfg.base_url.rstrip("/") + "/models"
    limit = min(30.0, cfg.timeout_s)
    try:
        # the same bounded, depth-checked reader as every other reply (analysis.runner.bounded_http)
        # (bounded by the transport, parsed once, here: the transport's own JSON check is off)
        transport = BoundedTransport(check_json=False)
        async with asyncio.timeout(limit), http.AsyncClient(transport=transport, timeout=limit,
                                                            follow_redirects=False) as hc:
            r = await hc.get(url, headers=headers)
        doc = loads_json(r.content, "/models reply") if r.status_code == 200 else None
    except TimeoutError:
        return (), None, ProbeStepVerdict("models", "models_unavailable", None, f"no reply within {limit:g}s",
                                          {"url": url})
    except SafeIOError as exc:
        return (), None, ProbeStepVerdict("models", "models_malformed", r.status_code,
                                          redact_text(f"reply refused: {exc.message}")[:200], {"url": url})
    except (http.HTTPError, ValueError) as exc:
        return (), None, ProbeStepVerdict("models", "models_unavailable", None, redact_text(str(exc))[:200],
                                          {"url": url})
    if r.status_code != 200:
        return (), None, ProbeStepVerdict("models", "models_unavailable", r.status_code,
                                          redact_text(r.text)[:200], {"url": url})
    data, problem = _listed_models(doc)
    ids, dropped = _model_ids(data)
    if dropped and problem is None:
        problem = (f"{dropped} model id(s) dropped: not strings, empty, longer than {MAX_MODEL_ID_CHARS} "
                   f"characters, or past the first {MAX_MODEL_IDS:,}")
    ctx = None
    for d in data:
        if d.get("id") == cfg.model or len(data) == 1:
            ctx = _context_from(d)
            if ctx is not None:
                break
    if problem is not None:
        return ids, ctx, ProbeStepVerdict("models", "models_malformed", r.status_code, redact_text(problem)[:200],
                                          {"url": url})
    return ids, ctx, ProbeStepVerdict("models", "models_listed", r.status_code, ", ".join(ids)[:200], {"url": url})


async def probe(cfg: EndpointConfig, *, declared_context: int | None = None, max_tokens: int = 96,
                max_declared: int | None = None) -> ProbeReport:
    """Run every probe step against one endpoint configuration."""
    verdicts: list[ProbeStepVerdict] = []
    ids, ctx, v_models = await _models(cfg)
    verdicts.append(v_models)
    seed_ok = cfg.send_seed and cfg.seed is not None
    client = EndpointClient(dataclasses.replace(cfg, structured_mode="none", reasoning_off="none"))
    try:
        body = client.request_body(PLAIN_MESSAGES, max_tokens=16)
        v, res = await _try(client, "plain", body)
        if res is None and v.verdict in ("rejected_connection", "rejected_timeout"):  # no answer at all
            verdicts.append(dataclasses.replace(v, verdict=UNREACHABLE))
            return _not_probed(cfg, ctx or declared_context, ids, verdicts)
        if res is None and seed_ok:
            body_ns = {k: val for k, val in body.items() if k != "seed"}
            v2, res = await _try(client, "seed", body_ns)
            verdicts.append(v)
            v = v2
            if res is not None:
                seed_ok = False  # accepted only without the seed: the seed is not accepted
        if res is None:
            verdicts.append(dataclasses.replace(v, verdict="probe_rejected_no_endpoint_for_parameters"))
            return _not_probed(cfg, ctx or declared_context, ids, verdicts)
        verdicts.append(v)
        plain_reasoning = res.reasoning_chars

        mode, schema_verdict = "none", "schema_unsupported"
        for step in ("json_schema", "json_object_schema"):
            c = EndpointClient(dataclasses.replace(cfg, structured_mode=step, reasoning_off="none", send_seed=seed_ok))
            try:
                b = c.request_body(PROBE_MESSAGES, max_tokens=max_tokens, schema=PROBE_SCHEMA, schema_name="probe")
                v, r = await _try(c, step, b)
            finally:
                await c.aclose()
            if r is None:
                verdicts.append(v)
                continue
            ok, why = _conforms(r.text)
            code = f"{step}_ok" if ok else "schema_advertised_reply_nonconforming"
            verdicts.append(dataclasses.replace(v, verdict=code, detail=f"{why}; reply: {r.text[:200]}"))
            if ok or mode == "none":  # a conforming mode wins; else the first accepted one is kept
                mode, schema_verdict = step, code
            if ok:
                break

        max_length_mode = "schema"
        if mode != "none" and max_declared:
            big = {**PROBE_SCHEMA, "properties": {"service": {"type": "string", "maxLength": max_declared},
                                                  "port": {"type": "string"}}}
            c = EndpointClient(dataclasses.replace(cfg, structured_mode=mode, reasoning_off="none", send_seed=seed_ok))
            try:
                b = c.request_body(PROBE_MESSAGES, max_tokens=max_tokens, schema=big, schema_name="probe")
                v, r = await _try(c, f"max_length:{max_declared}", b)
            finally:
                await c.aclose()
            if r is None:
                max_length_mode = "describe"
                v = dataclasses.replace(v, verdict="schema_max_length_rejected")
            else:
                v = dataclasses.replace(v, verdict="schema_max_length_ok")
            verdicts.append(v)
        reasoning_off, reasoning_verdict = "none", "reasoning_absent"
        if plain_reasoning:
            reasoning_verdict = "probe_rejected_reasoning_not_disableable"
            for dialect in ("openrouter", "chat_template", "effort"):
                c = EndpointClient(dataclasses.replace(cfg, structured_mode="none", reasoning_off=dialect,
                                                       send_seed=seed_ok))
                try:
                    v, r = await _try(c, f"reasoning:{dialect}", c.request_body(PLAIN_MESSAGES, max_tokens=16))
                finally:
                    await c.aclose()
                verdicts.append(v)
                if r is not None and r.reasoning_chars == 0:
                    reasoning_off, reasoning_verdict = dialect, "reasoning_disabled"
                    break
        return ProbeReport(cfg.base_url, cfg.model, mode, schema_verdict, seed_ok, reasoning_off,
                           reasoning_verdict, reasoning_verdict != "probe_rejected_reasoning_not_disableable",
                           max_length_mode, ctx or declared_context, ids, tuple(verdicts))
    finally:
        await client.aclose()


def _not_probed(cfg: EndpointConfig, context: int | None, ids: tuple[str, ...],
                verdicts: list[ProbeStepVerdict]) -> ProbeReport:
    """The report of a probe whose plain request failed: every later field unobserved."""
    return ProbeReport(cfg.base_url, cfg.model, NOT_PROBED, NOT_PROBED, None, NOT_PROBED, NOT_PROBED, False,
                       NOT_PROBED, context, ids, tuple(verdicts))


def apply(cfg: EndpointConfig, report: ProbeReport) -> EndpointConfig:
    """The endpoint configuration whose request shape follows the probe verdicts (of a usable report:
    a probe that failed tested no request shape)."""
    return dataclasses.replace(cfg, structured_mode=report.structured_mode, send_seed=report.seed_accepted is True,
                               reasoning_off=report.reasoning_off, max_length_mode=report.max_length_mode)
