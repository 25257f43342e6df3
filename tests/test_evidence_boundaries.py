"""Boundaries of the evidence readers that a one-character change would move (issue 32).

Each test names the fault it catches in a comment ("Plant: ..."); each was checked to fail with
that fault planted by hand and to pass on the code as it is.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from analysis.evidence import LockFormatError, SchemaError, StudyError, load_package, write_lock
from analysis.evidence.depth import MAX_DEPTH, json_depth, toml_depth
from analysis.evidence.errors import Problem
from analysis.evidence.files import UnsafeFileError, safe_path
from analysis.evidence.folds import FOLD_FIELDS, FOLDS_FILE, parse_folds
from analysis.evidence.provenance import read_lock
from analysis.evidence.schema import MAX_COUNT
from analysis.evidence.study import parse_study
from evidence_support import cli_fails_cleanly as _cli_fails_cleanly
from evidence_support import copy_handmade, edit, where


# ------------------------------------------------------------------------------- locked names
@pytest.mark.parametrize("name", ["sub/../rows.csv", "sub/./../rows.csv"])
def test_a_name_with_dot_dot_is_refused_even_when_it_resolves_inside_the_package(
        tmp_path: Path, name: str) -> None:
    # Plant: drop "..", from files._bad_relative -> `sub/../rows.csv` resolves to the package's own
    # rows.csv, passes the containment check, and the same file is read under two names.
    root = copy_handmade(tmp_path / "p")
    (root / "sub").mkdir()
    assert (root / name).resolve() == (root / "rows.csv").resolve()  # really inside the package
    with pytest.raises(UnsafeFileError, match="plain relative path"):
        safe_path(root, name)


# ------------------------------------------------------------------------------- study.toml depth
def _nested_study(depth: int) -> bytes:
    # A valid study.toml of the hand-made package with one extra key nested `depth` arrays deep.
    base = (Path(__file__).parent / "fixtures" / "handmade" / "study.toml").read_bytes()
    return b"deep = " + b"[" * depth + b"]" * depth + b"\n" + base


def test_study_toml_depth_limit_is_exact_at_its_boundary() -> None:
    # Plant: `depth >= MAX_DEPTH` in study._parse -> a file nested exactly MAX_DEPTH deep is refused;
    # `depth > MAX_DEPTH + 1` -> one level more reaches the TOML parser.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the extra key draws an "unknown key" warning
        at_limit = parse_study(_nested_study(MAX_DEPTH))
    assert at_limit.study is not None
    assert not any("nested deeper" in p.message for p in at_limit.problems)
    beyond = parse_study(_nested_study(MAX_DEPTH + 1))
    assert beyond.study is None
    assert [p.line for p in beyond.problems if "nested deeper" in p.message] == [1]


# ------------------------------------------------------------------------------- folds.jsonl ints
def _fold_line(**override: object) -> bytes:
    doc: dict[str, object] = {"row_id": "r1", "fold": 0, "chunks": [0], "carrier": "c",
                              "parse_ok": None, "clipped": False}
    doc.update(override)
    return json.dumps(doc).encode() + b"\n"


@pytest.mark.parametrize("key, at_limit, beyond", [
    ("fold", 0, MAX_COUNT + 1),
    ("chunks", [MAX_COUNT], [0, MAX_COUNT + 1]),
])
def test_folds_integer_fields_have_an_upper_bound(key: str, at_limit: object, beyond: object) -> None:
    # Plant: drop `<= MAX_COUNT` from folds._type_ok (int or int_list) -> a fold index or chunk of
    # 10**6 + 1 (or 10**30, past int64) is accepted and reaches the Int64 frame.
    kinds = {f.name: f.kind for f in FOLD_FIELDS}
    assert kinds["fold"] == "int" and kinds["chunks"] == "int_list"
    ok: list[Problem] = []
    frame = parse_folds(_fold_line(**{key: at_limit}) if key == "chunks" else _fold_line(), {"r1"}, ok)
    assert ok == [] and frame is not None and frame.height == 1
    for value in (beyond, 10**30 if key == "fold" else [10**30]):
        problems: list[Problem] = []
        assert parse_folds(_fold_line(**{key: value}), {"r1"}, problems) is None
        assert [(p.line, p.column) for p in problems] == [(1, key)]
        assert f"0..{MAX_COUNT}" in problems[0].message


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


# ------------------------------------------------------------------ a copy of the hand-made package per test
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


# ------------------------------------------------------------------ parser depth
def test_a_deeply_nested_lock_is_a_lock_format_error(pkg: Path, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    (pkg / "provenance.lock").write_text('{"algorithm": "sha256", "files": {"x": ' + deep + "}}\n")
    with pytest.raises(LockFormatError, match="nested deeper than 32"):
        load_package(pkg)
    _cli_fails_cleanly("verify", str(pkg), expect="nested deeper")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="nested deeper")
    _cli_fails_cleanly("lock", str(pkg), "--files", "nothing-here", expect="no such file")


def test_a_huge_integer_in_the_lock_is_a_lock_format_error(pkg: Path) -> None:
    (pkg / "provenance.lock").write_text('{"algorithm": "sha256", "files": ' + "9" * 5000 + "}\n")
    with pytest.raises(LockFormatError):
        load_package(pkg)


@pytest.mark.parametrize("text, line", [
    ("x = " + "[" * 50_000 + "]" * 50_000 + "\n", 1),
    ("x = " + "{a = " * 40 + "1" + "}" * 40 + "\n", 1),
    ("\n" + ".".join(["k"] * 2000) + " = 1\n", 2),
    ("[" + ".".join(["t"] * 9) + "]\n", 1),
])
def test_deep_or_long_toml_is_a_study_error(pkg: Path, text: str, line: int) -> None:
    data = (pkg / "study.toml").read_text() + text
    (pkg / "study.toml").write_text(data)
    write_lock(pkg)
    with pytest.raises(StudyError) as info:
        load_package(pkg)
    assert info.value.problems[0].line == len(data.splitlines()) - len(text.splitlines()) + line
    _cli_fails_cleanly("verify", str(pkg), expect="study.toml")


def test_a_deeply_nested_folds_line_is_a_folds_error(pkg: Path) -> None:
    (pkg / FOLDS_FILE).write_text('{"row_id": "a1-j", "x": ' + "[" * 50_000 + "]" * 50_000 + "}\n")
    write_lock(pkg, [FOLDS_FILE])
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert (FOLDS_FILE, 1, None) in where(info.value) and "nested deeper" in str(info.value)


def test_strings_with_brackets_do_not_count_as_nesting(pkg: Path) -> None:
    edit(pkg, "study.toml", 'name = "hand-made oracle package"',
         'name = "' + "[{" * 100 + '"  # ' + "[" * 100)
    assert load_package(pkg).study.name == "[{" * 100

