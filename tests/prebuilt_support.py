"""Builds shared by the whole test session (issue 22, the suite's time): see tests/conftest.py ``prebuilt``."""

from __future__ import annotations

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
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._trees: dict[tuple[str, tuple[str, ...]], Path] = {}

    def _tree(self, evidence: Path, companions: Sequence[Path]) -> Path:
        key = (str(evidence), tuple(str(c) for c in companions))
        tree = self._trees.get(key)
        if tree is None:
            from analysis.params import DEFAULT_PARAMS
            from analysis.pipeline import build  # imported here: collection stays free of the pipeline

            tree = self._root / f"tree{len(self._trees)}"
            build(Path(evidence), tree, DEFAULT_PARAMS, progress=None, companions=[Path(c) for c in companions])
            self._trees[key] = tree
        return tree

    def copy(self, evidence: Path, dest: Path, companions: Sequence[Path] = ()) -> Path:
        tree = self._tree(evidence, companions)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise FileExistsError(f"{dest}: prebuilt.copy needs a missing or empty directory; pass a fresh path")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tree, dest, dirs_exist_ok=True)
        return dest
