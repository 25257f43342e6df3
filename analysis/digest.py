"""SHA-256 of a file, streamed: the one digest helper of the build, OUT safety and the runner.

Evidence files are hashed by analysis.evidence (its safe reader, which also bounds and checks
what it opens); this helper is for files the package itself writes or ships, read through the
door (analysis.safeio: regular files only, bounded).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from analysis.safeio import LIMITS, iter_chunks


def file_sha256(path: Path, limit: int = LIMITS["bytes"]) -> str:
    """Hex SHA-256 of a regular file's bytes, read in chunks (at most ``limit`` bytes)."""
    h = hashlib.sha256()
    for chunk in iter_chunks(path, limit):
        h.update(chunk)
    return h.hexdigest()
