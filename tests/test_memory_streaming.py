"""Issue 31, finding 6: the nesting check streams, so each JSON reader's memory is linear in its input
with a small constant: peak at most 3x the input (the input itself included) plus a fixed amount, on
100 MB inputs shaped as the hostile corpus shaped them (one huge string inside brackets).

Measured with tracemalloc (numpy and the json parser report to it): the peak above what was allocated
before the call, which holds the input.
"""
from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.evidence.datapackage import datapackage_problems
from analysis.evidence.folds import parse_folds
from analysis.safeio import loads_json
from analysis.safeio.depth import json_depth

MB = 1 << 20
SIZE = 100 * MB
FIXED = 48 * MB
"""The fixed amount: numpy's blocks of the depth scan, the interpreter's small objects."""


def _peak_above(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _nested_string(n: int, brackets: int = 80) -> bytes:
    return b"[" * brackets + b'"' + b"a" * n + b'"' + b"]" * brackets


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["one string", "escapes", "many strings"])
def test_json_depth_needs_a_fixed_amount(shape: str) -> None:
    data = {"one string": _nested_string(SIZE),
            "escapes": b'["' + b'\\"[' * (SIZE // 3) + b'"]',
            "many strings": b'["ab\\\\",{}],' * (SIZE // 12)}[shape]
    depth = json_depth(data)
    assert depth == {"one string": 80, "escapes": 1, "many strings": 2}[shape]
    assert _peak_above(lambda: json_depth(data)) <= FIXED


@pytest.mark.slow
def test_a_reply_holds_its_text_and_parse_only() -> None:
    data = _nested_string(SIZE)  # 80 brackets: more than the door's 64, so the scan runs
    with pytest.raises(ValueError, match="nested deeper"):
        loads_json(data, "reply")
    shallow = _nested_string(SIZE, 30)
    assert _peak_above(lambda: loads_json(data, "reply", max_depth=100)) <= 2 * SIZE + FIXED
    assert _peak_above(lambda: loads_json(shallow, "reply")) <= 2 * SIZE + FIXED


@pytest.mark.slow
def test_a_folds_line_holds_its_text_and_parse_only() -> None:
    line = b'{"row_id": "r", "fold": 0, "x": ' + _nested_string(SIZE, 31) + b"}\n"
    problems: list[Any] = []
    assert _peak_above(lambda: parse_folds(line, None, problems)) <= 2 * SIZE + FIXED
    deep = b'{"x": ' + _nested_string(SIZE, 40) + b"}\n"
    problems.clear()
    assert _peak_above(lambda: parse_folds(deep, None, problems)) <= SIZE + FIXED  # the line, refused by the scan
    assert problems and "nested deeper" in problems[0].message


@pytest.mark.slow
def test_a_locked_datapackage_with_long_strings_holds_its_text_and_parse_only() -> None:
    data = b'{"resources": [], "title": ' + _nested_string(SIZE, 20) + b"}"
    assert _peak_above(lambda: datapackage_problems(data, {}, {})) <= 2 * SIZE + FIXED


def _parsed_depth(doc: Any) -> int:
    """Oracle: nesting of the parsed document (json.loads), walked directly."""
    if isinstance(doc, list):
        return 1 + max((_parsed_depth(v) for v in doc), default=0)
    if isinstance(doc, dict):
        return 1 + max((_parsed_depth(v) for v in doc.values()), default=0)
    return 0


_texts = st.text(alphabet='ab"\\[]{}\n', max_size=6)
_docs = st.recursive(st.none() | st.integers() | _texts,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
                     max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(doc=_docs, block=st.integers(1, 9), indent=st.sampled_from([None, 1]))
def test_streamed_depth_equals_the_parsed_depth_for_any_block(doc: Any, block: int, indent: int | None) -> None:
    import json

    from analysis.safeio import depth

    text = json.dumps(doc, indent=indent).encode()
    old = depth.BLOCK
    depth.BLOCK = block  # blocks of a few bytes: every escape and quote falls on a boundary somewhere
    try:
        assert json_depth(text) == _parsed_depth(json.loads(text))
    finally:
        depth.BLOCK = old


@pytest.mark.slow
def test_the_rows_csv_scan_needs_a_fixed_amount_whatever_the_size() -> None:
    # the structure scan of rows.csv (analysis.evidence.csvscan) works in blocks: its peak is a multiple of the
    # block (about 11 bytes per block byte), the same for 25 MB and 100 MB, far below 3x the input
    from analysis.evidence import csvscan
    from analysis.evidence.schema import ROWS_COLUMNS

    header = ",".join(c.name for c in ROWS_COLUMNS).encode() + b"\n"
    line = b'r1,S5,fam1/model-1,group-0,1,j,1,true,,14,7,0,3,4000,9600,5,0,5,0,20000,"the port, ""q""\nsecond"\n'
    peaks = []
    found: list[Any] = []
    for size in (SIZE // 4, SIZE):
        data = header + line * (size // len(line))
        peaks.append(_peak_above(lambda d=data: found.append(csvscan.scan(memoryview(d), "rows.csv"))))
        structure, problems = found.pop()
        assert structure is not None and problems == []
        del data, structure
    assert peaks[1] <= 12 * csvscan.BLOCK + FIXED
    assert peaks[1] - peaks[0] <= FIXED  # the per-record line numbers only: 8 bytes a record


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_a_toml_multiline_string_is_blanked_without_backtracking_state() -> None:
    # study.toml's largest (4 MiB) multi-line string: the depth scan needed about 144 bytes per byte
    from analysis.safeio import loads_toml

    data = b'a = """' + b"xy\n" * (MB + MB // 3) + b'"""\n[t]\nb = [[1]]\n'
    assert loads_toml(data, "study.toml")["t"] == {"b": [[1]]}
    assert _peak_above(lambda: loads_toml(data, "study.toml")) <= 3 * len(data) + FIXED
