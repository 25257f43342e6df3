"""The code's identity per build stage: which analysis sources each stage runs, and their digest.

Methods note: a stage's sources are the folders and files (relative to the ``analysis`` package)
whose code it imports. ``analysis.pipeline`` mixes their bytes into each stage's content key (a
changed source reruns the stage); ``analysis.results`` records ``source_digest("results")`` as
``provenance.code_sha256``. Nothing here imports the rest of the package.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from analysis.digest import file_sha256
from analysis.locations import package_path

PACKAGE_DIR = package_path().resolve()
"""The ``analysis`` package directory."""

STAGE_SOURCES: dict[str, tuple[str, ...]] = {
    "verify": ("evidence",),
    # runner: the preregistration block checks a sealed plan with analysis.runner.prereg
    "results": ("evidence", "estimators", "params.py", "results", "audit", "reconstruct", "plan", "runner"),
    "tables": ("tables", "estimators", "audit", "reconstruct", "evidence", "escape.py"),
    "figures": ("figures", "style", "tables", "estimators", "evidence", "escape.py"),
    "report": ("report", "tables", "viewer", "estimators", "evidence", "escape.py"),  # viewer: trajectories*.html
}
"""Sources per stage, relative to the analysis package (a folder means every file below it)."""




def source_files(names: Iterable[str]) -> list[Path]:
    """The files named (or below the folders named), relative to the package; caches excluded."""
    files: list[Path] = []
    for name in names:
        p = PACKAGE_DIR / name
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files += [f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                      and f.suffix not in (".pyc", ".pyo")]
    return sorted(set(files))


def source_lines(stage: str) -> list[str]:
    """One ``relative/path:sha256`` line per source file of ``stage``, sorted."""
    return [f"{f.relative_to(PACKAGE_DIR).as_posix()}:{file_sha256(f)}\n"
            for f in source_files(STAGE_SOURCES[stage])]


def source_digest(stage: str) -> str:
    """SHA-256 over the analysis source files a stage runs (relative path and bytes of each).

    The code's identity as results.json records it: equal in every clone of the same sources,
    whatever the commit, branch or working-tree state.
    """
    h = hashlib.sha256()
    for line in source_lines(stage):
        h.update(line.encode())
    return h.hexdigest()
