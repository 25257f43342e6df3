"""Builds shared by the whole test session (issue 22, the suite's time): see tests/conftest.py ``prebuilt``."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path


class Prebuilt:
    """``build(evidence, OUT, DEFAULT_PARAMS, progress=None, companions=...)``, run once per session per
    (evidence, companions) as given, handed out as copies.

    ``copy(evidence, dest, companions)`` copies the built tree to ``dest`` (missing or an empty
    directory; parents are created) and returns ``dest``: the same files, stamp included, that the build would have
    written into ``dest`` itself. Evidence and companions are keyed by the paths as passed, since the
    report names the evidence path. Call it outside any monkeypatch of the pipeline: the first call builds
    the tree every later caller gets.

    ``root`` may be shared by the pytest-xdist workers of one run (issue 32): each tree is built by the
    first worker that needs it, under an ``flock`` on ``<tree>.lock``, and marked done by ``<tree>.done``
    only once complete; the other workers wait on the lock and copy the finished tree. A build that
    failed leaves no ``.done``, so the next caller rebuilds it (and fails the same way, in its own test).
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._trees: dict[tuple[str, tuple[str, ...]], Path] = {}

    def _tree(self, evidence: Path, companions: Sequence[Path]) -> Path:
        key = (str(evidence), tuple(str(c) for c in companions))
        tree = self._trees.get(key)
        if tree is None:
            name = "tree-" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
            tree = self._root / name
            self._root.mkdir(parents=True, exist_ok=True)
            with (self._root / f"{name}.lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                done = self._root / f"{name}.done"
                if not done.is_file():
                    from analysis.params import DEFAULT_PARAMS
                    from analysis.pipeline import build  # imported here: collection stays free of the pipeline

                    shutil.rmtree(tree, ignore_errors=True)  # a failed build's leftovers
                    build(Path(evidence), tree, DEFAULT_PARAMS, progress=None,
                          companions=[Path(c) for c in companions])
                    done.write_text(json.dumps(key), encoding="utf-8")
            self._trees[key] = tree
        return tree

    def copy(self, evidence: Path, dest: Path, companions: Sequence[Path] = ()) -> Path:
        tree = self._tree(evidence, companions)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise FileExistsError(f"{dest}: prebuilt.copy needs a missing or empty directory; pass a fresh path")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tree, dest, dirs_exist_ok=True)
        return dest
