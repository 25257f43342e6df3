"""Loading: exact dtypes, nulls kept, physical line numbers, all problems at once, fuzzing."""
from __future__ import annotations

import datetime
import json
import warnings
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.evidence import (
    EvidenceError,
    SchemaError,
    StudyWarning,
    load_package,
    verify_package,
    write_lock,
)
from analysis.evidence.schema import CHECKS_COLUMNS, ROWS_COLUMNS, extra_column
from evidence_support import HANDMADE, copy_handmade, edit, where

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def handmade():
    return load_package(HANDMADE)


def test_handmade_dtypes_are_exactly_the_schema(handmade) -> None:
    assert handmade.rows.schema == pl.Schema({c.name: c.dtype for c in ROWS_COLUMNS})
    assert handmade.checks.schema == pl.Schema({c.name: c.dtype for c in CHECKS_COLUMNS})
    assert handmade.rows.height == 22 and handmade.checks.height == 252  # 17*14 + 2*7


def test_handmade_nulls_are_preserved(handmade) -> None:
    a3q = handmade.rows.filter(pl.col("row_id") == "a3-q").row(0, named=True)
    # a3-q: invalid (infrastructure), no outcome: empty checks_passed/headings/carried/answer
    assert a3q["checks_passed"] is None and a3q["headings_carried"] is None
    assert a3q["carried_chars"] is None and a3q["answer"] is None
    assert a3q["valid"] is False and a3q["invalid_reason"] == "infrastructure"
    assert a3q["parse_failures"] == 0 and a3q["checks_total"] == 14
    a1m = handmade.rows.filter(pl.col("row_id") == "a1-m").row(0, named=True)
    assert a1m["declared_chars"] is None and a1m["invalid_reason"] is None
    # a1-j's checks are not audited for the carrier (empty in_carrier), a1-q's are
    inc = handmade.checks.group_by("row_id").agg(pl.col("in_carrier").null_count().alias("n"))
    counts = dict(inc.iter_rows())
    assert counts["a1-j"] == 14 and counts["a1-q"] == 0
    # checks_passed equals the passed checks (hand count in tests/fixtures/handmade/README.md)
    passed = dict(handmade.checks.group_by("row_id").agg(pl.col("passed").sum()).iter_rows())
    assert passed["a3-j"] == 7 and passed["b1-q"] == 0 and passed["s1-a-j"] == 2
    assert handmade.rows.get_column("valid").sum() == 18


def test_handmade_study(handmade) -> None:
    study = handmade.study
    assert (study.control, study.treatment, study.scenario) == ("j", "q", "S5")
    assert study.recency_cutoff == datetime.date(2026, 1, 28)
    assert study.configurations["acme/alpha-2"].provider is None
    assert study.configurations["beta/beta-1"].quantization == "fp8"
    assert [r.execution_group for r in study.partition_runs] == ["g1", "g2", "g3"]


def test_verify_package_summary() -> None:
    s = verify_package(HANDMADE)
    assert (s.rows, s.valid_rows, s.checks, s.configurations) == (22, 18, 252, 3)
    assert s.files == ("checks.csv", "rows.csv", "study.toml")
    line = s.line()
    assert "\n" not in line and all(d in line for d in s.digests.values())


def test_bom_and_crlf_load_identically(tmp_path: Path, handmade) -> None:
    root = copy_handmade(tmp_path / "p")
    for name in ("rows.csv", "checks.csv"):
        data = (root / name).read_bytes()
        (root / name).write_bytes(b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
    write_lock(root)
    package = load_package(root)
    assert package.rows.equals(handmade.rows) and package.checks.equals(handmade.checks)


def test_columns_in_any_order_and_extra_columns_kept_as_text(tmp_path: Path, handmade) -> None:
    root = copy_handmade(tmp_path / "p")
    rows = pl.read_csv(HANDMADE / "rows.csv", infer_schema=False)
    rows = rows.with_columns(pl.lit("7").alias("note")).select(["note", *reversed(rows.columns)])
    rows.write_csv(root / "rows.csv")
    write_lock(root)
    package = load_package(root)
    # extra columns are kept as text in their own namespace (schema.extra_column)
    assert package.rows.columns[-1] == "extra:note" and package.rows.schema["extra:note"] == pl.String
    assert package.rows.drop("extra:note").equals(handmade.rows)


def test_quoted_multiline_fields_keep_physical_line_numbers(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    # a1-j (line 2) gets a 3-line answer with an escaped quote and a comma: a1-q moves to line 5
    edit(root, "rows.csv", "21000,all recalled\n", '21000,"all\nre""called,\r\nyes"\n')
    edit(root, "rows.csv", "a2-q,S5,acme/alpha-1,g1,2,q,1,true", "a2-q,S5,acme/alpha-1,g1,2,q,1,yes")
    with pytest.raises(SchemaError) as info:
        load_package(root)
    assert where(info.value) == {("rows.csv", 6, "valid")}
    edit(root, "rows.csv", "a2-q,S5,acme/alpha-1,g1,2,q,1,yes", "a2-q,S5,acme/alpha-1,g1,2,q,1,true")
    answer = load_package(root).rows.filter(pl.col("row_id") == "a1-j").item(0, "answer")
    assert answer == 'all\nre"called,\r\nyes'


def test_quoted_empty_field_is_null(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "rows.csv", "a1-m,S5,acme/alpha-1,g1,1,m,3,true,,", 'a1-m,S5,acme/alpha-1,g1,1,m,3,true,"",')
    row = load_package(root).rows.filter(pl.col("row_id") == "a1-m").row(0, named=True)
    assert row["invalid_reason"] is None


def test_all_problems_at_once(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "study.toml", "recency_cutoff = 2026-01-28", 'recency_cutoff = "2026-01-28"')
    edit(root, "rows.csv", "a1-q,S5,acme/alpha-1,g1,1,q,2,true,,14,14,",
         "a1-q,S5,acme/alpha-1,g1,1,q,2,maybe,,14,15,")
    edit(root, "rows.csv", "a2-q,S5,acme/alpha-1,g1,2,q,1,", "a2-q,S5,acme/alpha-1,g1,-1,q,1,")
    edit(root, "rows.csv", "b2-j,S5,acme/alpha-2,", "b2-q,S5,acme/alpha-7,")
    edit(root, "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,", "a1-j,dns zone,corp.vantgrid.test,1,")
    edit(root, "checks.csv", "c3-j,department,Отдел расчётов,false,", "c9-j,department,Отдел расчётов,false,")
    with pytest.raises(EvidenceError) as info:
        load_package(root)
    found = where(info.value)
    expected = {
        ("study.toml", 3, "study.recency_cutoff"),
        ("rows.csv", 3, "valid"), ("rows.csv", 3, "checks_passed"), ("rows.csv", 4, "repeat"),
        ("checks.csv", 11, "passed"),
        ("rows.csv", 11, "row_id"),            # b2-q now duplicates line 10
        ("rows.csv", 11, "configuration"),     # acme/alpha-7 is unknown
        ("checks.csv", 211, "row_id"),         # c9-j is not a row
        ("rows.csv", 19, "checks_total"),      # c3-j lost a check: 13 of 14
    }
    assert expected <= found, sorted(found - expected)


# ---- fuzzing: whatever the bytes, a package or the named error -------------------------------

def _load_with_rows(root: Path, data: bytes, name: str = "rows.csv") -> None:
    (root / name).write_bytes(data)
    write_lock(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StudyWarning)
        try:
            package = load_package(root)
        except EvidenceError as err:
            assert err.problems and all(p.file for p in err.problems)
            assert str(err)
        else:
            assert package.rows.schema == pl.Schema(
                {c.name: c.dtype for c in ROWS_COLUMNS}
                | {c: pl.String for c in package.rows.columns[len(ROWS_COLUMNS):]})


@FUZZ
@given(data=st.binary(max_size=600))
def test_fuzz_arbitrary_bytes_as_rows_csv(tmp_path_factory, data: bytes) -> None:
    _load_with_rows(copy_handmade(tmp_path_factory.mktemp("fz")), data)


_CHECKS = (HANDMADE / "checks.csv").read_bytes()[:2000]


@FUZZ
@given(data=st.one_of(st.binary(max_size=300),
                      st.tuples(st.integers(0, len(_CHECKS)), st.binary(max_size=4)).map(
                          lambda t: _CHECKS[:t[0]] + t[1] + _CHECKS[t[0] + 1:])))
def test_fuzz_checks_csv(tmp_path_factory, data: bytes) -> None:
    _load_with_rows(copy_handmade(tmp_path_factory.mktemp("fc")), data, "checks.csv")


_STUDY = (HANDMADE / "study.toml").read_text()


@FUZZ
@given(data=st.one_of(
    st.text(alphabet=st.sampled_from(list('[]."=\n 2026-01-28abc#{},')), max_size=200),
    st.tuples(st.integers(0, len(_STUDY)), st.text(max_size=4)).map(
        lambda t: _STUDY[:t[0]] + t[1] + _STUDY[t[0] + 1:])))
def test_fuzz_study_toml(tmp_path_factory, data: str) -> None:
    _load_with_rows(copy_handmade(tmp_path_factory.mktemp("fs")),
                    data.encode("utf-8", "surrogatepass"), "study.toml")


@FUZZ
@given(cell=st.one_of(st.from_regex(r"\A-?[0-9]{1,18}\Z"), st.text(max_size=8)))
def test_integer_cells_are_exactly_decimal_digits(tmp_path_factory, cell: str) -> None:
    """Property: an int cell loads iff it is an optional '-' and 1-18 ASCII digits, in range."""
    import re

    from analysis.evidence.schema import MAX_AMOUNT

    root = copy_handmade(tmp_path_factory.mktemp("fi"))
    quoted = '"' + cell.replace('"', '""') + '"'
    edit(root, "rows.csv", ",21000,all recalled", f",{quoted},all recalled")
    ok = re.fullmatch(r"-?[0-9]{1,18}", cell) is not None and 0 <= int(cell) <= MAX_AMOUNT
    try:
        value = load_package(root).rows.filter(pl.col("row_id") == "a1-j").item(0, "prompt_tokens_est")
    except SchemaError as err:
        assert not ok and {p.column for p in err.problems} == {"prompt_tokens_est"}
    else:
        assert ok and value == int(cell)


_ROWS = (HANDMADE / "rows.csv").read_bytes()
_ALPHABET = st.sampled_from([*b',"\r\n\x00\xef\xbb\xbf\xff01-9atruefls ', 0xC3, 0xA9])


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(_ROWS)), st.integers(0, 3),
                                st.lists(_ALPHABET, max_size=4)), min_size=1, max_size=4))
def test_fuzz_mutated_rows_csv(tmp_path_factory, edits) -> None:
    data = bytearray(_ROWS)
    for pos, delete, insert in edits:
        pos = min(pos, len(data))
        data[pos:pos + delete] = bytes(insert)
    _load_with_rows(copy_handmade(tmp_path_factory.mktemp("fm")), bytes(data))


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list('"\n\r,ab1 ')), max_size=80))
def test_fuzz_answer_field_roundtrip(tmp_path_factory, text: str) -> None:
    """Any answer text written with RFC 4180 quoting reads back exactly."""
    root = copy_handmade(tmp_path_factory.mktemp("fa"))
    quoted = '"' + text.replace('"', '""') + '"'
    edit(root, "rows.csv", "21000,all recalled\n", f"21000,{quoted}\n")
    answer = load_package(root).rows.filter(pl.col("row_id") == "a1-j").item(0, "answer")
    assert answer == (text or None)


def test_unknown_study_key_warns_and_loads(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "study.toml", 'scenario = "S5"\n', 'scenario = "S5"\nseed = 3\n\n[extra]\nx = 1\n')
    with pytest.warns(StudyWarning) as record:
        load_package(root)
    messages = " ".join(str(w.message) for w in record)
    assert "study.toml:7: unknown key study.seed" in messages and "extra" in messages


# a lone CR is not a line end in the format (LF or CRLF), so CR only comes as CRLF here
_CELL = st.lists(st.sampled_from(["a", "b", ",", '"', "\n", "\r\n", " "]), max_size=5).map("".join)


@FUZZ
@given(table=st.lists(st.lists(_CELL, min_size=3, max_size=3), max_size=8), crlf=st.booleans())
def test_scan_lines_agree_with_the_csv_module(table, crlf: bool) -> None:
    """Property: record start lines and cells match Python's csv module on RFC 4180 output."""
    import csv
    import io

    from analysis.evidence import csvscan

    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n" if crlf else "\n", quoting=csv.QUOTE_MINIMAL).writerows(
        [["h1", "h2", "h3"], *table])
    text = buf.getvalue()
    structure, problems = csvscan.scan(text.encode(), "t.csv")
    expected_lines, reader = [], csv.reader(io.StringIO(text, newline=""))
    previous_end = 1
    for i, _record in enumerate(reader):
        if i:
            expected_lines.append(previous_end + 1)
        previous_end = reader.line_num
    assert problems == [] and structure is not None, (text, problems)
    assert structure.lines.tolist() == expected_lines
    frame = pl.read_csv(structure.data.tobytes(), infer_schema=False, empty_string_is_null=False)
    assert frame.rows() == [tuple(r) for r in table]


# ---------------------------------------------------------------------------- booleans are lowercase
# Mistake caught: the loader comparing booleans case-insensitively (e.g. `s.str.to_lowercase()
# .is_in(["true", "false"])`), so `True` / `TRUE` / `False` load as booleans. docs/EVIDENCE_FORMAT.md
# ("booleans are exactly `true` or `false`") allows only the lowercase words, and the loader never
# infers types, so any other spelling is a SchemaError at the cell. Lines are physical lines of the
# hand-made package: rows.csv line 3 is a1-q (its
# `valid` is `true`), checks.csv line 11 is a1-j's "dns zone" (passed `true`, in_carrier empty) and
# line 16 is a1-q's "ledger service port" (passed `true`, in_carrier `true`).
A1Q = "a1-q,S5,acme/alpha-1,g1,1,q,2,true,,14,14,0,5,6100,9600,5,0,5,0,19000,all recalled"


DNS = "a1-j,dns zone,corp.vantgrid.test,true,\n"


LEDGER = "a1-q,ledger service port,41873,true,true\n"


@pytest.mark.parametrize(("file", "old", "new", "line", "column", "cell"), [
    ("rows.csv", A1Q, A1Q.replace(",true,,", ",True,,"), 3, "valid", "True"),
    ("rows.csv", A1Q, A1Q.replace(",true,,", ",TRUE,,"), 3, "valid", "TRUE"),
    ("checks.csv", DNS, DNS.replace(",true,", ",True,"), 11, "passed", "True"),
    ("checks.csv", LEDGER, LEDGER.replace(",true,true", ",true,FALSE"), 16, "in_carrier", "FALSE"),
], ids=["valid-True", "valid-TRUE", "passed-True", "in_carrier-FALSE"])
def test_booleans_in_another_case_are_refused(tmp_path: Path, file, old, new, line, column, cell) -> None:
    root = copy_handmade(tmp_path / "pkg")
    edit(root, file, old, new)
    with pytest.raises(SchemaError) as info:
        load_package(root)
    assert (file, line, column) in where(info.value), str(info.value)
    assert any(p.column == column and repr(cell) in p.message for p in info.value.problems)


# ------------------------------------------------------------------ a copy of the hand-made package per test
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


# ------------------------------------------------------------------ internal names
INTERNAL = ("__index", "__raw__repeat", "usual", "planned", "first", "n", "m0", "row_id_right", "extra:x")


def test_extra_columns_named_like_internal_ones_are_namespaced(pkg: Path) -> None:
    for name in ("rows.csv", "checks.csv"):
        frame = pl.read_csv(pkg / name, infer_schema=False)
        frame.with_columns(pl.lit("7").alias(c) for c in INTERNAL).write_csv(pkg / name)
    write_lock(pkg)
    package = load_package(pkg)
    for frame in (package.rows, package.checks):
        extras = [c for c in frame.columns if c.startswith("extra:")]
        assert extras == [extra_column(c) for c in INTERNAL]
        assert all(frame.schema[c] == pl.String for c in extras)


def test_a_package_with_colliding_extra_columns_builds(tmp_path: Path) -> None:
    from analysis.params import DEFAULT_PARAMS
    from analysis.pipeline import build

    pkg = copy_handmade(tmp_path / "pkg")
    for name in ("rows.csv", "checks.csv"):
        frame = pl.read_csv(pkg / name, infer_schema=False)
        frame.with_columns(pl.lit("1").alias(c) for c in INTERNAL).write_csv(pkg / name)
    write_lock(pkg)
    build(pkg, tmp_path / "out", DEFAULT_PARAMS, progress=None)
    assert json.loads((tmp_path / "out" / "results.json").read_text())["evidence"]

