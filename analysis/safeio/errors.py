"""The one named error of the I/O door."""
from __future__ import annotations

from pathlib import Path

MAX_MESSAGE = 2000
"""Longest message (characters) an error prints for one file or problem; the rest is counted, not shown."""


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out (a value from a hostile file
    never makes a message of megabytes)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


class SafeIOError(ValueError):
    """A file cannot be read or written safely, or its contents break its format.

    One line, ``FILE[:LINE]: what is wrong; the fix``. The command lines print it as one line
    and exit 1. A ValueError, so a caller that already turned a parse ValueError into its own
    named error keeps doing so.
    """

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.message = bounded(message)
        shown = bounded(self.path, 1000)
        where = shown if line is None else f"{shown}:{line}"
        super().__init__(f"{where}: {self.message}")
