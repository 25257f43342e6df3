"""Promises that planted one-line faults showed no test pinned (issue 21, "Promises no test pins").

Each test names the fault it catches; each was checked to fail with that fault planted by hand
(the plant is written in the test's comment) and to pass on the code as it is.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from analysis.evidence import LockFormatError, verify_files
from analysis.evidence.depth import MAX_DEPTH, json_depth, toml_depth
from analysis.evidence.provenance import read_lock
from analysis.outdir import BuildError, commit, is_managed_rel, stale_outputs
from analysis.report.pandoc_render import ReportRenderError, render_html
from analysis.results import registry
from analysis.runner import secrets
from evidence_support import copy_handmade


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


# -------------------------------------------------------------------------------- evidence reading
@pytest.mark.parametrize("name", ["x/../rows.csv", "./rows.csv", "rows.csv/.", "a//rows.csv"])
def test_a_lock_naming_a_dotted_path_is_refused(tmp_path: Path, name: str) -> None:
    # Plant: `any(part in ("..",) ...)` only for a leading part -> x/../rows.csv verified rows.csv twice.
    root = copy_handmade(tmp_path / "p")
    files = json.loads((root / "provenance.lock").read_text())["files"]
    files[name] = files["rows.csv"]
    (root / "provenance.lock").write_text(json.dumps({"algorithm": "sha256", "files": dict(sorted(files.items()))},
                                                     indent=2, sort_keys=True) + "\n")
    with pytest.raises(LockFormatError, match="plain relative path"):
        read_lock(root)


def test_brackets_inside_json_strings_do_not_count_toward_depth() -> None:
    # Plant: json_depth without the string blanking -> a label "[[[[" made a lock "too deep".
    assert json_depth(b'{"a": "[[[[[[[[{{{{"}') == 1
    assert json_depth(b'{"a\\"[[[": ["x"]}') == 2  # an escaped quote does not end the string
    assert toml_depth(b'a = "[[[["\n# [[[[[[\nb = [[1]]\n') == (2, 3)


def test_depth_limits_hold_exactly_at_the_boundary(tmp_path: Path) -> None:
    # Plant: `json_depth(raw) >= MAX_DEPTH` in read_lock -> a lock nested exactly MAX_DEPTH deep was refused as
    # "nested deeper"; `> MAX_DEPTH + 1` -> one level more was parsed.
    assert json_depth(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) == MAX_DEPTH
    root = copy_handmade(tmp_path / "p")
    for depth, deeper in ((MAX_DEPTH, False), (MAX_DEPTH + 1, True)):
        inner = "[" * (depth - 1) + "]" * (depth - 1)
        (root / "provenance.lock").write_text('{"files": ' + inner + "}")
        with pytest.raises(LockFormatError) as info:
            read_lock(root)
        assert ("nested deeper" in str(info.value)) is deeper


# -------------------------------------------------------------------------------- key redaction
def test_redaction_covers_the_json_escaped_spelling_and_dict_keys_at_any_depth() -> None:
    # Plants: register_secret without json.dumps(value)[1:-1] -> the escaped spelling survived;
    # redact() without redact(k) for mapping keys -> a key used as a dict key survived.
    key = 'sk-"quoted"\\back'
    secrets.forget_secrets()
    try:
        secrets.register_secret(key)
        escaped = json.dumps(key)[1:-1]
        assert escaped != key
        assert secrets.redact_text(f"body: {escaped}") == "body: [REDACTED]"
        nested = {"a": [{"b": ({key: "v"},)}]}
        assert json.dumps(secrets.redact(nested)).count("REDACTED") == 1
        assert key not in json.dumps(secrets.redact(nested))
    finally:
        secrets.forget_secrets()


# -------------------------------------------------------------------------------- cross-references
def _render(tmp_path: Path, body: str) -> None:
    render_html(body, tmp_path, tmp_path)


def test_crossref_fails_on_a_duplicate_identifier(tmp_path: Path) -> None:
    # Plant: register() without the `if labels[id]` check -> two "Table 1"s and a link to the first.
    table = "| a |\n|---|\n| 1 |\n\nCaption.\n"
    body = f"::: {{#tbl-x}}\n{table}:::\n\n::: {{#tbl-x}}\n{table}:::\n\nSee @tbl-x.\n"
    with pytest.raises(ReportRenderError, match="duplicate identifier #tbl-x"):
        _render(tmp_path, body)


def test_crossref_fails_on_two_tables_in_one_float(tmp_path: Path) -> None:
    # Plant: `if #tables < 1` in number_table -> the second table lost its number silently.
    body = "::: {#tbl-x}\n| a |\n|---|\n| 1 |\n\n| b |\n|---|\n| 2 |\n\nCaption.\n:::\n\nSee @tbl-x.\n"
    with pytest.raises(ReportRenderError, match="must hold exactly one table, found 2"):
        _render(tmp_path, body)


def test_crossref_numbers_a_well_formed_table(tmp_path: Path) -> None:
    """The two failures above are about the fault, not about any table: one table renders."""
    render = render_html("::: {#tbl-x}\n| a |\n|---|\n| 1 |\n\nCaption.\n:::\n\nSee @tbl-x.\n", tmp_path, tmp_path)
    assert "Table\u00a01" in render.html


# -------------------------------------------------------------------------------- results registry
def test_the_registry_duplicate_key_check_fires(monkeypatch) -> None:
    # Plant: check_registry without the duplicate-key line -> a second block under an existing key
    # silently replaced the first in results.json.
    first = registry.RESULTS_BLOCKS[0]
    monkeypatch.setattr(registry, "RESULTS_BLOCKS", (*registry.RESULTS_BLOCKS, first))
    problems = registry.check_registry({})
    assert f"key {first.key!r} registered twice" in problems


def test_verify_of_the_handmade_package_still_passes() -> None:
    """Guard for the fixtures above: the untouched hand-made package verifies."""
    from evidence_support import HANDMADE

    verify_files(HANDMADE)
