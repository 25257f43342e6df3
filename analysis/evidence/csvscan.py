"""Vectorised RFC 4180 structure scan of a CSV file held in memory.

Method: a double quote toggles "inside a quoted field"; escaped quotes (``""``)
toggle twice, so a comma or line feed is a delimiter exactly when an even
number of quotes precedes it. With numpy we find all quotes, commas and line
feeds in one pass, classify them by the parity of a running quote count, and
get every record's physical start line and field count (a bincount) without a
Python loop. Quotes must open at the start of a field and close at its end.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from .errors import Problem

BOM = b"\xef\xbb\xbf"
QUOTE, COMMA, LF, CR = 34, 44, 10, 13
MAX_PER_RULE = 1000  # problems listed per rule and file; the rest are counted in one more


@dataclass(frozen=True, slots=True)
class Structure:
    """Records of a structurally sound CSV file."""

    data: bytes
    """The bytes without a leading BOM."""
    header: tuple[str, ...]
    """Column names of the header record."""
    quoted: bool
    """Whether the file has any double quote (else no field can be a quoted empty string)."""
    lines: np.ndarray
    """Physical 1-based start line of every data record (header excluded)."""


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


def _line_of(lfpos: np.ndarray, pos: np.ndarray | int) -> np.ndarray:
    """1-based physical line of byte offsets ``pos`` (``lfpos``: offsets of all line feeds)."""
    return np.searchsorted(lfpos, pos) + 1


def scan(raw: bytes, file: str) -> tuple[Structure | None, list[Problem]]:
    """Check the structure of one CSV file; return it or the problems."""
    data = raw[len(BOM):] if raw.startswith(BOM) else raw
    if not data[:4096].strip(b"\r\n") and not data.strip(b"\r\n"):
        return None, [Problem(file, 1, None, "the file is empty; it needs a header row")]
    arr = np.frombuffer(data, dtype=np.uint8)
    n = arr.size
    if arr.max() >= 0x80:  # ASCII is valid UTF-8; otherwise let the codec find the first error
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            return None, [Problem(file, line, f"byte {col}",
                                  f"not UTF-8 ({exc.reason}); save the file as UTF-8")]
    # one pass: positions and kinds of every comma, line feed and quote
    special = np.flatnonzero((arr == COMMA) | (arr == LF) | (arr == QUOTE))
    kinds = arr[special]
    is_lf = kinds == LF
    is_q = kinds == QUOTE
    problems: list[Problem] = []
    qcount = int(is_q.sum())
    if qcount:
        qpos = special[is_q]
        lfpos = special[is_lf]
        if qpos.size % 2:
            line = int(_line_of(lfpos, qpos[-1]))
            return None, [Problem(file, line, None,
                                  "a quoted field opened on this line is never closed; "
                                  "close it with a double quote")]
        opener = np.zeros(qpos.size, dtype=bool)
        opener[0::2] = True
        prev = np.where(qpos > 0, arr[np.maximum(qpos - 1, 0)], LF)
        nxt = np.where(qpos < n - 1, arr[np.minimum(qpos + 1, n - 1)], LF)
        # an opener right after a quote follows a closer (quotes alternate), so the
        # pair is an escaped quote; the same holds for a closer right before a quote
        bad_open = opener & ~np.isin(prev, (COMMA, LF, QUOTE))
        bad_close = ~opener & ~np.isin(nxt, (COMMA, LF, CR, QUOTE))
        bad = np.flatnonzero(bad_open | bad_close)
        if bad.size:
            found = [Problem(file, int(_line_of(lfpos, qpos[i])), None,
                             "stray double quote: a field containing quotes must be enclosed "
                             "in quotes and each inner quote doubled (RFC 4180)")
                     for i in bad[: MAX_PER_RULE + 1]]
            capped(problems, found, file, "quote", bad.size)
            return None, problems
        # a comma or line feed is a delimiter when an even number of quotes precedes it
        outside = (np.bitwise_xor.accumulate(is_q.view(np.uint8)) == 0) & ~is_q
        lf_ordinal = np.flatnonzero(outside[is_lf]) + 1  # 1-based ordinal among all line feeds
        special = special[outside]
        is_lf = arr[special] == LF
    else:
        lf_ordinal = np.arange(1, int(is_lf.sum()) + 1)
    # ``special`` now holds only delimiters: commas of a record lie between two line feeds
    at = np.flatnonzero(is_lf)
    ends = special[at]
    commas = np.diff(np.concatenate(([-1], at, [special.size]))) - 1
    starts = np.concatenate(([0], ends + 1))
    ends = np.concatenate((ends, [n]))
    lines = np.concatenate(([1], lf_ordinal + 1))
    fields = commas + 1
    if starts[-1] >= n:  # file ends with a line feed: no record after it
        starts, ends, lines, fields = starts[:-1], ends[:-1], lines[:-1], fields[:-1]
    length = ends - starts
    blank = (length == 0) | ((length == 1) & (arr[np.minimum(starts, n - 1)] == CR))
    if blank[0]:
        return None, [Problem(file, 1, None, "the first line must be the header row")]
    header_bytes = data[starts[0]:ends[0]]
    try:
        header = tuple(next(csv.reader([header_bytes.decode("utf-8").rstrip("\r")])))
    except csv.Error as exc:
        return None, [Problem(file, 1, None, f"the header row cannot be read ({exc}); "
                              "write it as comma-separated column names")]
    if blank.any():
        found = [Problem(file, int(lines[i]), None, "blank line; remove it")
                 for i in np.flatnonzero(blank)[: MAX_PER_RULE + 1]]
        capped(problems, found, file, "blank line")
    wrong = np.flatnonzero(~blank & (fields != len(header)))
    if wrong.size:
        found = [Problem(file, int(lines[i]), None,
                         f"{int(fields[i])} fields but the header has {len(header)}; "
                         "a row is truncated or has a stray comma (quote fields that contain commas)")
                 for i in wrong[: MAX_PER_RULE + 1]]
        capped(problems, found, file, "field count")
    if problems:
        return None, problems
    return Structure(data=data, header=header, quoted=bool(qcount), lines=lines[1:]), []
