"""``python generate.py --check``: regenerate into a temporary directory and list the outputs of OUT
that differ (``--ignore-code``: apart from the code's identity)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.outdir import DEFAULT_WAIT_S, LOCK_FILE, MANAGED, QUARTO_OWN, BuildLock
from analysis.pipeline.pipeline import Progress, build
from analysis.safeio import SafeIOError, loads_json, read_bytes

UNMANAGED_REPORT_DIRS: tuple[str, ...] = QUARTO_OWN
"""Quarto's own files and render output inside report/, never written, removed or compared."""


def managed_files(out_dir: Path) -> set[str]:
    """Relative paths of every file under the managed outputs of OUT (Quarto's own output excluded)."""
    found: set[str] = set()
    for name in MANAGED:
        p = out_dir / name
        if p.is_file():
            found.add(name)
        elif p.is_dir():
            for f in p.rglob("*"):
                rel = f.relative_to(out_dir).as_posix()
                if f.is_file() and not any(rel == u or rel.startswith(u + "/") for u in UNMANAGED_REPORT_DIRS):
                    found.add(rel)
    return found


VOLATILE_RESULT_KEYS: tuple[tuple[str, ...], ...] = (("provenance", "code_sha256"),)
"""results.json fields that hold the code's identity, ignored by ``check(ignore_code=True)``.

A plain ``check`` compares them too (results.json records no commit, so a clone of the same sources
rebuilds it byte for byte); with ``ignore_code`` a refactor that changes no output passes. What derives
from the digest is masked as well: every code digest a tree's results.json records (these fields, and
the value of a preregistration's ``analysis code digest`` deviation) is replaced wherever that tree's
outputs print it."""
CODE_DEVIATION = "analysis code digest"
"""The preregistration deviation whose recorded value is the analysis code's digest."""
_MASK = b"<code digest>"


def _node(doc: Any, path: Sequence[str]) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def code_digests(out_dir: Path) -> frozenset[str]:
    """The code digests OUT's results.json records (VOLATILE_RESULT_KEYS and the preregistration's
    code-digest deviation), empty when it has none or cannot be read."""
    try:
        doc = loads_json(read_bytes(Path(out_dir) / "results.json"), "results.json")
    except (OSError, SafeIOError):
        return frozenset()
    found = {_node(doc, path) for path in VOLATILE_RESULT_KEYS}
    for dev in _node(doc, ("preregistration", "deviations")) or []:
        if isinstance(dev, dict) and dev.get("what") == CODE_DEVIATION:
            found |= {dev.get("planned"), dev.get("actual")}
    return frozenset(d for d in found if isinstance(d, str) and len(d) >= 16)


def _comparable(rel: str, data: bytes, mask: frozenset[str] | None = None) -> bytes:
    """``data`` as compared: results.json normalised (and, with a ``mask``, without VOLATILE_RESULT_KEYS);
    every digest of ``mask`` replaced in any file."""
    if rel == "results.json":
        try:
            doc = loads_json(data, rel)
        except SafeIOError:
            doc = None
        if doc is not None:
            for path in VOLATILE_RESULT_KEYS if mask is not None else ():
                parent = _node(doc, path[:-1])
                if isinstance(parent, dict):
                    parent.pop(path[-1], None)
            data = json.dumps(doc, sort_keys=True).encode()
    for digest in sorted(mask or ()):
        data = data.replace(digest.encode(), _MASK)
    return data


def diff_outputs(expected_dir: Path, actual_dir: Path, *, ignore_code: bool = False) -> list[str]:
    """Managed files that differ between two output trees (missing, extra or different bytes).

    ``ignore_code``: the code's identity is not compared (VOLATILE_RESULT_KEYS and what derives from it)."""
    exp, act = managed_files(expected_dir), managed_files(actual_dir)
    mask_exp = code_digests(expected_dir) if ignore_code else None
    mask_act = code_digests(actual_dir) if ignore_code else None
    differ = (exp ^ act) | {r for r in exp & act
                            if _comparable(r, read_bytes(expected_dir / r), mask_exp)
                            != _comparable(r, read_bytes(actual_dir / r), mask_act)}
    return sorted(differ)


def check(evidence_dir: Path, out_dir: Path, params: Any, *, progress: Progress | None = None,
          companions: Sequence[Path] = (), ignore_code: bool = False,
          pointers: Sequence[Path] = ()) -> list[str]:
    """Regenerate into a temporary directory and list the committed outputs of OUT that differ.

    An empty list means OUT is exactly what the evidence, params and code produce now; with
    ``ignore_code``, what they produce apart from the code's identity (VOLATILE_RESULT_KEYS), so that
    a refactor which changes no output passes and one which changes an output does not.
    """
    tmp = Path(tempfile.mkdtemp(prefix="generate-check-"))
    try:
        build(Path(evidence_dir), tmp, params, progress=progress, force=True, companions=companions,
              pointers=pointers)
        out_dir = Path(out_dir)
        if (out_dir / LOCK_FILE).is_file():  # a build of OUT in progress: compare after its commit
            try:
                with BuildLock(out_dir, DEFAULT_WAIT_S, progress or (lambda _line: None)):
                    return diff_outputs(tmp, out_dir, ignore_code=ignore_code)
            except PermissionError:  # a read-only checkout: nothing can be building there
                pass
        return diff_outputs(tmp, out_dir, ignore_code=ignore_code)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
