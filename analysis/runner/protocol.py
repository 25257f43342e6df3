"""The fold-and-recall protocol, independent of any network client.

Methods note (paper Section 3.1). Fold ``i`` sends the system prompt of the
arm and one user message holding the previous carrier and chunk ``i``; the
reply becomes the next carrier. Nothing re-reads the transcript. Schema arms
parse the reply and carry it as the arm declares (raw, one field, or the
fields rendered under fixed headings); a reply that does not parse is carried
raw and counted (the parse-and-carry fail-safe). The carrier is then clipped
to the arm's recursive carry cap (estimated tokens), and clipping is
recorded. A fold whose reply has no text (and no refusal) is *lost*: the
carrier is kept and the chunk is folded together with the next one (the
catch-up branch; one extra catch-up call if the last fold is lost). After the
last fold, a recall turn asks for the graded labels and the answer is graded.
Every carrier of every fold is kept.

A backend is anything with ``async complete(ChatRequest) -> ChatReply``
(:class:`ChatBackend`); it raises :class:`InfrastructureFault` for serving
faults, which ends the trajectory as an invalid, retryable row.
Estimated prompt tokens are additive: system prompt + schema + template +
carrier + the chunks' precomputed estimates + per-message overhead.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from analysis.runner.arms import FIXED_HEADINGS, Arm, ResponseFormatStyle, response_format
from analysis.runner.fixture import Fixture
from analysis.runner.graders import RECALL_SYSTEM_PROMPT, CheckResult, GradedCheck, grade_answer, recall_prompt
from analysis.runner.sizing import MESSAGE_OVERHEAD_TOKENS, clip_to_tokens, estimate_tokens
from analysis.runner.validity import RowValidity, judge
from analysis.safeio import loads_json

__all__ = [
    "ChatBackend",
    "ChatReply",
    "ChatRequest",
    "FoldRecord",
    "InfrastructureFault",
    "RunSettings",
    "TrajectoryResult",
    "count_headings",
    "derive_carrier",
    "fold_user_message",
    "run_trajectory",
]


class InfrastructureFault(Exception):
    """A serving fault (connection, timeout, 5xx, 429, truncated body, pin violation); retryable."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat-completion request of the protocol (network-agnostic)."""

    messages: tuple[Mapping[str, str], ...]
    """``[{"role": "system", ...}, {"role": "user", ...}]``."""
    response_format: Mapping[str, Any] | None
    """Shaped per endpoint style (see :func:`analysis.runner.arms.response_format`)."""
    max_tokens: int
    """API output-token budget."""
    temperature: float
    """Sampling temperature (fixed per sweep)."""
    seed: int | None
    """Seed to send where the endpoint takes one (recorded either way)."""
    purpose: str
    """``fold`` or ``recall``."""
    fold_index: int | None
    """0-based fold call index; ``None`` for the recall turn."""
    arm: str
    """Arm code (for logging and scripted servers)."""
    prompt_tokens_est: int
    """Estimated prompt tokens of this request."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What a backend returns for one request."""

    text: str
    """Message content ('' when none)."""
    finish_reason: str | None
    """``stop``, ``length``, ``content_filter`` ... as reported."""
    served_model: str | None = None
    """Model id the response reports."""
    provider: str | None = None
    """Provider that served the call, when the gateway reports it."""
    usage: Mapping[str, int] | None = None
    """Token usage as reported."""
    refusal: str | None = None
    """Structured-output refusal text, when the API reports one."""


def checked_reply(reply: Any) -> ChatReply:
    """``reply`` when every field has its declared type; else an InfrastructureFault naming the field
    (a backend that passes a JSON object as a refusal ends the attempt invalid, never the sweep)."""
    if not isinstance(reply, ChatReply):
        raise InfrastructureFault("malformed", f"backend returned a {type(reply).__name__}, not a ChatReply")
    for name in ("text", "finish_reason", "served_model", "provider", "refusal"):
        value = getattr(reply, name)
        if not (isinstance(value, str) or (value is None and name != "text")):
            raise InfrastructureFault("malformed", f"reply {name} is a {type(value).__name__}, not a string")
    usage: Any = reply.usage
    counts = isinstance(usage, Mapping) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in usage.items())
    if usage is not None and not counts:
        raise InfrastructureFault("malformed", "reply usage is not a mapping of counts")
    return reply


@runtime_checkable
class ChatBackend(Protocol):
    """The one method the protocol needs from a model endpoint."""

    async def complete(self, request: ChatRequest) -> ChatReply:
        """Send ``request``; raise :class:`InfrastructureFault` on serving faults."""
        ...


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Per-sweep request settings, held fixed across arms."""

    temperature: float = 0.0
    """Sampling temperature."""
    seed: int | None = None
    """Seed sent with every request."""
    response_format_style: ResponseFormatStyle = "json_schema"
    """How schema arms shape ``response_format`` for this endpoint."""
    strict: bool = True
    """``strict`` flag of the json_schema style."""
    recall_max_tokens: int = 1024
    """Output-token budget of the recall turn."""
    schema_in_prompt: bool = False
    """Also put the JSON Schema into the fold prompt (for endpoints without response_format)."""


@dataclass(frozen=True, slots=True)
class FoldRecord:
    """One fold call and the carrier it produced."""

    index: int
    """0-based fold call index."""
    chunks: tuple[int, ...]
    """Chunk indices sent in this call (more than one after a lost fold)."""
    prompt_tokens_est: int
    """Estimated prompt tokens of the call."""
    reply_text: str
    """The full reply text."""
    finish_reason: str | None
    """As reported."""
    refusal: str | None
    """Refusal text, if any."""
    parse_ok: bool | None
    """Schema arms: whether the reply parsed; ``None`` for plain arms."""
    lost: bool
    """No usable reply: carrier kept, chunk pending."""
    carrier_unclipped_chars: int
    """Carrier length before the carry cap."""
    carrier: str
    """The carrier after this fold (clipped)."""
    clipped: bool
    """Whether the carry cap clipped it."""
    served_model: str | None
    """Model that served the call."""
    provider: str | None
    """Provider that served the call."""
    usage: Mapping[str, int] | None
    """Reported usage."""
    wait_s: float
    """Seconds spent waiting for the backend."""
    overhead_s: float
    """Seconds spent in the protocol itself (everything except the backend)."""


@dataclass(frozen=True)
class TrajectoryResult:
    """One arm-specific fold-and-recall trajectory."""

    arm: Arm
    """The arm that ran."""
    fixture_name: str
    """Fixture spec name (e.g. ``s5-150k``)."""
    scenario: str
    """Scenario code of the fixture."""
    fixture_digest: str
    """SHA-256 of the fixture's canonical JSON."""
    settings: RunSettings
    """Request settings of the sweep."""
    folds: tuple[FoldRecord, ...]
    """Every fold call with its carrier, in order."""
    final_carrier: str
    """The carrier the recall turn received."""
    answer: str | None
    """The full recall answer; ``None`` when the recall turn did not happen."""
    answer_finish_reason: str | None
    """Finish reason of the recall turn."""
    recall_served_model: str | None
    """Model that served the recall turn."""
    recall_provider: str | None
    """Provider that served the recall turn."""
    checks: tuple[CheckResult, ...]
    """Graded checks (empty without an outcome)."""
    checks_total: int
    """Graded checks of the scenario (14)."""
    infrastructure_fault: str | None
    """The serving fault that ended the trajectory, if any."""
    catchup_folds: int
    """Fold calls that carried re-sent (catch-up) chunks."""
    recall_prompt_tokens_est: int
    """Estimated prompt tokens of the recall turn."""
    distributed: bool
    """Whether the fixture's facts arrive in more than one fold."""
    rung: str = ""
    """The fixture's load-ladder rung (``""``: not a rung)."""
    verdict: RowValidity = field(init=False)

    def __post_init__(self) -> None:
        verdict = judge(
            infrastructure_fault=self.infrastructure_fault,
            catchup_folds=self.catchup_folds,
            distributed=self.distributed,
        )
        object.__setattr__(self, "verdict", verdict)

    @property
    def checks_passed(self) -> int | None:
        """Label-bound checks passed; ``None`` without an outcome."""
        return sum(c.passed for c in self.checks) if self.verdict.has_outcome else None

    @property
    def parse_failures(self) -> int:
        """Folds whose structured reply did not parse."""
        return sum(1 for f in self.folds if f.parse_ok is False)

    @property
    def folds_clipped(self) -> int:
        """Folds whose carrier was clipped at the carry cap."""
        return sum(f.clipped for f in self.folds)

    def finish_count(self, reason: str) -> int:
        """Fold calls that finished with ``reason``."""
        return sum(1 for f in self.folds if f.finish_reason == reason)

    @property
    def prompt_tokens_est(self) -> int:
        """Estimated prompt tokens over all fold calls and the recall turn."""
        return sum(f.prompt_tokens_est for f in self.folds) + self.recall_prompt_tokens_est

    @property
    def headings_carried(self) -> int:
        """Fixed headings present in the final carrier (0-5)."""
        return count_headings(self.final_carrier)

    @property
    def carried_chars(self) -> int:
        """Characters in the final carried carrier."""
        return len(self.final_carrier)

    @property
    def served_models(self) -> tuple[str, ...]:
        """Distinct models that served any call of the trajectory."""
        seen = [f.served_model for f in self.folds] + [self.recall_served_model]
        return tuple(sorted({m for m in seen if m}))

    @property
    def providers(self) -> tuple[str, ...]:
        """Distinct providers that served any call of the trajectory."""
        seen = [f.provider for f in self.folds] + [self.recall_provider]
        return tuple(sorted({p for p in seen if p}))


# ---------------------------------------------------------------- carriers
_HEADING_RES = tuple(
    re.compile(r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*" + re.escape(h) + r"[ \t]*(?:\*\*|__)?[ \t]*(?::|$)",
               re.IGNORECASE | re.MULTILINE)
    for h in FIXED_HEADINGS
)


def count_headings(carrier: str) -> int:
    """Fixed headings that start a line of ``carrier`` and end it or are followed by a colon
    (markdown ``#`` and bold allowed; case-insensitive)."""
    return sum(1 for rx in _HEADING_RES if rx.search(carrier))


def _conforms(arm: Arm, obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    for f in arm.fields:
        v = obj.get(f.name, None)
        if f.type == "string" and not isinstance(v, str):
            return False
        if f.type == "string_array" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            return False
        if f.type == "boolean" and not isinstance(v, bool):
            return False
    return True


def derive_carrier(arm: Arm, text: str) -> tuple[str, bool | None]:
    """The carrier an arm keeps from a fold reply, and whether a schema reply parsed.

    Plain arms carry the text (outer whitespace stripped). Schema arms parse the
    reply with ``json.loads`` (no repair, no code-fence stripping) and require
    every declared field with its type; a reply that fails is carried raw
    (stripped) and reported as a parse failure.
    """
    if not arm.is_schema:
        return text.strip(), None
    try:
        obj = loads_json(text, "reply")  # the door's parser: depth checked first, no NaN
    except ValueError:
        return text.strip(), False
    if not _conforms(arm, obj):
        return text.strip(), False
    if arm.carry == "raw":
        return text.strip(), True
    if arm.carry == "field":
        return obj[arm.carry_field].strip(), True
    strings = [f for f in arm.fields if f.type == "string"]
    parts = [f"## {h}\n{obj[f.name].strip()}" for h, f in zip(arm.headings, strings, strict=True)]
    return "\n\n".join(parts), True


# ---------------------------------------------------------------- prompts
_FIRST = "(none yet: this is the start of the session)"


def fold_user_message(
    carrier: str, chunk_texts: Sequence[str], chunk_indices: Sequence[int], n_chunks: int, hint: str
) -> str:
    """The user message of one fold: previous carrier, then the chunk(s)."""
    if len(chunk_indices) == 1:
        head = f"Next chunk of the session transcript (chunk {chunk_indices[0] + 1} of {n_chunks}):"
    else:
        head = (f"Next chunks of the session transcript (chunks {chunk_indices[0] + 1}-"
                f"{chunk_indices[-1] + 1} of {n_chunks}):")
    body = "\n\n".join(chunk_texts)
    return (f"Previous running summary:\n{carrier or _FIRST}\n\n{head}\n{body}\n\n"
            f"Return the replacement running summary.{hint}")


def _hint(arm: Arm, settings: RunSettings) -> str:
    if not arm.is_schema:
        return ""
    hint = " Reply with a single JSON object that conforms to the response schema."
    if settings.schema_in_prompt or settings.response_format_style in ("none", "json_object"):
        hint += "\nSchema:\n" + json.dumps(arm.json_schema(), ensure_ascii=False)
    return hint


@dataclass(frozen=True, slots=True)
class _Static:
    """Per-trajectory constants, computed once."""

    system_tokens: int
    schema_tokens: int
    template_tokens: int
    hint: str
    response_format: Mapping[str, Any] | None


def _static(arm: Arm, settings: RunSettings) -> _Static:
    rf = response_format(arm, settings.response_format_style, strict=settings.strict)
    hint = _hint(arm, settings)
    template = fold_user_message("", [""], [0], 1, hint).replace(_FIRST, "")
    return _Static(
        system_tokens=estimate_tokens(arm.prompt),
        schema_tokens=estimate_tokens(json.dumps(rf, ensure_ascii=False)) if rf else 0,
        template_tokens=estimate_tokens(template),
        hint=hint,
        response_format=rf,
    )


# ---------------------------------------------------------------- trajectory
async def run_trajectory(
    backend: ChatBackend,
    fixture: Fixture,
    arm: Arm,
    settings: RunSettings = RunSettings(),
) -> TrajectoryResult:
    """Run one arm-specific fold-and-recall trajectory of ``fixture`` against ``backend``."""
    st = _static(arm, settings)
    n = len(fixture.chunks)
    folds: list[FoldRecord] = []
    carrier = ""
    pending: list[int] = []
    catchups = 0
    fault: str | None = None
    schedule: list[list[int]] = [[c] for c in range(n)]
    i = 0
    while i < len(schedule):
        t0 = time.perf_counter()
        idx = pending + schedule[i]
        if len(idx) > 1 or i >= n:
            catchups += 1
        chunks = [fixture.chunks[c] for c in idx]
        user = fold_user_message(carrier, [c.text for c in chunks], idx, n, st.hint)
        est = (st.system_tokens + st.schema_tokens + st.template_tokens + estimate_tokens(carrier or _FIRST)
               + sum(c.tokens_est for c in chunks) + 2 * MESSAGE_OVERHEAD_TOKENS)
        request = ChatRequest(
            messages=({"role": "system", "content": arm.prompt}, {"role": "user", "content": user}),
            response_format=st.response_format, max_tokens=arm.output_tokens,
            temperature=settings.temperature, seed=settings.seed, purpose="fold",
            fold_index=len(folds), arm=arm.code, prompt_tokens_est=est,
        )
        t1 = time.perf_counter()
        try:
            reply = checked_reply(await backend.complete(request))
        except InfrastructureFault as exc:
            fault = str(exc)
            break
        t2 = time.perf_counter()
        lost = not reply.text.strip() and not (reply.refusal or "").strip()
        if lost:
            new, parse_ok, unclipped, clipped = carrier, None, len(carrier), False
            pending = idx
        else:
            new, parse_ok = derive_carrier(arm, reply.text if reply.text.strip() else (reply.refusal or ""))
            unclipped = len(new)
            capped = clip_to_tokens(new, arm.carry_cap)
            clipped = len(capped) < len(new)
            new, pending = capped, []
        folds.append(FoldRecord(
            index=len(folds), chunks=tuple(idx), prompt_tokens_est=est, reply_text=reply.text,
            finish_reason=reply.finish_reason, refusal=reply.refusal, parse_ok=parse_ok, lost=lost,
            carrier_unclipped_chars=unclipped, carrier=new, clipped=clipped,
            served_model=reply.served_model, provider=reply.provider, usage=reply.usage,
            wait_s=t2 - t1, overhead_s=(t1 - t0) + (time.perf_counter() - t2),
        ))
        carrier = new
        i += 1
        if i == n and pending:
            # the last fold was lost: one catch-up call re-sends the pending chunks
            schedule.append(pending)
            pending = []
    return await _recall(backend, fixture, arm, settings, folds, carrier, catchups, fault)


async def _recall(
    backend: ChatBackend, fixture: Fixture, arm: Arm, settings: RunSettings,
    folds: list[FoldRecord], carrier: str, catchups: int, fault: str | None,
) -> TrajectoryResult:
    checks_def = [GradedCheck(p.label or "", p.value, p.case_sensitive) for p in fixture.graded]
    answer = finish = model = provider = None
    recall_est = 0
    checks: tuple[CheckResult, ...] = ()
    if fault is None:
        user = recall_prompt(carrier, fixture.labels)
        recall_est = estimate_tokens(RECALL_SYSTEM_PROMPT) + estimate_tokens(user) + 2 * MESSAGE_OVERHEAD_TOKENS
        request = ChatRequest(
            messages=({"role": "system", "content": RECALL_SYSTEM_PROMPT}, {"role": "user", "content": user}),
            response_format=None, max_tokens=settings.recall_max_tokens, temperature=settings.temperature,
            seed=settings.seed, purpose="recall", fold_index=None, arm=arm.code, prompt_tokens_est=recall_est,
        )
        try:
            reply = checked_reply(await backend.complete(request))
        except InfrastructureFault as exc:
            fault = str(exc)
        else:
            answer = reply.text if reply.text.strip() else (reply.refusal or reply.text)
            finish, model, provider = reply.finish_reason, reply.served_model, reply.provider
            checks = grade_answer(answer, checks_def, carrier=carrier)
    return TrajectoryResult(
        arm=arm, fixture_name=fixture.spec.name, scenario=fixture.spec.scenario,
        fixture_digest=fixture.digest, settings=settings, folds=tuple(folds), final_carrier=carrier,
        answer=answer, answer_finish_reason=finish, recall_served_model=model, recall_provider=provider,
        checks=checks, checks_total=len(checks_def), infrastructure_fault=fault, catchup_folds=catchups,
        recall_prompt_tokens_est=recall_est, distributed=fixture.spec.distributed, rung=fixture.spec.rung,
    )
