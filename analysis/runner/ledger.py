"""Append-only JSONL ledger of every request, response and trajectory attempt of a sweep.

Methods note: one JSON object per line, written by a single writer thread.  A record is durable
(written, flushed and fsync'ed) before `append` returns; records that arrive while an fsync is in
progress share the next one (group commit), so durability per record does not serialise a
concurrent sweep on the disk.  Nothing is ever rewritten.  A SIGKILL can leave a half-written last
line; opening the ledger drops that fragment (it was never acknowledged, so no caller relied on
it) by appending a newline terminator and ignoring the unparsable line, never by truncating.

Resume rule (see `LedgerState`): a slot is finished when an attempt ended valid, or ended invalid
for a reason that is not retryable (arm behaviour), or used up its infrastructure attempts.  An
attempt that started and never ended was interrupted by the runner dying; it is closed as an
invalid infrastructure attempt (`interrupted`) and does not count against the retry budget.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.runner.secrets import redact, write_text

LEDGER_VERSION = 1


class LedgerError(RuntimeError):
    """The ledger cannot be read or written."""


def _encode(record: dict[str, Any]) -> bytes:
    record = redact(record)  # a key echoed by a server never reaches the file
    return (json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


TORN = "torn_tail"
"""Kind of the record a reopening writer appends after terminating a torn fragment (names its line)."""

_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "session": {"identity": str, "probes": dict},
    "attempt_start": {"slot": str, "attempt": int, "scenario": str, "configuration": str,
                      "execution_group": str, "repeat": int, "arm": str, "position": int},
    "attempt_end": {"slot": str, "attempt": int, "valid": bool},
    "request": {"slot": str, "attempt": int},
    "response": {"slot": str, "attempt": int},
    TORN: {"line": int},
}
"""Fields every record of a kind must carry, with their JSON types (what the resume logic reads)."""


def _record_problem(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return f"is a JSON {type(rec).__name__}, not an object"
    kind = rec.get("kind")
    need = _FIELDS.get(kind, {}) if isinstance(kind, str) else {}
    for name, typ in need.items():
        val = rec.get(name)
        if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
            return f"{rec['kind']} record lacks {name!r} of type {getattr(typ, '__name__', typ)}"
    if rec.get("kind") == "attempt_end" and not isinstance(rec.get("row", {}), dict):
        return "attempt_end record has a `row` that is not an object"
    return None


def read_records(path: Path) -> list[dict[str, Any]]:
    """All complete records of a ledger file, in order.

    A torn final fragment (no newline: a killed writer, never acknowledged) is skipped, and so is
    an old fragment that a later writer terminated and named in a `torn_tail` record.  Any other
    line that is not a well-formed record raises LedgerError naming its line number: the ledger
    is the sweep's only record, so a damaged one stops the run rather than being half-read.
    """
    if not path.exists():
        return []
    lines: list[tuple[int, bytes]] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break  # torn tail from a killed writer: never acknowledged
            lines.append((lineno, raw))
    parsed: dict[int, Any] = {}
    bad: dict[int, str] = {}
    for lineno, raw in lines:
        text = raw.strip()
        if not text:
            continue
        try:
            rec = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            bad[lineno] = f"is not JSON ({type(exc).__name__})"
            continue
        problem = _record_problem(rec)
        if problem:
            bad[lineno] = problem
            continue
        parsed[lineno] = rec
    torn = {r["line"] for r in parsed.values() if r.get("kind") == TORN}
    unexplained = sorted(n for n in bad if n not in torn)
    if unexplained:
        first = unexplained[0]
        more = f" (and {len(unexplained) - 1} more line(s): {unexplained[1:6]})" if len(unexplained) > 1 else ""
        raise LedgerError(f"{path}: line {first} {bad[first]}{more}; the ledger was damaged or edited. "
                          "Restore it from a backup, or move the damaged line(s) out and re-run "
                          "(their attempts then run again), or start a new --out")
    return [r for _, r in sorted(parsed.items()) if r.get("kind") != TORN]


class Ledger:
    """Durable append-only record log with a group-committing writer thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records = read_records(self.path)
        self.stamp: dict[str, Any] = {}
        """Fields added to every record appended from now on (e.g. the sealed plan's digest)."""
        self._fh = self.path.open("ab")
        size = self.path.stat().st_size
        if size:
            with self.path.open("rb") as fh:
                lines = sum(1 for _ in fh)
                fh.seek(size - 1)
                torn = fh.read(1) != b"\n"
            if torn:  # terminate the fragment so new records start clean, and name it as torn
                self._fh.write(b"\n" + _encode({"kind": TORN, "line": lines}))
                self._fsync()
        self._queue: queue.SimpleQueue[tuple[bytes, Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._writer, name="ledger-writer", daemon=True)
        self._closed = False
        self._error: BaseException | None = None
        self._thread.start()

    def _fsync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(b is None for b in batch)
            items = [b for b in batch if b is not None]
            try:
                for data, _ in items:
                    self._fh.write(data)
                self._fsync()
                err: BaseException | None = None
            except BaseException as exc:  # pragma: no cover - disk failure
                err = exc
                self._error = exc
            for _, done in items:
                done(err)
            if stop:
                return

    def append_sync(self, record: dict[str, Any]) -> None:
        """Append one record and return once it is on disk."""
        ev = threading.Event()
        box: list[BaseException | None] = [None]

        def done(err: BaseException | None) -> None:
            box[0] = err
            ev.set()

        self._submit(record, done)
        ev.wait()
        if box[0] is not None:
            raise LedgerError(f"cannot write ledger {self.path}: {box[0]}; check disk space and permissions")

    async def append(self, record: dict[str, Any]) -> None:
        """Append one record; resumes once it is durable, without blocking the event loop."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()

        def done(err: BaseException | None) -> None:
            def settle() -> None:
                if fut.done():
                    return
                if err is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(LedgerError(f"cannot write ledger {self.path}: {err}"))

            loop.call_soon_threadsafe(settle)

        self._submit(record, done)
        await fut

    def _submit(self, record: dict[str, Any], done: Any) -> None:
        if self._closed:
            raise LedgerError(f"ledger {self.path} is closed; open a new Ledger to append")
        if self.stamp:
            record = {**record, **self.stamp}
        self.records.append(record)
        self._queue.put((_encode(record), done))

    def close(self) -> None:
        """Flush and stop the writer thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        self._fh.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(slots=True)
class SlotState:
    """What the ledger says about one planned slot."""

    attempts: int = 0
    """Attempts that ended with an infrastructure fault reported by the endpoint (retry budget)."""
    started: int = 0
    """All attempts ever started, interrupted ones included (attempt numbering)."""
    final: dict[str, Any] | None = None
    """The attempt_end record that finished the slot, if any."""
    open_attempts: list[int] = field(default_factory=list)
    """Attempt numbers that started but never ended (runner killed)."""


def slot_states(records: list[dict[str, Any]], retryable: Any) -> dict[str, SlotState]:
    """Fold ledger records into per-slot state; `retryable(reason) -> bool` is the validity rule."""
    states: dict[str, SlotState] = {}
    for rec in records:
        kind = rec.get("kind")
        if kind not in ("attempt_start", "attempt_end"):
            continue
        st = states.setdefault(rec["slot"], SlotState())
        if kind == "attempt_start":
            st.started = max(st.started, int(rec["attempt"]))
            st.open_attempts.append(int(rec["attempt"]))
        else:
            att = int(rec["attempt"])
            if att in st.open_attempts:
                st.open_attempts.remove(att)
            if rec.get("interrupted"):
                continue
            if rec["valid"] or not retryable(rec.get("invalid_reason")):
                st.final = rec
            else:
                st.attempts += 1
    return states


def attempt_ends(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every attempt_end record in ledger order (valid, invalid and interrupted)."""
    return (r for r in records if r.get("kind") == "attempt_end")


# ---------------------------------------------------------------- evidence from the ledger
SLOT_FIELDS = ("scenario", "configuration", "execution_group", "repeat", "arm", "position")


@dataclass(slots=True)
class LedgerEvidence:
    """Package records assembled from a ledger (plain dicts, as analysis.runner.package writes them)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    """rows.csv records."""
    checks: list[dict[str, Any]] = field(default_factory=list)
    """checks.csv records."""
    folds: list[dict[str, Any]] = field(default_factory=list)
    """folds.jsonl records."""
    answers: list[dict[str, Any]] = field(default_factory=list)
    """answers.jsonl records."""


def evidence_rows(records: list[dict[str, Any]], slot_ids: set[str] | None = None) -> LedgerEvidence:
    """Package records of every ended attempt, in ledger order.

    The attempt that finished a slot (valid, or invalid by arm behaviour) carries the slot id as
    row_id; every other attempt (infrastructure faults, interrupted runs) is an invalid row with
    `#a<attempt>` appended, so a package assembled after any number of crashes has the same
    valid rows, with the same ids, as a fault-free run.  `slot_ids` restricts to planned slots.
    """
    starts: dict[tuple[str, int], dict[str, Any]] = {}
    served: dict[tuple[str, int], tuple[Any, Any]] = {}
    for rec in records:
        kind = rec.get("kind")
        if kind == "attempt_start":
            starts[(rec["slot"], int(rec["attempt"]))] = rec
        elif kind == "response" and rec.get("served_model") is not None:
            served.setdefault((rec["slot"], int(rec["attempt"])), (rec.get("served_model"), rec.get("served_provider")))
    out = LedgerEvidence()
    for rec in attempt_ends(records):
        sid, att = rec["slot"], int(rec["attempt"])
        if slot_ids is not None and sid not in slot_ids:
            continue
        start = starts.get((sid, att))
        if start is None:
            raise LedgerError(f"ledger has attempt_end for {sid} attempt {att} without its attempt_start; "
                              "the ledger was edited by hand: restore it or start a new --out")
        final = (rec.get("valid") or not str(rec.get("invalid_reason") or "").startswith("infrastructure")) \
            and not rec.get("interrupted")
        row_id = sid if final else f"{sid}#a{att}"
        row = {k: start[k] for k in SLOT_FIELDS}
        row.update({k: v for k, v in rec.get("row", {}).items() if k not in SLOT_FIELDS})
        row["row_id"] = row_id
        row["valid"] = bool(rec.get("valid"))
        row["invalid_reason"] = rec.get("invalid_reason") if not row["valid"] else None
        if row.get("served_models") is None and (sid, att) in served:
            sm, sp = served[(sid, att)]
            row["served_models"], row["providers"] = sm, sp
        out.rows.append(row)
        out.checks += [{**c, "row_id": row_id} for c in rec.get("checks", [])]
        arts = rec.get("artifacts") or {}
        out.folds += [{**f, "row_id": row_id} for f in arts.get("folds", [])]
        if arts.get("answer") is not None:
            out.answers.append({**arts["answer"], "row_id": row_id})
    return out


def write_evidence(out: Path, study: Any, ev: LedgerEvidence, *, extra_json: dict[str, Any] | None = None,
                   study_appendix: str = "") -> list[str]:
    """Write the package with analysis.runner.package.write_records (its invariants checked first).

    `study_appendix` (e.g. the runner's pin table) is appended to study.toml and the lock rewritten
    over the same files, so it is pinned like everything else.
    """
    from analysis.evidence import write_lock
    from analysis.runner.package import write_records

    names = write_records(out, study, ev.rows, ev.checks, folds=ev.folds, answers=ev.answers,
                          extra_json=extra_json)
    if study_appendix:
        path = Path(out) / "study.toml"
        write_text(path, path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + study_appendix)
        write_lock(out, names)
    return names
