"""Shared helpers of the evidence and CLI tests (foundation)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from analysis.evidence import write_lock
from support.paths import HANDMADE, REPO

PACKAGE_FILES = ("provenance.lock", "study.toml", "rows.csv", "checks.csv")


def copy_handmade(dest: Path) -> Path:
    """Copy the hand-made package's four files into ``dest`` (created) and return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_FILES:
        shutil.copyfile(HANDMADE / name, dest / name)
    return dest


def edit(root: Path, name: str, old: bytes | str, new: bytes | str, *, relock: bool = True,
         count: int = 1) -> None:
    """Replace ``old`` (which must occur exactly ``count`` times) by ``new`` in one file."""
    old_b = old.encode() if isinstance(old, str) else old
    new_b = new.encode() if isinstance(new, str) else new
    data = (root / name).read_bytes()
    found = data.count(old_b)
    if found != count:
        raise ValueError(f"{old_b!r} occurs {found} times in {name}, expected {count}")
    (root / name).write_bytes(data.replace(old_b, new_b))
    if relock:
        write_lock(root)


CLI_TIMEOUT_S = 120
"""How long a generate.py run of a test may take before it counts as hung."""


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run ``python generate.py ARGS`` in a subprocess and capture its output."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, str(REPO / "generate.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)


def cli_fails_cleanly(*args: str, expect: str) -> str:
    """Run generate.py (bounded); it must exit 1 with an ``error:`` first line holding ``expect``, no traceback."""
    import pytest

    try:
        r = run_cli(*args)
    except subprocess.TimeoutExpired:  # pragma: no cover - the regression this helper exists for
        pytest.fail(f"generate.py {' '.join(args)} hung (> {CLI_TIMEOUT_S}s)")
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.stderr.startswith("error: "), r.stderr[:500]
    assert expect in r.stderr, r.stderr[:2000]
    return r.stderr


def where(err: Exception) -> set[tuple[str, int | None, str | None]]:
    """(file, line, column) of every problem of an EvidenceError."""
    return {(p.file, p.line, p.column) for p in err.problems}  # type: ignore[attr-defined]
