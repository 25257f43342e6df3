"""Sweeps: configurations x arms x repeats, N trajectories at once, resumable from the ledger.

Methods note.  A *slot* is one planned trajectory: (scenario, configuration, execution group,
repeat, arm), with its execution position from the arm-order design.  Every call of a trajectory
goes through `LedgeredBackend`, which writes the request body before sending and the response (or
the fault) after, and applies the pin audit.  An infrastructure fault (`InfraFault`: connection
reset, timeout, 5xx, 429, truncated body, pin violation) ends the attempt as an invalid
infrastructure row and the slot is retried from its first fold after a bounded backoff
(exponential, capped; a 429's Retry-After is honoured up to the cap), at most `max_attempts`
times; arm behaviour (parse failures, refusals, empty answers, catch-up) is never retried: the
trajectory code returns it as the outcome and the slot is finished.  Re-running the same sweep
reads the ledger first: finished slots are never run again, attempts that a killed runner left
open are closed as invalid `interrupted` rows (not counted against the retry budget), and the
rest run.  The evidence package is assembled from the ledger alone, so it is the same whether
the sweep ran in one go or in many.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from analysis.runner.arm_order import ArmOrder
from analysis.runner.client import CallResult, EndpointClient, InfraFault
from analysis.runner.ledger import Ledger, RecordTooLong, slot_states
from analysis.runner.pinning import Pin, audit_call, unverifiable
from analysis.runner.protocol import ChatReply, ChatRequest
from analysis.runner.sizing import estimate_messages
from analysis.runner.validity import INFRASTRUCTURE

INFRA = INFRASTRUCTURE
TOO_LONG = "record_too_long"
"""Fault of an attempt whose request, reply or end record exceeds a ledger line (ledger.RECORD_LIMIT):
recorded as an invalid infrastructure attempt with this reason, never written and then unreadable."""


class SweepError(RuntimeError):
    """The sweep cannot start or continue as configured."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One planned trajectory."""

    scenario: str
    """Scenario code, e.g. S5."""
    configuration: str
    """study.toml configuration key."""
    execution_group: str
    """Sweep id; pairs never cross groups."""
    repeat: int
    """1-based planned repeat."""
    arm: str
    """Arm code."""
    position: int
    """1-based execution position of the arm inside its repeat block."""

    @property
    def slot_id(self) -> str:
        """Stable id; the valid (or arm-invalid) row of the slot carries it as row_id."""
        return f"{self.execution_group}:{self.configuration}:{self.scenario}:r{self.repeat:03d}:{self.arm}"


def plan_slots(order: ArmOrder, *, scenario: str, configuration: str, execution_group: str) -> list[Slot]:
    """All slots of one configuration's sweep, in planned execution order."""
    return [
        Slot(scenario, configuration, execution_group, r, arm, i + 1)
        for r in range(1, order.repeats + 1)
        for i, arm in enumerate(order.sequence(r))
    ]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a trajectory returns: its evidence row (without row_id), its checks, and artifacts."""

    row: Mapping[str, Any]
    """docs/EVIDENCE_FORMAT.md row fields except row_id and the slot fields."""
    checks: Sequence[Mapping[str, Any]]
    """One mapping per graded check (check, expected, passed, in_carrier)."""
    artifacts: Mapping[str, Any] = field(default_factory=dict)
    """Carriers at every fold, full answer, etc. (written beside the package)."""

    @property
    def valid(self) -> bool:
        return bool(self.row.get("valid"))


class Backend(Protocol):
    """What a trajectory calls to reach the model (the protocol's ChatBackend plus a generic call)."""

    async def complete(self, request: ChatRequest) -> ChatReply: ...

    async def call(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int,
                   response_format: Mapping[str, Any] | None = None, phase: str = "fold") -> CallResult: ...


TrajectoryFn = Callable[[Slot, Backend], Awaitable[Outcome]]


@dataclass(slots=True)
class CallStats:
    """Counters of one attempt, for the invalid row an infrastructure fault leaves."""

    folds: int = 0
    recalls: int = 0
    finish_stop: int = 0
    finish_length: int = 0
    prompt_tokens_est: int = 0


class LedgeredBackend:
    """Backend that records every request and response in the ledger and audits the pin."""

    def __init__(self, client: EndpointClient, ledger: Ledger, slot: Slot, attempt: int, pin: Pin,
                 tally: dict[str, int], on_call: Callable[[Slot, str, int], None] | None = None) -> None:
        self.client, self.ledger, self.slot, self.attempt, self.pin = client, ledger, slot, attempt, pin
        self.stats = CallStats()
        self.calls = 0
        self.last_fault: InfraFault | None = None
        self.tally = tally
        self.on_call = on_call
        """Told (slot, phase, folds so far) after every call of the attempt ends (the progress line)."""

    async def complete(self, request: ChatRequest) -> ChatReply:
        """The protocol's backend interface (ChatBackend)."""
        res = await self.call(request.messages, max_tokens=request.max_tokens,
                              response_format=request.response_format, phase=request.purpose, seed=request.seed)
        usage = None
        if res.prompt_tokens is not None or res.completion_tokens is not None:
            usage = {k: v for k, v in (("prompt_tokens", res.prompt_tokens),
                                       ("completion_tokens", res.completion_tokens)) if v is not None}
        return ChatReply(text=res.text, finish_reason=res.finish_reason, served_model=res.served_model,
                         provider=res.served_provider, usage=usage, refusal=res.refusal)

    async def call(self, messages: Sequence[Mapping[str, str]], *, max_tokens: int,
                   response_format: Mapping[str, Any] | None = None, phase: str = "fold",
                   seed: int | None = None) -> CallResult:
        """Send one chat request, ledger it, audit the pin; raise InfraFault on serving faults."""
        body = self.client.request_body(messages, max_tokens=max_tokens, response_format=response_format, seed=seed)
        self.calls += 1
        if phase == "fold":
            self.stats.folds += 1
        else:
            self.stats.recalls += 1
        self.stats.prompt_tokens_est += estimate_messages(str(m.get("content", "")) for m in messages)
        base = {"slot": self.slot.slot_id, "attempt": self.attempt, "call": self.calls, "phase": phase}
        # the request record's fsync overlaps the call; it is durable before the response is recorded
        try:
            logged = self.ledger.append_soon({"kind": "request", **base, "body": body, "t": time.time()})
        except RecordTooLong as exc:  # never sent: the ledger could not hold what was asked
            self.last_fault = InfraFault(TOO_LONG, str(exc))
            raise self.last_fault from None
        try:
            res = await self.client.send(body)
        except InfraFault as exc:
            self.last_fault = exc
            await logged
            await self.ledger.append({"kind": "response", **base, "ok": False, "fault": exc.kind,
                                      "status": exc.status, "detail": exc.detail[:500], "t": time.time()})
            raise
        finally:
            if self.on_call is not None:
                self.on_call(self.slot, phase, self.stats.folds)
        await logged
        violation = audit_call(self.pin, res)
        self.tally["unverifiable"] += int(unverifiable(self.pin, res))
        try:
            await self.ledger.append({
                "kind": "response", **base, "ok": violation is None, "text": res.text,
                "finish_reason": res.finish_reason, "served_model": res.served_model,
                "served_provider": res.served_provider, "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens, "seed_sent": res.seed_sent,
                "latency_s": round(res.latency_s, 4), "pin_violation": violation, "t": time.time(),
            })
        except RecordTooLong as exc:  # the reply cannot be recorded: the attempt ends invalid, saying why
            self.last_fault = InfraFault(TOO_LONG, str(exc))
            await self.ledger.append({"kind": "response", **base, "ok": False, "fault": TOO_LONG, "status": None,
                                      "detail": str(exc)[:500], "t": time.time()})
            raise self.last_fault from None
        if phase == "fold":
            self.stats.finish_stop += int(res.finish_reason == "stop")
            self.stats.finish_length += int(res.finish_reason == "length")
        if violation is not None:
            self.last_fault = InfraFault("pin_violation", violation)
            raise self.last_fault
        return res


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retry of infrastructure faults."""

    max_attempts: int = 4
    """Attempts per slot that may end in an endpoint fault (the first included)."""
    base_s: float = 1.0
    """First backoff."""
    cap_s: float = 60.0
    """Largest backoff, Retry-After included."""
    jitter: float = 0.25
    """Relative random jitter."""

    def delay(self, failures: int, fault: InfraFault, rng: random.Random) -> float:
        """Backoff before the next attempt after `failures` failed attempts."""
        d = self.base_s * (2 ** (failures - 1))
        if fault.retry_after is not None:
            d = max(d, fault.retry_after)
        d = min(d, self.cap_s)
        return d * (1 + self.jitter * rng.random())


def infra_row(slot: Slot, stats: CallStats, *, checks_total: int, declared_chars: int | None,
              detail: str) -> dict[str, Any]:
    """The invalid row an attempt leaves when infrastructure ended it (no outcome)."""
    return {
        "valid": False, "invalid_reason": INFRA, "infrastructure_fault": detail,
        "checks_total": checks_total, "checks_passed": None, "parse_failures": 0,
        "headings_carried": None, "carried_chars": None, "declared_chars": declared_chars,
        "folds": stats.folds, "folds_clipped": 0, "finish_stop": stats.finish_stop,
        "finish_length": stats.finish_length, "prompt_tokens_est": stats.prompt_tokens_est, "answer": None,
    }


def duration(seconds: float) -> str:
    """A duration for people: 0s, 45s, 3m05s, 1h02m."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Status lines on stderr: rows done, valid, failed attempts, the call just ended, elapsed, ETA.

    A line follows every row and every fold or recall call (at most one each 0.5 s unless forced),
    so a slow trajectory shows its folds instead of minutes of silence. The ETA counts calls when
    the calls per slot are known (``calls_left``: every slot still to run costs its scenario's
    folds plus the recall turn; the calls ended so far this session set the pace), else rows;
    ``?`` until the first call or row ends.
    """

    def __init__(self, total: int, done: int, stream: TextIO | None = None, enabled: bool = True,
                 calls_left: int = 0) -> None:
        self.total, self.done, self.valid, self.failed = total, done, 0, 0
        self.start_done = done
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.last = 0.0
        self.calls_left = calls_left
        """Calls the slots still to run were planned to make (0: unknown)."""
        self.calls = 0
        """Calls ended this session."""
        self.current = ""
        """The call that ended last, e.g. ``cfg S5 r002 q fold 3/5``."""

    def call_done(self, slot: Slot, phase: str, folds: int, of: int | None) -> None:
        """One call of ``slot`` ended (``folds``: fold calls of its attempt so far, of ``of`` planned)."""
        self.calls += 1
        step = f"fold {folds}/{of}" if phase == "fold" and of else f"fold {folds}" if phase == "fold" else phase
        self.current = f"{slot.configuration} {slot.scenario} r{slot.repeat:03d} {slot.arm} {step}"
        self.show()

    def eta(self, elapsed: float) -> str:
        if self.done >= self.total:
            return "0s"
        left = self.calls_left - self.calls
        if self.calls and left > 0:
            return duration(left * elapsed / self.calls)
        ran = self.done - self.start_done
        return "?" if ran == 0 else duration((self.total - self.done) * elapsed / ran)

    def show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        el = now - self.t0
        tty = getattr(self.stream, "isatty", lambda: False)()
        current = f"  {self.current}" if self.current and self.done < self.total else ""
        line = (f"rows {self.done}/{self.total}  valid {self.valid}  failed-attempts {self.failed}{current}  "
                f"elapsed {duration(el)}  eta {self.eta(el)}")
        self.stream.write(("\r\x1b[K" + line) if tty else (line + "\n"))
        self.stream.flush()


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """How to run a set of slots."""

    slots: tuple[Slot, ...]
    """Planned slots."""
    checks_total: Mapping[str, int]
    """checks_total per scenario (for rows without an outcome)."""
    declared_chars: Mapping[str, int | None]
    """declared total character allowance per arm."""
    concurrency: int = 4
    """Trajectories in flight at once."""
    retry: RetryPolicy = RetryPolicy()
    """Infrastructure retry policy."""
    calls_per_slot: Mapping[str, int] = field(default_factory=dict)
    """Planned calls of one trajectory per scenario (its folds plus the recall turn), for the
    progress line's fold count and ETA; empty when unknown."""


def is_retryable(reason: str | None) -> bool:
    """Whether an invalid reason may be retried: the validity rule's infrastructure reason only."""
    return reason == INFRA


async def run_sweep(spec: SweepSpec, ledger: Ledger, client: EndpointClient | Mapping[str, EndpointClient],
                    pin: Pin | Mapping[str, Pin], trajectory: TrajectoryFn, *, progress: bool = True,
                    seed: int = 0) -> dict[str, int]:
    """Run every unfinished slot; return counters (ran, valid, infra_failed, interrupted_closed, ...).

    `client` and `pin` are one endpoint, or mappings from configuration key to endpoint when the
    slots span several configurations (configurations x arms x repeats in one sweep).
    """
    def endpoint(slot: Slot) -> tuple[EndpointClient, Pin]:
        c = client[slot.configuration] if isinstance(client, Mapping) else client
        p = pin[slot.configuration] if isinstance(pin, Mapping) else pin
        return c, p

    if spec.concurrency < 1:
        raise SweepError(f"concurrency must be >= 1, got {spec.concurrency}")
    states = slot_states(ledger.records, is_retryable)
    tally = {"ran": 0, "valid": 0, "infra_failed": 0, "interrupted_closed": 0, "unverifiable": 0, "skipped": 0}
    by_id = {s.slot_id: s for s in spec.slots}
    # close attempts a killed runner left open
    for sid, st in states.items():
        for att in list(st.open_attempts):
            slot = by_id.get(sid)
            checks_total = spec.checks_total.get(slot.scenario, 0) if slot else 0
            stats = CallStats()
            for r in ledger.records:
                if r.get("slot") != sid or r.get("attempt") != att:
                    continue
                if r.get("kind") == "request" and r.get("phase") == "fold":
                    stats.folds += 1
                if r.get("kind") == "request":
                    msgs = r.get("body", {}).get("messages", [])
                    stats.prompt_tokens_est += estimate_messages(str(m.get("content", "")) for m in msgs)
                if r.get("kind") == "response" and r.get("phase") == "fold" and r.get("ok") is not None:
                    stats.finish_stop += int(r.get("finish_reason") == "stop")
                    stats.finish_length += int(r.get("finish_reason") == "length")
            row = infra_row(slot, stats, checks_total=checks_total,
                            declared_chars=spec.declared_chars.get(slot.arm),
                            detail="interrupted") if slot else {}
            await ledger.append({"kind": "attempt_end", "slot": sid, "attempt": att, "valid": False,
                                 "invalid_reason": INFRA, "interrupted": True, "row": row, "checks": []})
            st.open_attempts.remove(att)
            tally["interrupted_closed"] += 1
    todo = []
    for s in spec.slots:
        state = states.get(s.slot_id)
        if state is not None and (state.final is not None or state.attempts >= spec.retry.max_attempts):
            continue
        todo.append(s)
    done_n = len(spec.slots) - len(todo)
    bar = Progress(len(spec.slots), done_n, enabled=progress,
                   calls_left=sum(spec.calls_per_slot.get(s.scenario, 0) for s in todo))
    bar.valid = sum(1 for s in spec.slots
                    if (state := states.get(s.slot_id)) and state.final and state.final.get("valid"))
    bar.show(force=True)
    rng = random.Random(seed)
    queue: asyncio.Queue[Slot] = asyncio.Queue()
    for s in todo:
        queue.put_nowait(s)

    def on_call(slot: Slot, phase: str, folds: int) -> None:
        planned = spec.calls_per_slot.get(slot.scenario, 0) - 1  # its folds (the recall is the last call)
        bar.call_done(slot, phase, folds, planned if planned > 0 else None)

    async def worker() -> None:
        while True:
            try:
                slot = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            st = states.get(slot.slot_id)
            failures = st.attempts if st else 0
            started = st.started if st else 0
            while True:
                started += 1
                await ledger.append({"kind": "attempt_start", "slot": slot.slot_id, "attempt": started,
                                     "scenario": slot.scenario, "configuration": slot.configuration,
                                     "execution_group": slot.execution_group, "repeat": slot.repeat,
                                     "arm": slot.arm, "position": slot.position, "t": time.time()})
                ep_client, ep_pin = endpoint(slot)
                backend = LedgeredBackend(ep_client, ledger, slot, started, ep_pin, tally, on_call)
                tally["ran"] += 1

                def too_long_row(slot: Slot = slot, backend: LedgeredBackend = backend) -> dict[str, Any]:
                    return infra_row(slot, backend.stats, checks_total=spec.checks_total.get(slot.scenario, 0),
                                     declared_chars=spec.declared_chars.get(slot.arm), detail=TOO_LONG)

                try:
                    outcome = await trajectory(slot, backend)
                    fault = None
                    if not outcome.valid and is_retryable(outcome.row.get("invalid_reason")):
                        fault = backend.last_fault or InfraFault("unknown", "trajectory reported infrastructure")
                except InfraFault as exc:
                    fault = exc
                    outcome = Outcome(row=infra_row(slot, backend.stats,
                                                    checks_total=spec.checks_total.get(slot.scenario, 0),
                                                    declared_chars=spec.declared_chars.get(slot.arm),
                                                    detail=exc.kind), checks=())
                if fault is None:
                    try:
                        await ledger.append({"kind": "attempt_end", "slot": slot.slot_id, "attempt": started,
                                             "valid": outcome.valid,
                                             "invalid_reason": outcome.row.get("invalid_reason"),
                                             "row": dict(outcome.row), "checks": [dict(c) for c in outcome.checks],
                                             "artifacts": dict(outcome.artifacts), "t": time.time()})
                    except RecordTooLong as exc:  # its replies together exceed a ledger line: invalid, saying so
                        fault = InfraFault(TOO_LONG, str(exc))
                        outcome = Outcome(row=too_long_row(), checks=())
                    else:
                        tally["valid"] += int(outcome.valid)
                        bar.valid += int(outcome.valid)
                        break
                if fault is not None:
                    failures += 1
                    row = {**outcome.row, "valid": False, "invalid_reason": INFRA,
                           "infrastructure_fault": outcome.row.get("infrastructure_fault") or fault.kind}
                    end = {"kind": "attempt_end", "slot": slot.slot_id, "attempt": started, "valid": False,
                           "invalid_reason": INFRA, "fault": fault.kind, "row": row,
                           "checks": [dict(c) for c in outcome.checks], "artifacts": dict(outcome.artifacts),
                           "t": time.time()}
                    try:
                        await ledger.append(end)
                    except RecordTooLong as exc:
                        fault = InfraFault(TOO_LONG, str(exc))
                        await ledger.append({**end, "fault": TOO_LONG, "row": too_long_row(), "checks": [],
                                             "artifacts": {}})
                    tally["infra_failed"] += 1
                    bar.failed += 1
                    bar.show()
                    if failures >= spec.retry.max_attempts:
                        break
                    await asyncio.sleep(spec.retry.delay(failures, fault, rng))
                    continue
            bar.done += 1
            bar.show()

    await asyncio.gather(*(worker() for _ in range(min(spec.concurrency, max(1, len(todo))))))
    bar.show(force=True)
    if progress and getattr(bar.stream, "isatty", lambda: False)():
        bar.stream.write("\n")
    return tally


# ---------------------------------------------------------------- the protocol as a trajectory
def outcome_from_result(result: Any, slot: Slot) -> Outcome:
    """An Outcome from the protocol's TrajectoryResult, as analysis.runner.package records it."""
    from analysis.runner.package import RowMeta, answer_record, check_records, fold_records, row_record

    meta = RowMeta(slot.slot_id, slot.configuration, slot.execution_group, slot.repeat, slot.position)
    row = row_record(result, meta)
    return Outcome(row=row, checks=check_records(result, slot.slot_id),
                   artifacts={"folds": fold_records(result, slot.slot_id),
                              "answer": answer_record(result, slot.slot_id)})


def repeat_seed(seed: int, repeat: int) -> int:
    """The seed of one repeat block: every arm of the block shares it (paired), blocks differ."""
    digest = hashlib.sha256(f"{seed}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def protocol_trajectory(fixture: Any, arms: Mapping[str, Any], settings: Any, *,
                        seed_per_repeat: bool = False) -> TrajectoryFn:
    """A TrajectoryFn running the protocol's fold-and-recall trajectory for the slot's arm.

    `fixture` is one fixture, or a mapping from scenario to fixture (the load ladder's rungs).
    `settings` is one RunSettings or a mapping from configuration key to RunSettings (each
    endpoint's request shape follows its own probe).  With `seed_per_repeat` each repeat block
    sends its own seed (`repeat_seed`), so sampled repeats differ while arms stay paired; with one
    seed and temperature 0 a deterministic server replicates a repeat exactly.
    """
    from analysis.runner.protocol import run_trajectory

    async def run(slot: Slot, backend: Backend) -> Outcome:
        fx = fixture[slot.scenario] if isinstance(fixture, Mapping) else fixture  # a ladder: one per rung
        st = settings[slot.configuration] if isinstance(settings, Mapping) else settings
        if seed_per_repeat and st.seed is not None:
            st = dataclasses.replace(st, seed=repeat_seed(st.seed, slot.repeat))
        return outcome_from_result(await run_trajectory(backend, fx, arms[slot.arm], st), slot)

    return run
