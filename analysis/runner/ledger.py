"""Append-only JSONL ledger of every request, response and trajectory attempt of a sweep.

Methods note: one JSON object per line, written by a single writer thread.  A record is durable
(written, flushed and fsync'ed) before `append` returns; records that arrive while an fsync is in
progress share the next one (group commit), so durability per record does not serialise a
concurrent sweep on the disk.  No acknowledged record is ever rewritten.  A SIGKILL can leave a
torn tail: a last line without its newline (possibly a whole record but its newline), or a partial
record.  It was never acknowledged, so no caller relied on it: reading skips it, and the ledger's
first append moves it to a side file (``ledger.torn-<n>``, the ledger's file mode, never read
again), cuts it off, and says so in one line.  Ledgers from older runners, which terminated the
fragment in place and named it in a ``torn_tail`` record, read the same way (the named line is
skipped even if it parses).

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
import stat
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.escape import emit
from analysis.runner.ledger_evidence import (  # the records' meaning, importable from here too
    SLOT_FIELDS,
    LedgerError,
    LedgerEvidence,
    SlotState,
    attempt_ends,
    evidence_rows,
    slot_states,
    write_evidence,
)
from analysis.runner.secrets import redact
from analysis.safeio import (
    AppendFile,
    SafeIOError,
    dumps_json,
    iter_lines,
    loads_json,
    read_tail,
    write_bytes,
)

LEDGER_VERSION = 1
"""Version of the record format: every record carries it as ``v``; resume refuses another one (a
record without ``v`` is from before the field existed, the same format)."""
LEDGER_LIMIT = 1 << 40
"""Largest ledger read (read line by line: memory stays near the longest line)."""
RECORD_LIMIT = 64 * 1024 * 1024
"""Longest record (64 MiB, newline excluded): the reader refuses a longer line, so the writer never
writes one (a reply is capped at 64 MiB too, analysis.runner.bounded_http)."""


class RecordTooLong(LedgerError):
    """A record longer than RECORD_LIMIT: nothing was written; the caller ends its attempt invalid."""


def _encode(record: dict[str, Any], path: Path | str = "ledger.jsonl") -> bytes:
    """One strict-JSON line (no NaN/Infinity, no lone surrogate: a SafeIOError names the fault)."""
    record = redact({"v": LEDGER_VERSION, **record})  # a key echoed by a server never reaches the file
    return (dumps_json(record, path, indent=None, sort_keys=True, ensure_ascii=False,
                       separators=(",", ":")) + "\n").encode("utf-8")


TORN = "torn_tail"
"""Kind of the record older runners appended after terminating a torn fragment in place (names its
line); still read, so such ledgers resume, but no longer written."""

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


_ROW_INTS = ("checks_total", "checks_passed", "parse_failures", "headings_carried", "carried_chars",
             "declared_chars", "folds", "folds_clipped", "finish_stop", "finish_length", "prompt_tokens_est")
"""attempt_end row fields that are integers or null (what the package writer counts with)."""
_ROW_NEEDED = ("checks_total", "checks_passed", "parse_failures", "folds")
"""attempt_end row fields every ended attempt records (valid or not)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _end_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with the shape of an attempt_end record (row, checks, artifacts), or None."""
    row = rec.get("row", {})
    if not isinstance(row, dict):
        return "attempt_end record has a `row` that is not an object"
    if "row" in rec:
        missing = [k for k in _ROW_NEEDED if k not in row]
        if missing:
            return f"attempt_end row lacks {', '.join(missing)}"
    bad = [k for k in _ROW_INTS if row.get(k) is not None and not _is_int(row[k])]
    if bad:
        return f"attempt_end row field {bad[0]!r} is {row[bad[0]]!r}, not an integer or null"
    checks = rec.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        return "attempt_end `checks` is not a list of objects"
    arts = rec.get("artifacts") or {}
    if not isinstance(arts, dict):
        return "attempt_end `artifacts` is not an object"
    folds = arts.get("folds", [])
    if not isinstance(folds, list) or not all(isinstance(f, dict) for f in folds):
        return "attempt_end `artifacts.folds` is not a list of objects"
    if arts.get("answer") is not None and not isinstance(arts["answer"], dict):
        return "attempt_end `artifacts.answer` is not an object"
    return None


def _record_problem(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return f"is a JSON {type(rec).__name__}, not an object"
    version = rec.get("v", LEDGER_VERSION)
    if version != LEDGER_VERSION:
        return (f"has ledger format version {version!r}; this runner reads version {LEDGER_VERSION}: "
                "resume it with the runner that wrote it, or start a new --out")
    kind = rec.get("kind")
    need = _FIELDS.get(kind, {}) if isinstance(kind, str) else {}
    for name, typ in need.items():
        val = rec.get(name)
        if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
            return f"{rec['kind']} record lacks {name!r} of type {getattr(typ, '__name__', typ)}"
    if rec.get("kind") == "attempt_end":
        return _end_problem(rec)
    return None


_UNPARSABLE = "is not usable JSON"


@dataclass(slots=True)
class _Scan:
    """One pass over a ledger file: its records, and where a torn tail begins (if it has one)."""

    records: list[dict[str, Any]]
    """Complete records in order (torn fragments and torn_tail markers left out)."""
    keep: int
    """Bytes of the file up to the end of its last complete line (the rest is the torn tail)."""
    size: int
    """Bytes scanned."""
    tail_line: int | None = None
    """First line number of the torn tail, or None when the file ends cleanly."""
    tail_lines: int = 0
    """Lines in the torn tail (1, or 2 for an older runner's fragment and its partial torn_tail)."""


def _torn_marker_prefix(fragment: bytes, line: int) -> bool:
    """Whether ``fragment`` begins the torn_tail record an older runner wrote after terminating line
    ``line`` in place (``b"\n" + record``, one write: a crash can cut it anywhere)."""
    with_v = _encode({"kind": TORN, "line": line}).rstrip(b"\n")
    without_v = dumps_json({"kind": TORN, "line": line}, "ledger", indent=None, separators=(",", ":")).encode()
    return bool(fragment) and (with_v.startswith(fragment) or without_v.startswith(fragment))


def _cut_json(raw: bytes) -> bool:
    """Whether ``raw`` is JSON cut short (the parser runs out of input, not into a wrong byte): what an
    older runner's crash left when only the newline of its terminating write reached the disk."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason == "unexpected end of data"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    except ValueError:
        return False
    return False


def _damaged(path: Path, lines: list[int], reason: str) -> LedgerError:
    more = f" (and {len(lines) - 1} more line(s): {lines[1:6]})" if len(lines) > 1 else ""
    return LedgerError(f"{path}: line {lines[0]} {reason}{more}; the ledger was damaged or edited. "
                       "Restore it from a backup, or move the damaged line(s) out and re-run "
                       "(their attempts then run again), or start a new --out")


@dataclass(slots=True)
class _Lines:
    """What one read of a ledger file found, line by line (before the torn tail is told apart)."""

    parsed: dict[int, Any]
    """Line number -> the record on it, for every line that is a well-formed record."""
    bad: dict[int, str]
    """Line number -> why it is not a record."""
    ends: dict[int, int]
    """Line number -> byte offset just past it (0 -> 0)."""
    offset: int = 0
    """Bytes read."""
    last_line: int = 0
    """The last complete line."""
    fragment: bytes | None = None
    """The final line, when it lacks its newline."""


def _read_lines(path: Path) -> _Lines:
    """Every line of the ledger parsed and checked; a final line without its newline is kept apart, unread."""
    got = _Lines({}, {}, {0: 0})
    try:
        for lineno, raw, ended in iter_lines(path, limit=LEDGER_LIMIT, line_limit=RECORD_LIMIT):
            if not ended:
                got.fragment = raw  # torn tail from a killed writer: never acknowledged
                got.offset += len(raw)
                break
            got.offset += len(raw) + 1
            got.ends[lineno] = got.offset
            got.last_line = lineno
            text = raw.strip()
            if not text:
                continue
            try:
                rec = loads_json(text, path, line=lineno)
            except SafeIOError as exc:
                got.bad[lineno] = f"{_UNPARSABLE} ({exc.message})"
                continue
            problem = _record_problem(rec)
            if problem:
                got.bad[lineno] = problem
                continue
            got.parsed[lineno] = rec
    except SafeIOError as exc:
        raise LedgerError(f"{exc}; the ledger must be a regular file written by the runner") from None
    return got


def _tail_start(path: Path, got: _Lines, unexplained: list[int]) -> int | None:
    """First line of the torn tail (see _scan), or None when the file ends cleanly."""
    last_line = got.last_line
    if got.fragment is not None:
        if unexplained == [last_line] and _torn_marker_prefix(got.fragment, last_line):
            return last_line  # an older runner's fragment, then its torn_tail record cut short
        return last_line + 1
    if unexplained == [last_line] and last_line > max(got.parsed, default=0) \
            and _cut_json(_line_bytes(path, got.ends, last_line)):
        return last_line  # an older runner's fragment, terminated, its torn_tail record never written
    return None


def _scan(path: Path) -> _Scan:
    """Read a ledger once: complete records, and the torn tail a killed writer left (see read_records).

    Only the shapes a crash can leave are a torn tail: the final line without its newline (the
    runner writes each record and its newline in one write), an older runner's pair (a fragment
    it terminated with a newline, then its torn_tail record cut short), or, from that older runner,
    a final line of JSON cut short that its terminating newline reached alone.  Any other line that
    is not a record (a byte changed in an acknowledged record, lines that are not JSON) stops the
    run with its line number, and so does a ledger without a single complete record.
    """
    got = _read_lines(path)
    parsed, fragment = got.parsed, got.fragment
    # an older runner named the fragment it terminated in a torn_tail record on the very next line;
    # that line was never acknowledged, even if it parses (a whole record but its newline)
    torn = {n - 1 for n, r in parsed.items() if r.get("kind") == TORN and r["line"] == n - 1}
    unexplained = sorted(n for n in got.bad if n not in torn)
    tail_line = _tail_start(path, got, unexplained)
    if tail_line is not None and unexplained == [tail_line]:
        unexplained = []
    if unexplained:  # every damaged line counted, a would-be torn tail among them
        raise _damaged(path, unexplained, got.bad[unexplained[0]])
    records = [r for n, r in sorted(parsed.items()) if r.get("kind") != TORN and n not in torn]
    head = (fragment or b"")[:2]
    if tail_line is not None and not parsed and not (head and b'{"'.startswith(head)):
        raise LedgerError(f"{path}: line {tail_line} is not a record and the file holds none; it is not a "
                          "ledger the runner wrote. Move it out of --out, or choose a new --out")
    if tail_line is None:
        return _Scan(records, got.offset, got.offset)
    return _Scan(records, got.ends[tail_line - 1], got.offset, tail_line,
                 got.last_line + (fragment is not None) - tail_line + 1)


def _line_bytes(path: Path, ends: dict[int, int], line: int) -> bytes:
    """The bytes of complete line ``line`` (it ends the file), without its newline."""
    start = ends.get(line - 1, 0)
    return read_tail(path, ends[line] - start)[:-1]


def _stderr_line(message: str) -> None:
    emit(message, sys.stderr, one_line=True)


def read_records(path: Path) -> list[dict[str, Any]]:
    """All complete records of a ledger file, in order.

    A torn tail (a final line without its newline, or an older runner's terminated fragment and
    its torn_tail record cut short: a killed writer, never acknowledged) is skipped, and so is a
    line that an older writer terminated in place and named in a `torn_tail` record on the next
    line.  Any other line that is not a well-formed record (and a file without one) raises
    LedgerError naming its line number: the ledger is the sweep's only record, so a damaged one
    stops the run rather than being half-read.
    """
    if not path.exists():
        return []
    return _scan(path).records


class Ledger:
    """Durable append-only record log with a group-committing writer thread."""

    def __init__(self, path: Path, say: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stamp: dict[str, Any] = {}
        """Fields added to every record appended from now on (e.g. the sealed plan's digest)."""
        self.set_aside: Path | None = None
        """The side file a torn tail was moved to before this ledger's first append, else None."""
        try:
            self._fh = AppendFile(self.path)
        except SafeIOError as exc:
            raise LedgerError(str(exc)) from None
        try:
            # read-only until the first append: a caller that refuses the ledger (another sweep's
            # identity) or only reads it (--package-only) leaves the file as it found it
            self._tail: _Scan | None = _scan(self.path)
            self.records = self._tail.records
            if self._tail.tail_line is None:
                self._tail = None
        except BaseException:
            self._fh.close()
            raise
        self._say = say or _stderr_line
        self._queue: queue.SimpleQueue[tuple[bytes, Any] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._writer, name="ledger-writer", daemon=True)
        self._closed = False
        self._error: BaseException | None = None
        self._thread.start()

    def _set_aside(self, scan: _Scan, say: Callable[[str], None]) -> None:
        """Move the torn tail to a side file (ledger.torn-<n>), then cut it off the ledger.

        The side file is written (and fsync'ed) before the cut, so a crash in between leaves the
        tail in the ledger to be set aside again; nothing ever reads the side file.
        """
        size = self._fh.size()
        try:
            tail = read_tail(self.path, size - scan.keep)
            n = 1
            while (side := self.path.with_name(f"{self.path.stem}.torn-{n}")).exists() or side.is_symlink():
                n += 1
            mode = stat.S_IMODE(os.fstat(self._fh.fd).st_mode)  # the ledger's own (it may be private)
            write_bytes(side, tail, mode=mode, durable=True)
            self._fh.cut(scan.keep)
        except (OSError, SafeIOError) as exc:
            raise LedgerError(f"cannot set aside the torn tail of {self.path}: {exc}; check disk space and "
                              "permissions, then re-run") from None
        self.set_aside = side
        first = scan.tail_line or 0
        where = f"line {first}" if scan.tail_lines <= 1 else f"lines {first}-{first + scan.tail_lines - 1}"
        say(f"{self.path.name}: a torn last record ({where}, {len(tail)} bytes, never acknowledged) "
            f"was moved to {side.name}; its attempt runs again")

    def _fsync(self) -> None:
        self._fh.sync()

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
        await self.append_soon(record)

    def append_soon(self, record: dict[str, Any]) -> asyncio.Future[None]:
        """Queue one record now (RecordTooLong or LedgerError at once); the future is done when it is durable."""
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

            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the loop closed (the sweep was interrupted): nobody awaits this record
                return

        self._submit(record, done)
        return fut

    def _submit(self, record: dict[str, Any], done: Any) -> None:
        if self._closed:
            raise LedgerError(f"ledger {self.path} is closed; open a new Ledger to append")
        if self._tail is not None:  # the first append: set the torn tail aside, then write after it
            tail, self._tail = self._tail, None
            self._set_aside(tail, self._say)
        if self.stamp:
            record = {**record, **self.stamp}
        try:
            data = _encode(record, self.path)
        except SafeIOError as exc:
            raise LedgerError(f"{exc}; the record was not written (the server sent a value strict JSON "
                              "cannot hold)") from None
        if len(data) - 1 > RECORD_LIMIT:  # the reader would refuse the line and every later resume with it
            raise RecordTooLong(f"a {record.get('kind')} record of {len(data) - 1:,} bytes is longer than the "
                                f"{RECORD_LIMIT:,} a ledger line may hold; it was not written")
        self.records.append(record)
        self._queue.put((data, done))

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



__all__ = ["LEDGER_LIMIT", "LEDGER_VERSION", "RECORD_LIMIT", "SLOT_FIELDS", "TORN", "Ledger", "LedgerError",
           "LedgerEvidence", "RecordTooLong", "SlotState", "attempt_ends", "evidence_rows", "read_records",
           "slot_states", "write_evidence"]
