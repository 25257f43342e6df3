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

LEDGER_VERSION = 1


class LedgerError(RuntimeError):
    """The ledger cannot be read or written."""


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


def read_records(path: Path) -> list[dict[str, Any]]:
    """All complete records of a ledger file, in order; a torn final fragment is skipped."""
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break  # torn tail from a killed writer: never acknowledged
            text = raw.strip()
            if not text:
                continue
            try:
                out.append(json.loads(text))
            except json.JSONDecodeError:
                # a torn fragment followed by our newline terminator on reopen
                continue
    return out


class Ledger:
    """Durable append-only record log with a group-committing writer thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records = read_records(self.path)
        self._fh = self.path.open("ab")
        size = self.path.stat().st_size
        if size:
            with self.path.open("rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    self._fh.write(b"\n")  # terminate a torn fragment so new records start clean
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
ROW_FIELDS = (
    "row_id", "scenario", "configuration", "execution_group", "repeat", "arm", "position", "valid",
    "invalid_reason", "checks_total", "checks_passed", "parse_failures", "headings_carried", "carried_chars",
    "declared_chars", "folds", "folds_clipped", "finish_stop", "finish_length", "prompt_tokens_est", "answer",
)
EXTRA_ROW_FIELDS = ("attempt", "infra_detail", "served_model", "served_provider")
CHECK_FIELDS = ("row_id", "check", "expected", "passed", "in_carrier")
SLOT_FIELDS = ("scenario", "configuration", "execution_group", "repeat", "arm", "position")


def evidence_rows(records: list[dict[str, Any]], slot_ids: set[str] | None = None
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, checks, artifacts) of every ended attempt, in ledger order.

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
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    artifacts: list[dict[str, Any]] = []
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
        row["attempt"] = att
        sm, sp = served.get((sid, att), (None, None))
        row["served_model"], row["served_provider"] = sm, sp
        rows.append(row)
        for c in rec.get("checks", []):
            checks.append({**{k: c.get(k) for k in CHECK_FIELDS if k != "row_id"}, "row_id": row_id})
        if rec.get("artifacts"):
            artifacts.append({"row_id": row_id, **rec["artifacts"]})
    return rows, checks, artifacts


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def write_csv(path: Path, fields: tuple[str, ...], records: list[dict[str, Any]]) -> None:
    """RFC 4180 CSV with LF line ends; None is an empty field, booleans are true/false."""
    import csv

    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(fields)
        for r in records:
            w.writerow([_cell(r.get(f)) for f in fields])


def write_evidence(out: Path, study_toml: str, rows: list[dict[str, Any]], checks: list[dict[str, Any]],
                   artifacts: list[dict[str, Any]], extra_files: dict[str, str] | None = None) -> list[str]:
    """Write rows.csv, checks.csv, study.toml, trajectories.jsonl (+ extras) and the provenance lock."""
    from analysis.evidence import write_lock

    out.mkdir(parents=True, exist_ok=True)
    (out / "study.toml").write_text(study_toml, encoding="utf-8")
    write_csv(out / "rows.csv", ROW_FIELDS + EXTRA_ROW_FIELDS, rows)
    write_csv(out / "checks.csv", CHECK_FIELDS, checks)
    names = ["trajectories.jsonl"]
    with (out / "trajectories.jsonl").open("w", encoding="utf-8") as fh:
        for a in artifacts:
            fh.write(json.dumps(a, ensure_ascii=False, sort_keys=True) + "\n")
    for name, text in (extra_files or {}).items():
        (out / name).write_text(text, encoding="utf-8")
        names.append(name)
    write_lock(out, names)
    return names
