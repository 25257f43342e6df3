"""SHA-256 of a file, streamed: the one digest helper of the build, OUT safety and the runner.

Evidence files are hashed by analysis.evidence (its safe reader, which also bounds and checks
what it opens); this helper is for files the package itself writes or ships.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
