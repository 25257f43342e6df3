"""The one named error of the I/O door."""
from __future__ import annotations

from pathlib import Path


class SafeIOError(ValueError):
    """A file cannot be read or written safely, or its contents break its format.

    One line, ``FILE[:LINE]: what is wrong; the fix``. The command lines print it as one line
    and exit 1. A ValueError, so a caller that already turned a parse ValueError into its own
    named error keeps doing so.
    """

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")
