"""The whole-token presence rule: when a graded value counts as present in a text.

Methods note. This rule defines the evidence columns ``in_carrier`` (the value in the final
carrier), ``passed_presence`` (the value anywhere in the answer) and the folds' presence, so it
lives with the evidence format: the runner grades with it (analysis.runner.graders) and the
analysis re-reads carriers with it (analysis.estimators.fact_timeline).

Whole token. The characters before and after the match must not be word characters (``\\w``,
Unicode-aware). A joiner (``- _ . / @ : +``) next to the match is allowed only when it is itself
followed (after) or preceded (before) by a non-word character or the text boundary, so a
sentence-final ``47311.`` passes while ``47311.5``, ``x-47311`` and ``v1.2.3-hf4x`` fail.
Normalisation (both sides): Unicode NFC and runs of spaces/tabs/NBSP collapsed to one space;
case is preserved unless the check declares otherwise.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["JOINERS", "JOINERS_BEFORE", "SPACES", "contains_token", "normalise_text"]

JOINERS = "-_./@:+"
"""Joiners allowed after a value when a non-word character or the end follows them."""
JOINERS_BEFORE = "-_./@+"
"""Joiners allowed before a value likewise: "port:47311" keeps the value whole; "x-47311" does not."""
SPACES = re.compile(r"[ \t\u00a0\u2007\u202f]+")
"""Runs of spaces, tabs and no-break spaces (collapsed to one space)."""


def normalise_text(text: str) -> str:
    """Unicode NFC with runs of spaces/tabs/NBSP collapsed to one space."""
    return SPACES.sub(" ", unicodedata.normalize("NFC", text))


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _boundary_ok(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    if before:
        if _is_word(before):
            return False
        if before in JOINERS_BEFORE and start >= 2 and _is_word(text[start - 2]):
            return False
    after = text[end] if end < len(text) else ""
    if after:
        if _is_word(after):
            return False
        if after in JOINERS and end + 1 < len(text) and _is_word(text[end + 1]):
            return False
    return True


def contains_token(text: str, value: str, *, case_sensitive: bool = True) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole token (see module note)."""
    hay, needle = normalise_text(text), normalise_text(value).strip()
    if not needle:
        return False
    if not case_sensitive:
        hay, needle = hay.casefold(), needle.casefold()
    start = hay.find(needle)
    while start != -1:
        if _boundary_ok(hay, start, start + len(needle)):
            return True
        start = hay.find(needle, start + 1)
    return False
