"""Frozen offline size heuristic: characters per token by content class.

Methods note. v1 sized prompts with a live tokenizer; v2 must size the fixture
and every fold prompt offline and identically on every machine, so token counts
are *estimated* from characters with a fixed ratio per content class (the
paper's Limitations: one multiplier undercounts identifier-dense text and
overcounts prose, so we keep one ratio per class). A line is assigned to a
class by the frozen rules in :func:`line_class`; characters outside Latin
script (the Cyrillic department name) are counted separately at their own
ratio. The constants are part of the fixture's identity: changing any of them
changes :data:`HEURISTIC_ID` and therefore every fixture digest.

When a tokenizer is available, :func:`exact_tokens` gives exact counts through
the :class:`Tokenizer` hook and :func:`calibrate` measures the per-class
ratios against it, so the heuristic can be reported beside the exact figure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = [
    "CHARS_PER_TOKEN",
    "HEURISTIC_ID",
    "MESSAGE_OVERHEAD_TOKENS",
    "ContentClass",
    "LlamaCppTokenizer",
    "Tokenizer",
    "calibrate",
    "clip_to_tokens",
    "estimate_class_tokens",
    "estimate_messages",
    "estimate_tokens",
    "exact_tokens",
    "line_class",
]


class ContentClass(StrEnum):
    """Content classes of the size heuristic."""

    PROSE = "prose"
    LOG = "log"
    STRUCTURED = "structured"
    IDENTIFIER = "identifier"
    NON_LATIN = "non_latin"


#: Characters per token, by content class (frozen; documented in the module
#: docstring). Prose ~4 chars/token is the usual BPE figure for English; log
#: lines and JSON carry more punctuation and digits, identifier-dense lines
#: split into many short pieces, and Cyrillic costs roughly one token per two
#: characters in common BPE vocabularies.
CHARS_PER_TOKEN: Mapping[ContentClass, float] = {
    ContentClass.PROSE: 4.2,
    ContentClass.LOG: 3.3,
    ContentClass.STRUCTURED: 3.0,
    ContentClass.IDENTIFIER: 2.5,
    ContentClass.NON_LATIN: 2.0,
}

#: Chat-template overhead per message (role markers), in tokens.
MESSAGE_OVERHEAD_TOKENS = 4

_LOG_RE = re.compile(r"^\s*(?:\[?t\+\d|\d{2,4}[-:/]|\[\w+\]\s+\w+=)")
_STRUCT_START = ("{", "[", '"', "}")
_NON_LATIN_RE = re.compile(r"[^\x00-\u024f]")
_SYMBOL_RE = re.compile(r"[^A-Za-z\s]")


def _heuristic_id() -> str:
    payload = json.dumps(
        {
            "ratios": {k.value: v for k, v in CHARS_PER_TOKEN.items()},
            "overhead": MESSAGE_OVERHEAD_TOKENS,
            "rules": [_LOG_RE.pattern, list(_STRUCT_START), "identifier>=0.30"],
        },
        sort_keys=True,
    )
    return "sizing-v1-" + hashlib.sha256(payload.encode()).hexdigest()[:12]


#: Identity of the frozen heuristic (recorded in fixtures and packages).
HEURISTIC_ID = _heuristic_id()


@runtime_checkable
class Tokenizer(Protocol):
    """Optional exact-count hook (e.g. a Hugging Face or llama.cpp tokenizer)."""

    def count(self, text: str) -> int:
        """Return the exact number of tokens of ``text``."""
        ...


def line_class(line: str) -> ContentClass:
    """Frozen rule assigning one line (without its Latin/non-Latin split) to a class."""
    stripped = line.lstrip()
    if not stripped:
        return ContentClass.PROSE
    if _LOG_RE.match(stripped):
        return ContentClass.LOG
    if stripped.startswith(_STRUCT_START):
        return ContentClass.STRUCTURED
    symbols = len(_SYMBOL_RE.findall(stripped))
    if symbols >= 0.30 * len(stripped):
        return ContentClass.IDENTIFIER
    return ContentClass.PROSE


def estimate_class_tokens(text: str, content_class: ContentClass) -> float:
    """Estimated tokens of ``text`` if all of it belonged to ``content_class``."""
    return len(text) / CHARS_PER_TOKEN[content_class]


def _line_tokens(line: str) -> float:
    non_latin = len(_NON_LATIN_RE.findall(line)) if not line.isascii() else 0
    latin_chars = len(line) - non_latin
    cls = line_class(line)
    return latin_chars / CHARS_PER_TOKEN[cls] + non_latin / CHARS_PER_TOKEN[ContentClass.NON_LATIN]


def estimate_tokens(text: str) -> int:
    """Estimated token count of arbitrary text (per-line classes, newline = 1 char).

    Rounded up so that any non-empty text costs at least one token.
    """
    if not text:
        return 0
    total = 0.0
    for line in text.split("\n"):
        total += _line_tokens(line)
    total += text.count("\n") / CHARS_PER_TOKEN[ContentClass.PROSE]
    return int(-(-total // 1))


def estimate_messages(contents: Iterable[str], extra_tokens: int = 0) -> int:
    """Estimated prompt tokens of chat messages: contents plus per-message overhead."""
    n = 0
    total = extra_tokens
    for content in contents:
        n += 1
        total += estimate_tokens(content)
    return total + n * MESSAGE_OVERHEAD_TOKENS


def clip_to_tokens(text: str, cap_tokens: int) -> str:
    """Longest prefix of ``text`` whose estimate is at most ``cap_tokens`` (binary search)."""
    if estimate_tokens(text) <= cap_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= cap_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


class LlamaCppTokenizer:
    """Exact counts with a GGUF model's own tokenizer (llama-cpp-python, vocabulary only)."""

    def __init__(self, gguf_path: str | Path) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # optional dependency
            raise ImportError("exact counts need llama-cpp-python: "
                              "pip install 'compaction-carriers[embedded]'") from exc
        self._llm = Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        """Tokens of ``text`` without BOS or special-token parsing."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def exact_tokens(text: str, tokenizer: Tokenizer | None) -> int | None:
    """Exact count through the hook, or ``None`` when no tokenizer is available."""
    return None if tokenizer is None else int(tokenizer.count(text))


@dataclass(frozen=True, slots=True)
class ClassCalibration:
    """Measured characters per token of one content class against a tokenizer."""

    content_class: str
    """The content class."""
    chars: int
    """Characters measured."""
    tokens: int
    """Exact tokens of those characters."""
    chars_per_token: float
    """Measured ratio (chars / tokens); NaN when no tokens."""
    frozen_ratio: float
    """The frozen constant used by the heuristic."""


def calibrate(text: str, tokenizer: Tokenizer) -> tuple[ClassCalibration, ...]:
    """Measure per-class chars/token of ``text`` line by line against ``tokenizer``."""
    chars: dict[ContentClass, int] = {c: 0 for c in ContentClass}
    toks: dict[ContentClass, int] = {c: 0 for c in ContentClass}
    for line in text.split("\n"):
        if not line:
            continue
        cls = ContentClass.NON_LATIN if _NON_LATIN_RE.search(line) else line_class(line)
        chars[cls] += len(line)
        toks[cls] += tokenizer.count(line)
    return tuple(
        ClassCalibration(
            content_class=c.value,
            chars=chars[c],
            tokens=toks[c],
            chars_per_token=chars[c] / toks[c] if toks[c] else float("nan"),
            frozen_ratio=CHARS_PER_TOKEN[c],
        )
        for c in ContentClass
    )
