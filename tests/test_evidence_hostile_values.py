"""Issue 31, findings 13 and 14: values the door refuses are refused by its allowed bypasses too.

13: integers in study.toml stay within 64 bits and the documented ranges of the runner's token counts
(schema.RUNNER_INT_RANGES); the runner never writes a larger one (/models, --fold-max-tokens).
14: a lone surrogate escape, NaN or an overflowing number in folds.jsonl is a located FoldsFormatError,
never a UnicodeEncodeError from polars.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.evidence import StudyError, load_package, write_lock
from analysis.evidence.folds import FoldsFormatError
from analysis.evidence.schema import MAX_TOKENS
from analysis.runner.cli import main as runner_main
from analysis.runner.pinning import _toml_value
from analysis.runner.probe import _context_from
from analysis.safeio import SafeIOError
from evidence_support import REPO, copy_handmade, run_cli

PILOT = REPO / "data" / "v2" / "pilot"


@pytest.mark.parametrize("value, where", [
    ("1000000000000000000000000000000", "context_length"),  # /models context_length 10**30
    ("9223372036854775808", "context_length"),  # 2**63: beyond TOML's 64 bits
    (str(MAX_TOKENS + 1), "fold_max_tokens"),
    ("0", "recall_max_tokens"),
    ('"4096"', "context_length"),
    ("1" * 5000, None),  # beyond Python's int-string limit: a StudyError, no traceback
])
def test_verify_refuses_runner_integers_out_of_range(tmp_path: Path, value: str, where: str | None) -> None:
    root = copy_handmade(tmp_path / "p")
    with (root / "study.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[runner."c"]\nbase_url = "http://x"\n{where or "seed"} = {value}\n')
    write_lock(root)
    with pytest.raises(StudyError) as info:
        load_package(root)
    if where is not None:
        assert any(p.column == f"runner.c.{where}" for p in info.value.problems), info.value.problems
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and len(proc.stderr) < 2000


def test_an_integer_beyond_64_bits_anywhere_in_study_toml_is_refused(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    with (root / "study.toml").open("a", encoding="utf-8") as f:
        f.write("\n[runner]\nanything = 18446744073709551616\n")
    write_lock(root)
    with pytest.raises(StudyError, match="64-bit"):
        load_package(root)


def test_the_runner_never_writes_an_integer_toml_cannot_hold() -> None:
    assert _context_from({"context_length": 10**30}) is None  # not a context: unknown, never recorded
    assert _context_from({"context_length": 10**30, "max_model_len": 8192}) == 8192
    with pytest.raises(SafeIOError, match="64-bit"):
        _toml_value(10**30)
    assert _toml_value(4096) == "4096"


@pytest.mark.parametrize("flag", ["--fold-max-tokens", "--recall-max-tokens", "--context-length"])
def test_token_counts_beyond_their_range_are_refused_before_a_sweep(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str) -> None:
    rc = runner_main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published",
                      "2026-03-01", "--ladder", "g1-d0-c100-f1", "--out", str(tmp_path / "x"), "--quiet",
                      "--api-key-env", "", "--no-probe", "--structured-mode", "json_schema",
                      flag, str(10**24)])
    err = capsys.readouterr().err
    assert rc == 2 and "out of range" in err and str(MAX_TOKENS) in err, err
    assert not (tmp_path / "x").exists()


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


def test_a_lone_surrogate_in_the_lock_is_a_lock_format_error(tmp_path: Path) -> None:
    from analysis.evidence import LockFormatError

    root = copy_handmade(tmp_path / "p")
    text = (root / "provenance.lock").read_text(encoding="utf-8")
    (root / "provenance.lock").write_text(text.replace('"rows.csv"', '"rows\\ud800.csv"'), encoding="utf-8")
    with pytest.raises(LockFormatError, match="lone surrogate"):
        load_package(root)
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr


def test_messages_stay_short_whatever_the_file_holds(tmp_path: Path) -> None:
    # a megabyte-long value quoted in a problem (the lock's "algorithm") printed a megabyte of stderr
    root = copy_handmade(tmp_path / "p")
    doc = json.loads((root / "provenance.lock").read_text(encoding="utf-8"))
    doc["algorithm"] = "x" * 1_000_000
    (root / "provenance.lock").write_text(json.dumps(doc), encoding="utf-8")
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 5000 and "more characters" in proc.stderr
    assert len(str(SafeIOError("f" * 10_000, "y" * 10_000))) < 3100  # 1,000 of the path, 2,000 of the message
