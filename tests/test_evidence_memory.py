"""Memory that scales with the data: block-wise scan, batched parse, one verified buffer.

The scan and the parser must give the same structure, frames and problems whatever the
block and batch sizes (the real sizes are 16 MiB; here they are a few bytes, so every record,
quote and multibyte character falls across a boundary somewhere). The bounds tests catch a
return to whole-file temporaries cheaply.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.evidence import csvscan, load_package, verify_files
from analysis.evidence.errors import Problem
from analysis.evidence.files import read_evidence_buffer, release_prefix
from analysis.evidence.loader import parse_csv
from evidence_support import HANDMADE, REPO, copy_handmade

FUZZ = settings(max_examples=80, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_PIECE = st.sampled_from([b"a", b"b", b",", b'"', b'""', b"\n", b"\r\n", b" ", "é".encode(), b"\xff",
                          b"\xe2\x82", "\u20ac".encode(), b"", b'"x"', b"\r"])


def _scan_with(monkeypatch, data: bytes, block: int, batch: int):
    monkeypatch.setattr(csvscan, "BLOCK", block)
    monkeypatch.setattr(csvscan, "BATCH", batch)
    return csvscan.scan(data, "t.csv")


@FUZZ
@given(pieces=st.lists(_PIECE, max_size=40), bom=st.booleans(), block=st.integers(1, 24),
       batch=st.integers(1, 60))
def test_scan_is_the_same_for_any_block_size(monkeypatch, pieces, bom, block, batch) -> None:
    """Property: structure and problems (valid or not) do not depend on BLOCK or BATCH."""
    data = (csvscan.BOM if bom else b"") + b"h1,h2\n" + b"".join(pieces)
    big, big_problems = _scan_with(monkeypatch, data, 1 << 24, 1 << 26)
    small, small_problems = _scan_with(monkeypatch, data, block, batch)
    assert small_problems == big_problems
    assert (small is None) == (big is None)
    if big is not None and small is not None:
        assert small.header == big.header and small.quoted == big.quoted
        assert small.lines.tolist() == big.lines.tolist()
        assert small.offset == big.offset and small.header_end == big.header_end
        spans = [(s, e) for s, e, _ in small.batches]  # consecutive, covering every record
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert sum(n for _, _, n in small.batches) == len(small.lines)
        if small.batches:
            assert spans[0][0] == small.header_end and spans[-1][1] == len(small.data)


def test_parse_in_small_batches_gives_the_same_frame_and_problems(monkeypatch) -> None:
    """The hand-made package, with bad cells added, parsed in batches of a few records."""
    rows = (HANDMADE / "rows.csv").read_bytes()
    checks = (HANDMADE / "checks.csv").read_bytes()
    bad_rows = rows.replace(b",S5,", b",S 5,", 2).replace(b",true,", b",TRUE,", 1)
    head, body = checks.split(b"\n", 1)
    bad_checks = (head + b"\n" + body * 10).replace(b",true", b",yes")  # > MAX_PER_RULE problems
    for name, data in (("rows.csv", rows), ("checks.csv", checks), ("rows.csv", bad_rows),
                       ("checks.csv", bad_checks)):
        results = []
        for batch in (1 << 26, 200, 1):
            monkeypatch.setattr(csvscan, "BATCH", batch)
            problems: list[Problem] = []
            released: list[int] = []
            parsed = parse_csv(name, data, problems, release=released.append)
            assert parsed is not None
            assert released == sorted(released) and released[-1] == len(data)
            results.append((parsed, problems))
        (one, p_one), *rest = results
        for parsed, problems in rest:
            assert parsed.frame.equals(one.frame) and parsed.frame.schema == one.frame.schema
            assert parsed.lines.tolist() == one.lines.tolist()
            assert parsed.bad_cells == one.bad_cells and problems == p_one
        if data is bad_checks:
            capped = [p for p in p_one if p.message.startswith("... and ")]
            assert capped and len(p_one) == len(capped) * (csvscan.MAX_PER_RULE + 1)


def test_utf8_error_across_a_block_boundary(monkeypatch) -> None:
    data = "h1,h2\né,x\nab,\u20ac".encode() + b"\xe2\x82" + b",z\n"
    expected = _scan_with(monkeypatch, data, 1 << 24, 1 << 26)[1]
    assert expected[0].line == 3 and expected[0].column == "byte 7"
    for block in range(1, 12):
        assert _scan_with(monkeypatch, data, block, 5)[1] == expected


def test_verified_buffer_is_the_hashed_file_and_pages_can_be_given_back(tmp_path) -> None:
    root = copy_handmade(tmp_path / "p")
    verified = verify_files(root)
    view = verified.contents["checks.csv"]
    assert isinstance(view, memoryview) and view.readonly
    assert view == (root / "checks.csv").read_bytes()
    buf, digest = read_evidence_buffer(root, "checks.csv")
    assert digest == verified.digests["checks.csv"] and buf == view
    page = os.sysconf("SC_PAGE_SIZE")
    big = tmp_path / "p" / "big.bin"
    big.write_bytes(b"\x01" * (3 * page + 5))
    buf, _ = read_evidence_buffer(root, "big.bin")
    release_prefix(buf, 2 * page + 7)  # whole pages below the offset only
    arr = np.frombuffer(buf, dtype=np.uint8)
    assert not arr[:2 * page].any() and arr[2 * page:].all()
    release_prefix(memoryview(b"abc"), 3)  # not a memory map: nothing happens


def test_scan_temporaries_are_bounded_by_the_block(monkeypatch) -> None:
    """tracemalloc sees numpy's buffers: the scan of a 24 MiB file stays far below its size."""
    record = b'r12345,ledger service port,value-1,true,""\n'
    data = b"row_id,check,expected,passed,in_carrier\n" + record * ((24 << 20) // len(record))
    monkeypatch.setattr(csvscan, "BLOCK", 1 << 20)
    tracemalloc.start()
    try:
        structure, problems = csvscan.scan(data, "checks.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == [] and structure is not None
    lines = structure.lines.nbytes  # the one output that grows with the file: 4 bytes a record
    # about 9 MiB now; the whole-file scan held several 24 MiB masks and a 27 MiB index array
    assert peak < 2 * lines + 12 * csvscan.BLOCK, (peak, lines)


CHILD = """
import json, sys
def peak_mib():  # VmHWM restarts at exec; ru_maxrss would keep the pytest process's peak
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
from analysis.evidence import verify_package
before = peak_mib()
s = verify_package(sys.argv[1])
print(json.dumps({"checks": s.checks, "import_mib": before, "maxrss_mib": peak_mib()}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM of /proc (Linux)")
def test_peak_memory_of_a_100k_row_load(tmp_path) -> None:
    """bench_load's package at 100k rows (61 MB, 1.4 M checks) loads within 400 MiB of peak RSS
    above the interpreter with polars imported.

    Before the block-wise scan and batched parse the load added about 500 MiB (604 MiB peak);
    now about 240 MiB (about 340 MiB peak).
    """
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from bench_load import build_package
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    build_package(tmp_path, 100_000)
    env = dict(os.environ, POLARS_MAX_THREADS="2", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], env=env, check=True,
                         capture_output=True, text=True, timeout=120)
    found = json.loads(out.stdout)
    assert found["checks"] == 1_400_000
    assert found["maxrss_mib"] - found["import_mib"] < 400, found


def test_load_package_consumes_the_buffers_but_not_the_files(tmp_path) -> None:
    root = copy_handmade(tmp_path / "p")
    first = load_package(root)
    again = load_package(root)
    assert first.checks.equals(again.checks) and first.rows.equals(again.rows)
    assert isinstance(first.checks, pl.DataFrame)
    assert Path(root / "checks.csv").read_bytes() == (HANDMADE / "checks.csv").read_bytes()


def test_hash_prefilters_are_exact_even_when_every_hash_collides(tmp_path, monkeypatch) -> None:
    """The cross-file rules find duplicates and matches by 64-bit hashes, then confirm them exactly:
    with every hash equal (all collide) the problems are the same as with real hashes."""
    from analysis.evidence import EvidenceError, write_lock

    root = copy_handmade(tmp_path / "p")
    rows = (root / "rows.csv").read_bytes().splitlines(keepends=True)
    checks = (root / "checks.csv").read_bytes().splitlines(keepends=True)
    (root / "rows.csv").write_bytes(b"".join(rows + rows[3:5]))  # duplicate ids and slots
    (root / "checks.csv").write_bytes(b"".join([*checks, checks[1].replace(b"a1", b"zz", 1)]))
    write_lock(root)

    def problems() -> list:
        with pytest.raises(EvidenceError) as info:
            load_package(root)
        return sorted(map(str, info.value.problems))

    real = problems()
    assert any("duplicate row_id" in p for p in real) and any("second valid row" in p for p in real)
    assert any("is not a row of rows.csv" in p for p in real)
    monkeypatch.setattr(pl.Series, "hash", lambda self, *a, **k: pl.Series(self.name, [7] * self.len(),
                                                                           dtype=pl.UInt64))
    monkeypatch.setattr(pl.DataFrame, "hash_rows", lambda self, *a, **k: pl.Series("", [7] * self.height,
                                                                                   dtype=pl.UInt64))
    assert problems() == real


def test_a_file_that_grows_while_read_is_read_whole_or_refused(tmp_path, monkeypatch) -> None:
    """The buffer is sized from fstat; a file longer than that (it grew) is still read and hashed
    whole, and refused once it passes the limit. Simulated by under-reporting the size."""
    import hashlib

    from analysis.evidence import files

    root = copy_handmade(tmp_path / "p")
    whole = (root / "checks.csv").read_bytes()
    real_open = files._open
    monkeypatch.setattr(files, "_open", lambda d, n, limit: (real_open(d, n, 1 << 30)[0], 10))
    buf, digest = read_evidence_buffer(root, "checks.csv")
    assert buf == whole and digest == hashlib.sha256(whole).hexdigest()
    with pytest.raises(files.UnsafeFileError, match="grew above the limit"):
        read_evidence_buffer(root, "checks.csv", limit_bytes=len(whole) - 1)


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


# ------------------------------------------------------------------ folds.jsonl in bounded memory

FOLDS_MEMORY = """
import resource, sys
import polars as pl
from analysis.evidence.folds import parse_folds
pl.DataFrame({"a": [1]})  # polars' own start-up memory is not the parser's
n = int(sys.argv[1])
buf = bytearray()
for i in range(n):  # 1,000 rows with n / 1,000 folds each
    buf += b'{"row_id":"r%d","fold":%d,"chunks":[0],"carrier":"","parse_ok":null,"clipped":false}\\n' % (
        i % 1000, i // 1000)
data = bytes(buf)
del buf
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
frame = parse_folds(data, None, [])
print(len(data), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024, frame.height)
"""


@pytest.mark.slow
def test_folds_jsonl_is_parsed_in_bounded_memory() -> None:
    """Peak memory growth at most 2x the file plus a constant (before: about 9x, one object per line)."""
    done = subprocess.run([sys.executable, "-c", FOLDS_MEMORY, "300000"], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=600)
    size, grew, height = (int(x) for x in done.stdout.split())
    assert height == 300_000
    assert grew <= 2 * size + (16 << 20), f"{grew >> 20} MiB for a {size >> 20} MiB file"

