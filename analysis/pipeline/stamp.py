"""OUT/.build-stamp.json: each stage's key and the manifest of the files it wrote, with their digests.

A stage whose key and output digests match the stamp is skipped; the manifest is also what the build
owns in OUT (it replaces or removes only files a stamp names). A missing, unreadable, hostile or
foreign-version stamp reads as empty: every stage rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from analysis.digest import file_sha256
from analysis.outdir import is_managed_rel
from analysis.pipeline.keys import STAMP_VERSION
from analysis.safeio import SafeIOError, read_json, write_json

STAMP_NAME = ".build-stamp.json"
STAMP_LIMIT = 64 << 20
"""Largest .build-stamp.json read (a larger one is ignored: every stage rebuilds)."""


def read_stamp(out_dir: Path) -> dict[str, Any]:
    try:
        stamp = read_json(out_dir / STAMP_NAME, limit=STAMP_LIMIT)
    except (OSError, SafeIOError):
        return {}  # a missing, unreadable or hostile stamp: every stage rebuilds
    return stamp if isinstance(stamp, dict) and stamp.get("version") == STAMP_VERSION else {}


def write_stamp(out_dir: Path, stages: dict[str, Any]) -> None:
    write_json(out_dir / STAMP_NAME, {"version": STAMP_VERSION, "stages": stages})


def unchanged(out_dir: Path, entry: Any, key: str) -> bool:
    if not isinstance(entry, dict) or entry.get("key") != key:
        return False
    outputs = entry.get("outputs", {})
    if not isinstance(outputs, dict):
        return False
    for rel, digest in outputs.items():
        if not is_managed_rel(rel):  # a stamp naming anything else is not ours: rebuild
            return False
        p = out_dir / rel
        if not p.is_file() or file_sha256(p) != digest:
            return False
    return True


def digests(out_dir: Path, paths: Iterable[Path]) -> dict[str, str]:
    return {p.relative_to(out_dir).as_posix(): file_sha256(p) for p in sorted(set(paths))}
