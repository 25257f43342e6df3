"""Nesting limits checked before a JSON or TOML text is parsed (no parser recursion past them).

Used by every door of :mod:`analysis.safeio` and by the evidence parsers (analysis.evidence.depth).

Method: string literals (and TOML comments) are blanked with one regular expression, then
the brackets ``[ {`` count +1 and ``] }`` count -1; a running sum (numpy) gives the deepest
nesting. A text deeper than :data:`MAX_DEPTH` is refused before the parser sees it, so no
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

_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOML_SKIP = re.compile(
    rb'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.DOTALL)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def _depth(stripped: bytes) -> tuple[int, int]:
    """(deepest nesting, byte offset where it is first reached) of bracket text."""
    if not stripped:
        return 0, 0
    steps = _OPEN[np.frombuffer(stripped, dtype=np.uint8)]
    if not steps.any():
        return 0, 0
    level = np.cumsum(steps, dtype=np.int64)
    at = int(level.argmax())
    return int(level[at]), at


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays and objects in a JSON text (strings ignored)."""
    return _depth(_JSON_STRING.sub(b'""', data))[0]


def toml_depth(data: bytes) -> tuple[int, int]:
    """(deepest bracket nesting, 1-based line where it is reached) of a TOML text."""
    stripped = _TOML_SKIP.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data)
    depth, at = _depth(stripped)
    return depth, stripped.count(b"\n", 0, at) + 1


def toml_key_parts(data: bytes) -> tuple[int, int]:
    """(most parts of one dotted key or table name, 1-based line where it is) of a TOML text.

    Strings and comments are blanked first, so dots inside them never count; on each line the
    dots of a ``[table]`` header, or of the key before the first ``=``, are counted.
    """
    stripped = _TOML_SKIP.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data)
    most, where = 0, 1
    for number, line in enumerate(stripped.split(b"\n"), 1):
        head = line.lstrip()
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
