"""Issue 11, classes 2, 4, 5 and 6: hostile evidence packages give a named error, never a traceback or a hang.

Class 2, unsafe files: links out of the package, link loops, FIFOs, devices, huge or sparse files,
lock names like /dev/zero (analysis/evidence/files.py opens every file). Class 4, silent wrong
numbers: counts past their range, Int64 overflow, homoglyph arms, undeclared arms, control ==
treatment (analysis/evidence/schema.py). Class 5, extra CSV columns named like internal ones
(loaded as ``extra:<name>``). Class 6, parser depth (analysis/evidence/depth.py). Everything that
could hang runs the CLI in a subprocess with a timeout, so a regression fails instead of hanging.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.evidence import (
    ConsistencyError,
    EvidenceError,
    LockFormatError,
    SchemaError,
    StudyError,
    UnsafeFileError,
    load_package,
    package_key,
    verify_package,
    write_lock,
)
from analysis.evidence.folds import FOLDS_FILE
from analysis.evidence.provenance import canonical_lock_bytes, sha256_bytes
from analysis.evidence.schema import ARM_PATTERN, IDENTIFIER_PATTERN, MAX_COUNT, charset_problem, extra_column
from evidence_support import HANDMADE, REPO, copy_handmade, edit, run_cli, where

CLI_TIMEOUT_S = 120


def _lock_with(root: Path, extra: dict[str, str]) -> None:
    """Rewrite the (canonical) lock of ``root`` with ``extra`` names added, as a stranger could."""
    files = json.loads((root / "provenance.lock").read_text())["files"]
    files.update(extra)
    (root / "provenance.lock").write_bytes(canonical_lock_bytes(files))


def _cli_fails_cleanly(*args: str, expect: str) -> str:
    """Run generate.py (bounded); it must exit 1 with an ``error:`` first line, no traceback."""
    try:
        r = run_cli(*args)
    except subprocess.TimeoutExpired:  # pragma: no cover - the regression this test exists for
        pytest.fail(f"generate.py {' '.join(args)} hung (> {CLI_TIMEOUT_S}s)")
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.stderr.startswith("error: "), r.stderr[:500]
    assert expect in r.stderr, r.stderr[:2000]
    return r.stderr


# ------------------------------------------------------------------ class 2: unsafe file access
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


def test_a_locked_fifo_is_refused_by_verify_and_the_build_without_hanging(pkg: Path, tmp_path: Path) -> None:
    os.mkfifo(pkg / "pipe")
    _lock_with(pkg, {"pipe": "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="FIFO")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="FIFO")
    assert not (tmp_path / "out").exists()
    with pytest.raises(UnsafeFileError) as info:
        package_key(pkg)
    assert info.value.file == "pipe"


@pytest.mark.parametrize("name", ["/dev/zero", "../../../dev/stdin", "a/../../x"])
def test_lock_names_outside_the_package_are_refused_before_anything_is_read(pkg: Path, tmp_path: Path,
                                                                              name: str) -> None:
    _lock_with(pkg, {name: "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="plain relative path inside the package")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"),
                       expect="plain relative path inside the package")
    with pytest.raises(LockFormatError):
        package_key(pkg)


def test_a_symlink_loop_is_a_named_error(pkg: Path) -> None:
    (pkg / "loop1").symlink_to("loop2")
    (pkg / "loop2").symlink_to("loop1")
    _lock_with(pkg, {"loop1": "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="symbolic link loop")
    _cli_fails_cleanly("lock", str(pkg), "--files", "loop2", expect="symbolic link loop")


def test_the_lock_as_a_link_to_dev_zero_is_refused(pkg: Path, tmp_path: Path) -> None:
    (pkg / "provenance.lock").unlink()
    (pkg / "provenance.lock").symlink_to("/dev/zero")
    _cli_fails_cleanly("verify", str(pkg), expect="leads outside the package")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="leads outside the package")


def test_the_lock_as_a_fifo_inside_the_package_is_refused(pkg: Path) -> None:
    (pkg / "provenance.lock").unlink()
    os.mkfifo(pkg / "provenance.lock")
    _cli_fails_cleanly("verify", str(pkg), expect="FIFO")


@pytest.mark.parametrize("name, size", [("provenance.lock", 8 << 30), ("study.toml", 3 << 20),
                                        ("rows.csv", (1 << 30) + 1)])
def test_sparse_or_huge_files_are_refused_by_size_before_reading(pkg: Path, name: str, size: int) -> None:
    with open(pkg / name, "r+b") as fh:  # sparse: no disk used, nothing to read but zeros
        fh.truncate(size)
    with pytest.raises(UnsafeFileError) as info:
        load_package(pkg)
    assert info.value.problems[0].file == name and "above the limit" in str(info.value)


def test_a_device_inside_the_package_is_refused(pkg: Path) -> None:
    try:
        os.mknod(pkg / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    _lock_with(pkg, {"null": "0" * 64})
    with pytest.raises(UnsafeFileError, match="a device"):
        verify_package(pkg)
    with pytest.raises(UnsafeFileError, match="a device"):
        write_lock(pkg, ["null"])


def test_lock_files_refuses_links_out_fifos_and_links_to_devices(pkg: Path) -> None:
    (pkg / "passwd").symlink_to("/etc/passwd")
    (pkg / "zero").symlink_to("/dev/zero")
    os.mkfifo(pkg / "pipe")
    before = (pkg / "provenance.lock").read_bytes()
    for name, expect in (("passwd", "leads outside"), ("zero", "leads outside"), ("pipe", "FIFO")):
        _cli_fails_cleanly("lock", str(pkg), "--files", name, expect=expect)
    assert (pkg / "provenance.lock").read_bytes() == before  # a refused lock leaves the old one
    (pkg / "inside.txt").write_text("pinned\n")
    (pkg / "link-inside").symlink_to("inside.txt")  # a link that stays inside is fine
    doc = write_lock(pkg, ["link-inside"])
    assert doc["files"]["link-inside"] == sha256_bytes(b"pinned\n")


def test_the_lock_is_written_atomically_and_never_through_a_link(pkg: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("do not overwrite\n")
    (pkg / "provenance.lock").unlink()
    (pkg / "provenance.lock").symlink_to(outside)
    write_lock(pkg)
    assert outside.read_text() == "do not overwrite\n"
    assert not (pkg / "provenance.lock").is_symlink()
    assert sorted(p.name for p in pkg.iterdir()) == sorted(["checks.csv", "datapackage.json", "provenance.lock",
                                                            "rows.csv", "study.toml"])
    verify_package(pkg)


def test_package_key_changes_with_any_locked_byte_and_needs_a_valid_lock(pkg: Path) -> None:
    first = package_key(pkg)
    edit(pkg, "rows.csv", "a1-j,", "a1-J,", relock=False)
    assert package_key(pkg) != first
    (pkg / "provenance.lock").write_text('{"files": 1}')
    with pytest.raises(LockFormatError):
        package_key(pkg)


# ------------------------------------------------------------------ class 4: silent wrong numbers
def _row_line(root: Path, row_id: str) -> int:
    lines = (root / "rows.csv").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(row_id + ","))


def _set_cell(root: Path, row_id: str, column: str, value: str) -> None:
    rows = pl.read_csv(root / "rows.csv", infer_schema=False)
    rows = rows.with_columns(pl.when(pl.col("row_id") == row_id).then(pl.lit(value))
                             .otherwise(pl.col(column)).alias(column))
    rows.write_csv(root / "rows.csv")
    write_lock(root)


@pytest.mark.parametrize("value", ["999999999999999999", str(2**63 - 1), str(2**64), str(MAX_COUNT + 1)])
def test_counts_past_their_range_are_errors_with_line_and_column(pkg: Path, value: str) -> None:
    _set_cell(pkg, "a1-j", "folds", value)
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-j"), "folds") in where(info.value)
    _cli_fails_cleanly("verify", str(pkg), expect="folds")


@pytest.mark.parametrize("value", [str(2**63 - 1), str(2**64), "100000000", "1e8", "1000001"])
def test_planned_repeats_past_their_range_are_errors(pkg: Path, value: str) -> None:
    edit(pkg, "study.toml", "planned_repeats = 3", f"planned_repeats = {value}", count=3)
    with pytest.raises(StudyError) as info:
        load_package(pkg)
    assert ("study.toml", 27, "partition_runs[0].planned_repeats") in where(info.value)
    _cli_fails_cleanly("verify", str(pkg), expect="planned_repeats")


def test_all_runs_together_plan_a_bounded_number_of_slots(pkg: Path) -> None:
    edit(pkg, "study.toml", "planned_repeats = 3", "planned_repeats = 400000", count=3)
    with pytest.raises(StudyError, match="1200000 repeats in all"):
        load_package(pkg)


def test_a_homoglyph_arm_is_refused_not_counted(pkg: Path) -> None:
    _set_cell(pkg, "a1-q", "arm", "\u051b")  # CYRILLIC SMALL LETTER QA, looks like q
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-q"), "arm") in where(info.value)
    assert "not an arm code" in str(info.value)


@pytest.mark.parametrize("column, value", [("scenario", "S5 "), ("configuration", "acme/<b>"),
                                           ("execution_group", "g\u200b1"), ("arm", "Q"), ("arm", "q" * 17)])
def test_identifiers_outside_their_character_set_are_refused(pkg: Path, column: str, value: str) -> None:
    _set_cell(pkg, "a1-q", column, value)
    with pytest.raises(EvidenceError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-q"), column) in where(info.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arm=st.text(min_size=1, max_size=20), scenario=st.text(min_size=1, max_size=20))
def test_any_arm_or_scenario_is_loaded_only_if_it_is_in_its_character_set(tmp_path_factory, arm: str,
                                                                           scenario: str) -> None:
    """Property: a row's arm and scenario either load unchanged and in their set, or fail verify."""
    import re

    root = copy_handmade(tmp_path_factory.mktemp("cs"))
    rows = pl.read_csv(root / "rows.csv", infer_schema=False)
    rows.with_columns(pl.when(pl.col("row_id") == "a1-q").then(pl.lit(arm)).otherwise(pl.col("arm")).alias("arm"),
                      pl.when(pl.col("row_id") == "b1-j").then(pl.lit(scenario)).otherwise(pl.col("scenario"))
                      .alias("scenario")).write_csv(root / "rows.csv")
    write_lock(root)
    try:
        package = load_package(root)
    except EvidenceError:
        return
    assert package.rows.filter(pl.col("row_id") == "a1-q").item(0, "arm") == arm
    assert re.fullmatch(ARM_PATTERN, arm) and re.fullmatch(IDENTIFIER_PATTERN, scenario)


def test_configuration_keys_and_contrast_arms_follow_the_character_sets(pkg: Path) -> None:
    edit(pkg, "study.toml", '[configurations."beta/beta-1"]', '[configurations."beta <script>"]')
    edit(pkg, "study.toml", 'control = "j"', 'control = "J"')
    with pytest.raises(EvidenceError) as info:
        load_package(pkg)
    cols = {p.column for p in info.value.problems if p.file == "study.toml"}
    assert {'configurations."beta <script>"', "study.control"} <= cols


def test_control_equal_to_treatment_fails_verify_not_the_build(pkg: Path, tmp_path: Path) -> None:
    edit(pkg, "study.toml", 'treatment = "q"', 'treatment = "j"')
    with pytest.raises(StudyError) as info:
        verify_package(pkg)
    assert ("study.toml", 5, "study.treatment") in where(info.value)
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="two different arms")


def test_declared_arms_make_every_other_arm_an_error(pkg: Path) -> None:
    edit(pkg, "study.toml", 'scenario = "S5"\n', 'scenario = "S5"\narms = ["j", "q", "m"]\n')
    assert load_package(pkg).study.arms == ("j", "q", "m")  # the hand-made arms, all declared
    edit(pkg, "study.toml", 'arms = ["j", "q", "m"]', 'arms = ["j", "q"]')
    with pytest.raises(ConsistencyError) as info:
        load_package(pkg)
    m_lines = [i for i, line in enumerate((pkg / "rows.csv").read_text().splitlines(), 1) if ",m," in line]
    assert {(p.line, p.column) for p in info.value.problems} == {(n, "arm") for n in m_lines}
    edit(pkg, "study.toml", 'arms = ["j", "q"]', 'arms = ["j", "m"]')
    with pytest.raises(StudyError, match=r"treatment arm 'q' is not in study\.arms"):
        load_package(pkg)


def test_the_shipped_packages_still_verify() -> None:
    for root in (REPO / "data" / "v1", REPO / "data" / "v2" / "pilot", HANDMADE):
        if (root / "provenance.lock").is_file():
            verify_package(root)


def test_the_charset_rules_are_one_definition() -> None:
    from analysis.runner.preflight import identifier_problem

    assert charset_problem("identifier", "qwen/qwen3.5-9b:free@Alpha#2+x") is None
    assert identifier_problem("qwen/qwen3.5-9b", "--model") is None
    assert "not an identifier" in identifier_problem("q w", "--model")
    assert charset_problem("arm", "\u051b") and charset_problem("arm", "j") is None


def test_the_runner_refuses_a_bad_name_before_the_first_request(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for extra in (["--model", "<img src=x>"], ["--model", "m", "--configuration", "a b"],
                  ["--model", "m", "--control", "q"]):
        # port 9 (discard) on loopback: a request would fail loudly, a refusal comes first
        r = subprocess.run([sys.executable, "-m", "analysis.runner", "sweep", "--base-url",
                            "http://127.0.0.1:9/v1", "--published", "2026-03-01", "--api-key-env", "",
                            "--out", str(tmp_path / "o"), *extra], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=CLI_TIMEOUT_S)
        assert r.returncode != 0 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr
        assert "PreflightError" not in r.stderr  # the message, never the class name (issue 33)
        assert not (tmp_path / "o" / "ledger.jsonl").exists()


# ------------------------------------------------------------------ class 5: internal names
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


# ------------------------------------------------------------------ class 6: parser depth
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


@pytest.mark.parametrize("chunks", [str(2**64), str(2**63), str(MAX_COUNT + 1), "-1"])
def test_fold_indices_past_their_range_are_folds_errors(pkg: Path, chunks: str) -> None:
    line = {"row_id": "a1-j", "fold": 0, "carrier": "", "parse_ok": None, "clipped": False}
    (pkg / FOLDS_FILE).write_text(json.dumps(line)[:-1] + f', "chunks": [{chunks}]}}\n')
    write_lock(pkg, [FOLDS_FILE])
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert where(info.value) == {(FOLDS_FILE, 1, "chunks")}


def test_strings_with_brackets_do_not_count_as_nesting(pkg: Path) -> None:
    edit(pkg, "study.toml", 'name = "hand-made oracle package"',
         'name = "' + "[{" * 100 + '"  # ' + "[" * 100)
    assert load_package(pkg).study.name == "[{" * 100


def test_an_evidence_path_with_a_quote_verifies(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / 'evidence "quoted" {{< x >}}')
    r = run_cli("verify", str(pkg))
    assert r.returncode == 0 and r.stdout.startswith("OK "), r.stderr
