"""The build's output directory (analysis.outdir): the commit never replaces a user's directory, stale-file
removal never follows a link out of OUT, and a stamp cannot name a path outside the managed outputs."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from analysis.outdir import BuildError, commit, is_managed_rel, stale_outputs


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------------- output safety
def test_a_users_directory_where_the_build_writes_a_file_is_refused(tmp_path: Path) -> None:
    # Plant: delete the `dest.is_dir()` check of outdir._preflight -> the commit moved the user's
    # directory aside (and a failed rollback deleted tables/t3_panel.csv/notes.txt).
    out, staging = tmp_path / "out", tmp_path / "out" / ".build-staging-x"
    (staging / "tables").mkdir(parents=True)
    (staging / "tables" / "t3_panel.csv").write_text("a\n")
    mine = out / "tables" / "t3_panel.csv" / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("my notes\n")
    with pytest.raises(BuildError, match="is a directory, but the build writes a file there"):
        commit(staging, out, ["tables/t3_panel.csv"], [])
    assert mine.read_text() == "my notes\n"


def test_stale_file_removal_never_follows_a_symlinked_directory_out_of_out(tmp_path: Path) -> None:
    # Plant: drop `not _inside_without_links(out_dir, rel)` from stale_outputs -> a file outside OUT,
    # reached through OUT/tables -> elsewhere, was listed for removal.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "old.csv"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "tables")
    said: list[str] = []
    assert stale_outputs(out, {"tables/old.csv": _sha(victim)}, [], said.append) == []
    assert victim.exists()


@pytest.mark.parametrize("rel", ["tables/../../victim.txt", "../victim.txt", "/etc/passwd",
                                 "tables", "results.json/x"])
def test_a_stamp_path_that_leaves_the_managed_outputs_is_refused(tmp_path: Path, rel: str) -> None:
    # Plant: drop the `".."` from is_managed_rel's part check -> stale_outputs removed OUT/../victim.txt.
    assert not is_managed_rel(rel)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    assert stale_outputs(out, {rel: _sha(victim)}, [], lambda _m: None) == []
    assert victim.exists()

