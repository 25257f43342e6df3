"""Nesting limits checked before a JSON or TOML text is parsed (no parser recursion past them).

Used by every door of :mod:`analysis.safeio` and by the evidence parsers (analysis.evidence.depth).

Method (JSON, :func:`json_depth`): one streaming pass in blocks of :data:`BLOCK` bytes (numpy):
a quote preceded by an even run of backslashes opens or closes a string, and outside strings the
brackets ``[ {`` count +1 and ``] }`` count -1; a running sum gives the deepest nesting. The state
carried between blocks (inside a string, trailing backslashes, level) is three integers, so memory
is a fixed amount (about 30 bytes per block byte), whatever the input's size or shape. (TOML,
:func:`toml_depth`: string literals and comments are blanked with one regular expression, whose
quantifiers are possessive so a long string keeps no backtracking state, then the same sum.)
A text deeper than :data:`MAX_DEPTH` is refused before the parser sees it, so no
parser can reach Python's recursion limit; the parsers are still wrapped for RecursionError.
TOML dotted keys and table names are limited to :data:`MAX_KEY_PARTS` parts.
"""
from __future__ import annotations

import re

import numpy as np

MAX_DEPTH = 32
"""Deepest nesting of arrays/objects/tables accepted in provenance.lock, study.toml, folds.jsonl."""
MAX_KEY_PARTS = 8
"""Most parts of one dotted TOML key or table name (``a.b.c`` has 3)."""

BLOCK = 1 << 20
"""Bytes scanned at once by :func:`json_depth` (its working memory is a fixed multiple of this)."""
_TOML_SKIP = re.compile(
    rb'"""(?:[^\\"]++|\\.|"{1,2}(?!"))*+"{3,5}|\'\'\'.*?\'{3,5}|"(?:[^"\\\n]++|\\.)*+"|\'[^\'\n]*+\'|#[^\n]*+',
    re.DOTALL)
_LINE = re.compile(rb"[^\n]*+(?:\n|\Z)")
"""One line of a text (the last one may lack its line feed)."""
_BLANK = bytes(10 if b == 10 else 32 for b in range(256))
"""Translation that blanks a string or comment: every byte a space but line feeds (lines keep their numbers)."""


def _toml_blanked(data: bytes) -> bytearray:
    """``data`` with TOML strings and comments blanked in place (one copy, whatever the number of strings)."""
    out = bytearray(data)
    for m in _TOML_SKIP.finditer(data):
        out[m.start():m.end()] = m.group(0).translate(_BLANK)
    return out
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def _depth(stripped: bytes | bytearray) -> tuple[int, int]:
    """(deepest nesting, byte offset where it is first reached) of bracket text, in blocks of BLOCK bytes."""
    view = memoryview(stripped)
    level, deepest, where = 0, 0, 0
    for start in range(0, len(view), BLOCK):
        steps = _OPEN[np.frombuffer(view[start:start + BLOCK], dtype=np.uint8)]
        if not steps.any():
            continue
        levels = np.cumsum(steps, dtype=np.int64)
        at = int(levels.argmax())
        if level + int(levels[at]) > deepest:
            deepest, where = level + int(levels[at]), start + at
        level += int(levels[-1])
    return deepest, where


_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def json_depth(data: bytes | bytearray | memoryview) -> int:
    """Deepest nesting of arrays and objects in a JSON text (strings ignored), streamed in blocks.

    Exact for valid JSON (where a backslash occurs only inside a string); any text gets a number.
    """
    view = memoryview(data).cast("B")
    in_string, run, level, deepest = 0, 0, 0, 0  # run: backslashes just before the block
    for start in range(0, len(view), BLOCK):
        arr = np.frombuffer(view[start:start + BLOCK], dtype=np.uint8)
        quote = arr == _QUOTE
        backslash = arr == _BACKSLASH
        if backslash.any():  # a quote after an odd run of backslashes is escaped
            pos = np.arange(arr.size, dtype=np.int32)
            last_other = np.maximum.accumulate(np.where(backslash, np.int32(-1), pos))  # last non-backslash <= i
            before = np.empty(arr.size, dtype=np.int64)  # backslashes just before position i
            before[0] = run
            before[1:] = pos[:-1] - last_other[:-1]
            before[1:][last_other[:-1] < 0] += run  # a run that began in an earlier block
            quote &= (before & 1) == 0
            tail = arr.size - 1 - int(last_other[-1])
            run = run + tail if last_other[-1] < 0 else tail
            del pos, last_other, before
        else:  # only the first byte can follow backslashes (of an earlier block)
            if run & 1:
                quote[0] = False
            run = 0
        steps = _OPEN[arr]
        if quote.any():
            inside = (np.cumsum(quote, dtype=np.int32) + in_string) & 1  # 1: inside a string after byte i
            in_string = int(inside[-1])
            steps = np.where(inside.astype(bool) | quote, np.int8(0), steps)
        elif in_string:
            continue
        if steps.any():
            levels = np.cumsum(steps, dtype=np.int64)
            deepest = max(deepest, level + int(levels.max()))
            level += int(levels[-1])
    return deepest


def toml_depth(data: bytes) -> tuple[int, int]:
    """(deepest bracket nesting, 1-based line where it is reached) of a TOML text."""
    stripped = _toml_blanked(data)
    depth, at = _depth(stripped)
    return depth, stripped.count(b"\n", 0, at) + 1


def toml_key_parts(data: bytes) -> tuple[int, int]:
    """(most parts of one dotted key or table name, 1-based line where it is) of a TOML text.

    Strings and comments are blanked first, so dots inside them never count; on each line the
    dots of a ``[table]`` header, or of the key before the first ``=``, are counted.
    """
    stripped = _toml_blanked(data)
    most, where = 0, 1
    for number, match in enumerate(_LINE.finditer(stripped), 1):  # one line at a time, no list of lines
        head = match.group(0).lstrip()
        if head.startswith(b"["):
            key = head.split(b"]", 1)[0]
        elif b"=" in head:
            key = head.split(b"=", 1)[0]
        else:
            continue
        parts = key.count(b".") + 1
        if parts > most:
            most, where = parts, number
    return most, where
