"""The I/O door (analysis.safeio) against bad input: every refusal is one SafeIOError naming the file.

Oracles: the expected values are the plain parsers' (json, tomllib, csv) on the same good input;
the refusals follow the door's rules written in analysis/safeio/read.py and write.py.
"""
from __future__ import annotations

import errno
import json
import math
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis import safeio
from analysis.safeio import SafeIOError


def test_a_fifo_is_refused_at_once_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.toml"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            safeio.read_toml(fifo)
        except BaseException as exc:  # collected for the assertion
            done.append(exc)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "a FIFO made the reader hang"
    assert isinstance(done[0], SafeIOError) and "FIFO" in str(done[0]) and str(fifo) in str(done[0])


def test_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "design.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(SafeIOError, match="device"):
        safeio.read_json(link)


def test_a_link_leaving_its_root_is_refused_and_one_inside_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    (root / "out").symlink_to(tmp_path / "outside.txt")
    (root / "real.txt").write_text("inside")
    (root / "in").symlink_to("real.txt")
    with pytest.raises(SafeIOError, match="leads outside"):
        safeio.read_text(root / "out", root=root)
    assert safeio.read_text(root / "in", root=root) == "inside"


def test_reads_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "prices.toml"
    big.write_bytes(b"# " + b"x" * 5000 + b"\n")
    with pytest.raises(SafeIOError, match="above the limit"):
        safeio.read_toml(big, limit=4096)


def test_text_is_strict_utf8_with_the_line(tmp_path: Path) -> None:
    p = tmp_path / "prices.csv"
    p.write_bytes(b"endpoint,input\nok,1\n\xff\xfe,2\n")
    with pytest.raises(SafeIOError) as info:
        safeio.read_csv(p)
    assert info.value.line == 3 and "not UTF-8" in str(info.value)
    p.write_bytes(b"a\xed\xa0\x80b")  # an encoded lone surrogate: refused by the strict codec
    with pytest.raises(SafeIOError, match="not UTF-8"):
        safeio.read_text(p)


def test_lone_surrogate_escapes_are_refused_and_pairs_kept() -> None:
    with pytest.raises(SafeIOError, match="lone surrogate"):
        safeio.loads_json(b'{"content": "\\ud800"}', "reply")
    assert safeio.loads_json(b'"\\ud83d\\ude00"', "reply") == "\U0001f600"


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_json_depth_bombs_are_refused_before_parsing(text: str) -> None:
    with pytest.raises(SafeIOError, match="nested deeper"):
        safeio.loads_json(text.encode(), ".build-stamp.json")


def test_toml_depth_and_dotted_key_bombs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SafeIOError, match="nested deeper"):
        safeio.loads_toml(b"a = " + b"[" * 100_000 + b"]" * 100_000, "plan.toml")
    with pytest.raises(SafeIOError, match="dotted key"):
        safeio.loads_toml(b"[" + b".".join([b"a"] * 100_000) + b"]\n", "plan.toml")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"x": -Infinity}', "1e400"])
def test_nan_and_infinity_are_refused_unless_allowed(text: str) -> None:
    with pytest.raises(SafeIOError):
        safeio.loads_json(text, "usage")
    value = safeio.loads_json(text, "usage", allow_nan=True)
    assert value is not None


def test_toml_nan_and_64_bit_range() -> None:
    with pytest.raises(SafeIOError, match="nan/inf"):
        safeio.loads_toml("x = nan", "prices.toml")
    with pytest.raises(SafeIOError, match="64-bit"):
        safeio.loads_toml(f"x = {2**63}", "plan.toml")
    assert safeio.loads_toml(f"x = {2**63 - 1}", "plan.toml") == {"x": 2**63 - 1}


def test_jsonl_names_the_line_and_reads_in_bounded_pieces(tmp_path: Path) -> None:
    p = tmp_path / "folds.jsonl"
    p.write_bytes(b'{"a": 1}\n\n{"a": NaN}\n')
    with pytest.raises(SafeIOError) as info:
        safeio.read_jsonl(p)
    assert info.value.line == 3
    p.write_bytes(b'{"a": 1}\n{"a": 2')
    assert list(safeio.iter_lines(p)) == [(1, b'{"a": 1}', True), (2, b'{"a": 2', False)]


def test_write_json_is_strict_and_leaves_nothing_on_refusal(tmp_path: Path) -> None:
    p = tmp_path / "design.json"
    with pytest.raises(SafeIOError, match="strict JSON"):
        safeio.write_json(p, {"x": math.nan})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SafeIOError, match="lone surrogate"):
        safeio.write_text(p, "a\ud800b")
    assert list(tmp_path.iterdir()) == []


def test_writes_never_follow_a_link_even_a_dangling_one(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "plan.lock"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "plan.lock"
    link.symlink_to(target)
    with pytest.raises(SafeIOError, match="symbolic link"):
        safeio.write_json(link, {"a": 1})
    assert not target.exists() and link.is_symlink()


def test_a_full_disk_is_one_line_saying_what_was_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "results.json"
    p.write_text("old\n")

    def full(_fd: int, _data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(SafeIOError) as info:
        safeio.write_text(p, "new\n")
    monkeypatch.undo()
    assert "\n" not in str(info.value) and "disk is full" in str(info.value)
    assert "previous results.json is kept" in str(info.value)
    assert p.read_text() == "old\n" and sorted(x.name for x in tmp_path.iterdir()) == ["results.json"]


def test_append_file_reports_a_full_disk_and_refuses_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ledger.jsonl").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SafeIOError, match="symbolic link"):
        safeio.AppendFile(tmp_path / "ledger.jsonl")
    with safeio.AppendFile(tmp_path / "l2.jsonl") as fh:
        fh.write(b"one\n")
        monkeypatch.setattr(os, "write", lambda *_a: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
        with pytest.raises(SafeIOError, match="every record written before"):
            fh.write(b"two\n")
        monkeypatch.undo()
    assert (tmp_path / "l2.jsonl").read_bytes() == b"one\n"


# ------------------------------------------------------------------ property: any input, a value or SafeIOError

READERS = {
    "bytes": lambda p: safeio.read_bytes(p, limit=1 << 16),
    "text": lambda p: safeio.read_text(p, limit=1 << 16),
    "json": lambda p: safeio.read_json(p, limit=1 << 16),
    "jsonl": lambda p: safeio.read_jsonl(p, limit=1 << 16),
    "toml": lambda p: safeio.read_toml(p, limit=1 << 16),
    "csv": lambda p: safeio.read_csv(p, limit=1 << 16),
}


def _nested(depth: int, leaf: str, kind: str) -> str:
    if kind == "json":
        return "[" * depth + leaf + "]" * depth
    return "x = " + "[" * depth + leaf + "]" * depth


payloads = st.one_of(
    st.binary(max_size=2048),
    st.text(max_size=512).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.builds(lambda d, leaf, kind: _nested(d, leaf, kind).encode(), st.integers(0, 300),
              st.sampled_from(["1", '"\\ud800"', "NaN", "1e999", '"ok"', "", "nan"]),
              st.sampled_from(["json", "toml"])),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                 max_leaves=20).map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=payloads, kind=st.sampled_from(sorted(READERS)))
def test_every_door_gives_a_value_or_a_named_error(tmp_path: Path, data: bytes, kind: str) -> None:
    p = tmp_path / f"input.{kind}"
    p.write_bytes(data)
    try:
        value = READERS[kind](p)
    except SafeIOError as exc:
        assert str(p) in str(exc) and "\n" not in exc.message
        return
    if kind == "bytes":
        assert value == data
    elif kind == "text":
        assert value == data.decode("utf-8")
    elif kind == "json":  # the value is what json gives, and strict: no NaN, no lone surrogate
        assert value == json.loads(data)
        json.dumps(value, allow_nan=False).encode("utf-8")
    elif kind == "toml":
        import tomllib
        assert value == tomllib.loads(data.decode("utf-8"))
