"""Vectorised RFC 4180 structure scan of a CSV file held in memory.

Method: a double quote toggles "inside a quoted field"; escaped quotes (``""``)
toggle twice, so a comma or line feed is a delimiter exactly when an even
number of quotes precedes it. With numpy we find all quotes, commas and line
feeds, classify them by the parity of a running quote count, and get every
record's physical start line and field count without a Python loop. Quotes must
open at the start of a field and close at its end. The buffer is scanned in
blocks of BLOCK bytes (the quote parity, line count and open record carry from
one block to the next), so the scan's own memory does not grow with the file;
it never copies the buffer.
"""
from __future__ import annotations

import codecs
import csv
from dataclasses import dataclass

import numpy as np

from .errors import Problem

BOM = b"\xef\xbb\xbf"
QUOTE, COMMA, LF, CR = 34, 44, 10, 13
MAX_PER_RULE = 1000  # problems listed per rule and file; the rest are counted in one more
BLOCK = 16 << 20
"""Bytes scanned per block."""
BATCH = 16 << 20
"""Approximate bytes of records per parsing batch (Structure.batches)."""


@dataclass(frozen=True, slots=True)
class Structure:
    """Records of a structurally sound CSV file."""

    data: memoryview
    """The bytes without a leading BOM (a view of the scanned buffer, not a copy)."""
    header: tuple[str, ...]
    """Column names of the header record."""
    quoted: bool
    """Whether the file has any double quote (else no field can be a quoted empty string)."""
    lines: np.ndarray
    """Physical 1-based start line of every data record (header excluded)."""
    offset: int = 0
    """Bytes before ``data`` in the scanned buffer (3 for a BOM, else 0)."""
    header_end: int = 0
    """End (exclusive) in ``data`` of the header record, with its line end."""
    batches: tuple[tuple[int, int, int], ...] = ()
    """Consecutive runs of whole data records: (start, end) byte offsets in ``data`` and the
    number of records, each about BATCH bytes, covering every data record in order."""


def capped(problems: list[Problem], found: list[Problem], file: str, what: str,
           total: int | None = None) -> None:
    """Append ``found`` to ``problems``, at most MAX_PER_RULE of them plus a count.

    ``total`` is the number of problems of this kind when ``found`` was cut short.
    """
    total = len(found) if total is None else total
    problems.extend(found[:MAX_PER_RULE])
    if total > MAX_PER_RULE:
        problems.append(Problem(file, None, None,
                                f"... and {total - MAX_PER_RULE} more {what} problems"))


def _lf_count(full: np.ndarray, end: int) -> int:
    """Line feeds in ``full[:end]``, counted block by block."""
    return sum(int(np.count_nonzero(full[a:min(a + BLOCK, end)] == LF)) for a in range(0, end, BLOCK))


def _last_lf(full: np.ndarray, end: int) -> int:
    """Offset of the last line feed in ``full[:end]``, or -1."""
    for b in range(end, 0, -BLOCK):
        hit = np.flatnonzero(full[max(0, b - BLOCK):b] == LF)
        if hit.size:
            return max(0, b - BLOCK) + int(hit[-1])
    return -1


def _utf8_problem(view: memoryview, full: np.ndarray, file: str) -> Problem | None:
    """The first UTF-8 error of ``view`` (checked block by block), or None."""
    n, pos = len(view), 0
    while pos < n:
        end = min(n, pos + max(BLOCK, 4))  # 4: room for a whole character, so ``used`` > 0
        try:
            _, used = codecs.utf_8_decode(view[pos:end], "strict", end == n)
        except UnicodeDecodeError as exc:
            at = pos + exc.start
            col = at - (_last_lf(full, at) + 1) + 1
            return Problem(file, _lf_count(full, at) + 1, f"byte {col}",
                           f"not UTF-8 ({exc.reason}); save the file as UTF-8")
        pos += used
    return None


class _Found:
    """Problems of one kind: the first MAX_PER_RULE + 1 kept, all counted."""

    def __init__(self) -> None:
        self.items: list[Problem] = []
        self.total = 0

    def add(self, file: str, lines: np.ndarray, message: str) -> None:
        self.total += int(lines.size)
        room = MAX_PER_RULE + 1 - len(self.items)
        self.items += [Problem(file, int(line), None, message) for line in lines[:max(room, 0)]]


def scan(raw: bytes | memoryview, file: str) -> tuple[Structure | None, list[Problem]]:
    """Check the structure of one CSV file; return it or the problems."""
    whole = memoryview(raw).cast("B") if memoryview(raw).format != "B" else memoryview(raw)
    offset = len(BOM) if whole[:len(BOM)] == BOM else 0
    data = whole[offset:]
    full = np.frombuffer(data, dtype=np.uint8)
    n = full.size
    if not bytes(data[:4096]).strip(b"\r\n") and not any(
            np.count_nonzero((full[a:a + BLOCK] != LF) & (full[a:a + BLOCK] != CR))
            for a in range(0, n, BLOCK)):
        return None, [Problem(file, 1, None, "the file is empty; it needs a header row")]
    if full.max() >= 0x80:  # ASCII is valid UTF-8; otherwise let the codec find the first error
        bad_utf8 = _utf8_problem(data, full, file)
        if bad_utf8 is not None:
            return None, [bad_utf8]
    s = _Scan(full, file)
    for a in range(0, n, BLOCK):
        s.block(a, min(n, a + BLOCK))
    s.finish()
    if s.quotes % 2:
        return None, [Problem(file, s.last_quote_line, None,
                              "a quoted field opened on this line is never closed; "
                              "close it with a double quote")]
    problems: list[Problem] = []
    if s.bad_quotes.total:
        capped(problems, s.bad_quotes.items, file, "quote", s.bad_quotes.total)
        return None, problems
    if s.header_blank:
        return None, [Problem(file, 1, None, "the first line must be the header row")]
    if s.header is None:
        return None, [Problem(file, 1, None, f"the header row cannot be read ({s.header_error}); "
                              "write it as comma-separated column names")]
    if s.blank.total:
        capped(problems, s.blank.items, file, "blank line", s.blank.total)
    if s.wrong.total:
        capped(problems, s.wrong.items, file, "field count", s.wrong.total)
    if problems:
        return None, problems
    lines = np.concatenate(s.lines) if s.lines else np.zeros(0, dtype=np.int64)
    return Structure(data=data, header=s.header, quoted=bool(s.quotes), lines=lines, offset=offset,
                     header_end=s.header_end, batches=tuple(s.batches)), []


class _Scan:
    """The state carried from block to block by :func:`scan`."""

    def __init__(self, full: np.ndarray, file: str) -> None:
        self.full, self.file, self.n = full, file, full.size
        self.quotes = 0                 # double quotes before the current block
        self.last_quote_line = 0
        self.lf_before = 0              # line feeds (inside quotes too) before the current block
        self.commas = 0                 # delimiting commas of the open record so far
        self.prev_end = -1              # offset of the line feed that closed the last record
        self.open_line = 1              # physical line where the open record starts
        self.records = 0                # records closed so far (the header included)
        self.header: tuple[str, ...] | None = None
        self.header_error = ""
        self.header_blank = False
        self.header_end = 0
        self.bad_quotes, self.blank, self.wrong = _Found(), _Found(), _Found()
        self.lines: list[np.ndarray] = []
        self.line_dtype = np.int32 if self.n < 2**31 - 2 else np.int64
        self.batches: list[tuple[int, int, int]] = []
        self._batch_start = -1          # first byte of the batch being gathered (-1: none yet)
        self._batch_records = 0

    def block(self, a: int, b: int) -> None:
        """Scan ``full[a:b]``: quotes, delimiters and the records that end in it."""
        full, blk = self.full, self.full[a:b]
        special = np.flatnonzero((blk == COMMA) | (blk == LF) | (blk == QUOTE))
        kinds = blk[special]
        is_lf = kinds == LF
        is_q = kinds == QUOTE
        lf_local = special[is_lf]
        parity = self.quotes & 1
        k = int(np.count_nonzero(is_q))
        if k:
            qpos = special[is_q]
            glob = qpos + a
            opener = np.zeros(k, dtype=bool)
            opener[parity::2] = True
            prev = np.where(glob > 0, full[np.maximum(glob - 1, 0)], LF)
            nxt = np.where(glob < self.n - 1, full[np.minimum(glob + 1, self.n - 1)], LF)
            # an opener right after a quote follows a closer (quotes alternate), so the
            # pair is an escaped quote; the same holds for a closer right before a quote
            bad = np.flatnonzero((opener & ~np.isin(prev, (COMMA, LF, QUOTE)))
                                 | (~opener & ~np.isin(nxt, (COMMA, LF, CR, QUOTE))))
            if bad.size:
                qlines = self.lf_before + np.searchsorted(lf_local, qpos[bad[:MAX_PER_RULE + 1]]) + 1
                self.bad_quotes.add(self.file, qlines, "stray double quote: a field containing quotes "
                                    "must be enclosed in quotes and each inner quote doubled (RFC 4180)")
                self.bad_quotes.total += int(bad.size) - int(qlines.size)
            self.last_quote_line = int(self.lf_before + np.searchsorted(lf_local, qpos[-1]) + 1)
            # a comma or line feed is a delimiter when an even number of quotes precedes it
            outside = ((np.bitwise_xor.accumulate(is_q.view(np.uint8)) ^ parity) == 0) & ~is_q
            self.quotes += k
        elif parity:  # the whole block lies inside a quoted field
            outside = np.zeros(special.size, dtype=bool)
        else:
            outside = None
        ordinal = self.lf_before + np.cumsum(is_lf)  # 1-based ordinal among all line feeds
        self.lf_before += int(lf_local.size)
        if outside is not None:
            special, is_lf, ordinal = special[outside], is_lf[outside], ordinal[outside]
        at = np.flatnonzero(is_lf)
        if not at.size:
            self.commas += int(special.size)
            return
        commas = np.diff(at, prepend=-1) - 1
        commas[0] += self.commas
        self.commas = int(special.size - at[-1] - 1)
        ends = special[at] + a
        self._records(ends, commas + 1, ordinal[at])

    def finish(self) -> None:
        """Close the record after the last line feed, if the file does not end with one."""
        if self.prev_end + 1 < self.n:
            self._records(np.array([self.n]), np.array([self.commas + 1]), None)
        if self._batch_start >= 0:
            self.batches.append((self._batch_start, self.n, self._batch_records))

    def _records(self, ends: np.ndarray, fields: np.ndarray, ordinals: np.ndarray | None) -> None:
        """Check the records that end at ``ends`` (line feed offsets, or n for the last record)."""
        full = self.full
        starts = np.concatenate(([self.prev_end + 1], ends[:-1] + 1))
        lines = np.concatenate(([self.open_line], ordinals[:-1] + 1)) if ordinals is not None \
            else np.array([self.open_line])
        length = ends - starts
        blank = (length == 0) | ((length == 1) & (full[np.minimum(starts, self.n - 1)] == CR))
        self.prev_end = int(ends[-1])
        if ordinals is not None:
            self.open_line = int(ordinals[-1]) + 1
        if self.records == 0:
            self.records = 1
            self.header_blank = bool(blank[0])
            self.header_end = int(min(ends[0] + 1, self.n))
            if not self.header_blank:
                try:
                    text = full[starts[0]:ends[0]].tobytes().decode("utf-8").rstrip("\r")
                    self.header = tuple(next(csv.reader([text])))
                except csv.Error as exc:
                    self.header_error = str(exc)
            starts, ends, lines, fields, blank = starts[1:], ends[1:], lines[1:], fields[1:], blank[1:]
        self.records += int(ends.size)
        if not ends.size:
            return
        self.blank.add(self.file, lines[blank], "blank line; remove it")
        if self.header is not None:
            wrong = ~blank & (fields != len(self.header))
            if wrong.any():
                width = len(self.header)
                # The cap truncates the line list on purpose; the counts zip to its length.
                for line, got in zip(lines[wrong][:MAX_PER_RULE + 1 - len(self.wrong.items)],
                                     fields[wrong], strict=False):
                    self.wrong.items.append(Problem(
                        self.file, int(line), None,
                        f"{int(got)} fields but the header has {width}; a row is truncated or has "
                        "a stray comma (quote fields that contain commas)"))
                self.wrong.total += int(np.count_nonzero(wrong))
        self.lines.append(lines.astype(self.line_dtype))
        if self._batch_start < 0:
            self._batch_start = int(starts[0])
        self._batch_records += int(ends.size)
        end = min(int(ends[-1]) + 1, self.n)
        if end - self._batch_start >= BATCH:
            self.batches.append((self._batch_start, end, self._batch_records))
            self._batch_start, self._batch_records = -1, 0
