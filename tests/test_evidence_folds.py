"""folds.jsonl as an optional, locked evidence file: schema, named errors with line numbers, linear parsing."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from analysis.evidence import SchemaError, load_package, write_lock
from analysis.evidence.folds import FOLD_FIELDS, FOLDS_FILE, FoldsFormatError, load_folds_bytes
from analysis.evidence.schema import MAX_COUNT
from evidence_support import copy_handmade, run_cli, where
from support.paths import REPO

PILOT = REPO / "data" / "v2" / "pilot"


def _line(row_id: str = "r1", fold: int = 0, **over: object) -> dict:
    doc = {"row_id": row_id, "fold": fold, "chunks": [fold], "carrier": f"carrier {fold}", "parse_ok": True,
           "clipped": False, "finish_reason": "stop"}
    doc.update(over)
    return doc


def _bytes(*docs: object) -> bytes:
    return "".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs).encode()


def _problems(data: bytes, rows: tuple[str, ...] = ("r1", "r2")) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(FoldsFormatError) as info:
        load_folds_bytes(data, rows)
    assert "folds.jsonl breaks the evidence format" in str(info.value)
    return [(p.line, p.column, p.message) for p in info.value.problems]


def test_a_good_file_loads_with_its_line_numbers() -> None:
    frame = load_folds_bytes(_bytes(_line("r1", 0), _line("r2", 0), _line("r1", 1), _line("r2", 1, parse_ok=None)),
                             ("r1", "r2"))
    assert frame.get_column("line").to_list() == [1, 2, 3, 4]
    assert frame.get_column("fold").to_list() == [0, 0, 1, 1]
    assert frame.get_column("parse_ok").to_list() == [True, True, True, None]


def test_absent_file_is_none() -> None:
    assert load_folds_bytes(None, ("r1",)) is None


def test_every_problem_is_named_with_its_line_and_key() -> None:
    data = _bytes(
        _line("r1", 0),
        "{not json",                       # 2
        _line("ghost", 0),                 # 3 unknown row
        _line("r1", 2),                    # 4 skips fold 1
        _line("r2", 0),
        _line("r2", 0),                    # 6 repeated
        _line("r2", 1, carrier=42),        # 7 carrier not a string
        "[1, 2]",                          # 8 not an object
        {k: v for k, v in _line("r2", 1).items() if k != "clipped"},  # 9 missing key
        {**_line("r2", 1), "fold": True},  # 10 bool is not an int
    )
    got = _problems(data)
    lines = [(line, key) for line, key, _ in got]
    assert lines == [(2, None), (3, "row_id"), (4, "fold"), (6, "fold"), (7, "carrier"), (8, None),
                     (9, "clipped"), (10, "fold")]
    text = {line: msg for line, _, msg in got}
    assert "not JSON" in text[2]
    assert "'ghost' is not a row of rows.csv" in text[3]
    assert "skips fold 1" in text[4] and "line 1" in text[4]
    assert "repeats" in text[6] and "line 5" in text[6]
    assert "carrier must be a string, got int" in text[7]


def test_not_utf8_is_named() -> None:
    got = _problems(_bytes(_line()) + b'{"row_id": "r1", "fold": 1, "carrier": "\xff"}\n')
    assert got[0][0] == 2 and "not UTF-8" in got[0][2]


def test_schema_is_documented() -> None:
    doc = (REPO / "docs" / "EVIDENCE_FORMAT.md").read_text(encoding="utf-8")
    assert "folds.jsonl" in doc
    for field in FOLD_FIELDS:
        assert f"`{field.name}`" in doc, field.name


def test_ten_megabyte_carrier_parses_in_linear_time() -> None:
    small = _bytes(_line(carrier="x" * 1_000_000))
    big = _bytes(_line(carrier="x" * 10_000_000))
    t0 = time.perf_counter()
    load_folds_bytes(small, ("r1",))
    t1 = time.perf_counter()
    frame = load_folds_bytes(big, ("r1",))
    t2 = time.perf_counter()
    assert frame.get_column("carrier").str.len_chars().item() == 10_000_000
    assert t2 - t1 < 3.0
    assert t2 - t1 < 40 * max(t1 - t0, 0.005)  # 10x the data, far from 100x the time


def test_package_without_folds_loads_as_before(tmp_path: Path) -> None:
    assert load_package(REPO / "data" / "v1").folds is None


def test_pilot_folds_are_locked_and_loaded() -> None:
    pkg = load_package(PILOT)
    assert pkg.folds is not None and pkg.folds.height == 60
    assert set(pkg.folds.get_column("row_id")) == set(pkg.rows.get_column("row_id"))


def test_a_broken_folds_file_in_a_package_is_a_named_error(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    shutil.copytree(PILOT, root)
    lines = (root / "folds.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    del lines[2]  # a row now skips fold 2
    (root / "folds.jsonl").write_text("".join(lines), encoding="utf-8")
    locked = json.loads((root / "provenance.lock").read_text(encoding="utf-8"))["files"]
    write_lock(root, sorted(locked))
    with pytest.raises(FoldsFormatError) as info:
        load_package(root)
    assert [(p.file, p.line, p.column) for p in info.value.problems] == [("folds.jsonl", 3, "fold")]


def test_entry_folds_need_the_fixture_and_a_locked_copy_makes_the_package_self_contained(tmp_path: Path) -> None:
    from analysis.evidence.folds import graded_facts

    pkg = load_package(PILOT)
    facts, reasons = graded_facts(pkg, search=())            # the repository's fixtures not searched
    assert facts.height == 0 and "not found" in reasons[next(iter(reasons))]
    root = tmp_path / "pkg"
    shutil.copytree(PILOT, root)
    shutil.copyfile(REPO / "analysis" / "runner" / "fixture_files" / "s5-small.json", root / "fixture.json")
    locked = json.loads((root / "provenance.lock").read_text(encoding="utf-8"))["files"]
    write_lock(root, [*sorted(locked), "fixture.json"])
    facts, reasons = graded_facts(load_package(root), search=())
    assert facts.height == 168 and reasons == {}
    assert facts.filter(facts["check"] == "owning department").get_column("chunk").unique().to_list() == [3]


# ------------------------------------------------------------------ a copy of the hand-made package per test
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


@pytest.mark.parametrize("chunks", [str(2**64), str(2**63), str(MAX_COUNT + 1), "-1"])
def test_fold_indices_past_their_range_are_folds_errors(pkg: Path, chunks: str) -> None:
    line = {"row_id": "a1-j", "fold": 0, "carrier": "", "parse_ok": None, "clipped": False}
    (pkg / FOLDS_FILE).write_text(json.dumps(line)[:-1] + f', "chunks": [{chunks}]}}\n')
    write_lock(pkg, [FOLDS_FILE])
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert where(info.value) == {(FOLDS_FILE, 1, "chunks")}


@pytest.mark.parametrize("bad, words", [
    ('"\\ud800"', "lone surrogate"),
    ('"\\udfff tail"', "lone surrogate"),
    ("NaN", "NaN is not a JSON number"),
    ("1e999", "overflows a double"),
])
def test_folds_values_the_door_refuses_are_located_problems(tmp_path: Path, bad: str, words: str) -> None:
    root = shutil.copytree(PILOT, tmp_path / "pilot")
    lines = (root / "folds.jsonl").read_bytes().split(b"\n")
    doc = json.loads(lines[2])
    doc["carrier"] = "__BAD__"
    doc["extra_number"] = 1
    lines[2] = json.dumps(doc).replace('"__BAD__"', bad if "surrogate" in words else '"x"').replace(
        '"extra_number": 1', f'"extra_number": {bad}').encode()
    (root / "folds.jsonl").write_bytes(b"\n".join(lines))
    write_lock(root, [p.name for p in root.iterdir() if p.name not in ("provenance.lock", "datapackage.json")])
    with pytest.raises(FoldsFormatError) as info:
        load_package(root)
    first = info.value.problems[0]  # (the next line of that row then skips a fold: a second problem)
    assert (first.file, first.line) == ("folds.jsonl", 3) and words in first.message
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "folds.jsonl:3" in proc.stderr, proc.stderr

