"""Issue 11, class 3 and two output boundaries: the build never destroys or mixes user files.

A careless user's corpus: user files inside OUT, empty or overlapping --out, Ctrl-C and SIGTERM
mid-build, two builds of one OUT at once, a hostile stamp; plus CSV formulas and terminal
control characters. Every subprocess is bounded by a timeout.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from prebuilt_support import Prebuilt

from analysis import outdir
from analysis import pipeline as build_mod
from analysis.digest import file_sha256
from analysis.outdir import BuildInterrupted, BuildLock, commit, deferred_signals
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import STAMP_NAME, BuildError, build, check, managed_files
from analysis.pipeline import pipeline as pipeline_mod
from analysis.tables.render import to_csv
from analysis.tables.spec import TableSpec
from evidence_support import HANDMADE, REPO, copy_handmade, edit, run_cli

TIMEOUT_S = 180


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too) with its bytes; directories as a marker."""
    snap: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        snap[rel] = p.read_bytes() if p.is_file() else b"<dir>"
    return snap


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    # build(HANDMADE, out, DEFAULT_PARAMS, progress=None), shared by the session (conftest)
    return prebuilt.copy(HANDMADE, tmp_path_factory.mktemp("safety") / "out")


def _copy_tree(src: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(src, dest)
    return dest


@pytest.fixture(scope="module")
def other_evidence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-made package under another study name: its build differs from HANDMADE's."""
    root = copy_handmade(tmp_path_factory.mktemp("other") / "pkg")
    edit(root, "study.toml", 'name = "hand-made oracle package"', 'name = "another package"')
    return root


# --------------------------------------------------------------------------- user files

USER_FILES = {
    "report/chapter1.md": b"# my chapter\n",
    "report/notes/draft.txt": b"draft\n",
    "tables/my_table.csv": b"a,b\n1,2\n",
    "figures/sketch.svg": b"<svg/>\n",
    "report/.quarto/cache.json": b"{}\n",
    "report/_quarto/index.html": b"<p>quarto render</p>\n",
    "mine.txt": b"not an output\n",
}


def _plant(out: Path) -> None:
    for rel, data in USER_FILES.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)


def _assert_planted(out: Path) -> None:
    for rel, data in USER_FILES.items():
        assert (out / rel).read_bytes() == data, rel


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_user_files_in_out_survive_a_forced_rebuild(tmp_path: Path, built: Path) -> None:
    out = _copy_tree(built, tmp_path / "o")
    _plant(out)
    summary = build(HANDMADE, out, DEFAULT_PARAMS, progress=None, force=True)
    assert summary.ran == build_mod.STAGES
    _assert_planted(out)
    assert not list(out.glob(".build-staging-*"))


def test_user_files_survive_a_first_build_without_stamp(tmp_path: Path) -> None:
    """A fresh clone: committed outputs and user files, no stamp; nothing unknown is removed."""
    out = tmp_path / "clone"
    _plant(out)
    build(HANDMADE, out, DEFAULT_PARAMS, progress=None)
    _assert_planted(out)
    assert (out / "report" / "index.html").is_file()


def test_quarto_files_are_never_compared(tmp_path: Path, built: Path) -> None:
    out = _copy_tree(built, tmp_path / "o")
    _plant(out)
    rels = managed_files(out)
    assert not any(r.startswith(("report/_quarto/", "report/.quarto/")) for r in rels)
    assert "report/.gitignore" in rels  # the build writes it: every entry Quarto 1.10 requires
    assert "report/chapter1.md" in rels  # a user file in a managed dir is still named by --check


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_stale_owned_output_is_removed_only_while_unchanged(tmp_path: Path, built: Path) -> None:
    out = _copy_tree(built, tmp_path / "o")
    stamp = json.loads((out / STAMP_NAME).read_text())
    files = {"tables/t_old.csv": b"old output\n", "report/sub/old.md": b"old page\n",
             "tables/t_edited.csv": b"written by a build\n"}
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
        stamp["stages"]["tables"]["outputs"][rel] = file_sha256(out / rel)
    # hostile manifest entries: outside OUT, Quarto's, OUT itself; never removed
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    for rel, path in (("../outside.txt", outside), ("report/.quarto/x.json", out / "report" / ".quarto" / "x.json")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("keep\n")
        stamp["stages"]["report"]["outputs"][rel] = file_sha256(path)
    (out / STAMP_NAME).write_text(json.dumps(stamp))
    (out / "tables" / "t_edited.csv").write_bytes(b"the user edited it\n")
    lines: list[str] = []
    build(HANDMADE, out, DEFAULT_PARAMS, progress=lines.append)
    assert not (out / "tables" / "t_old.csv").exists() and not (out / "report" / "sub").exists()
    assert (out / "tables" / "t_edited.csv").read_bytes() == b"the user edited it\n"
    assert any("kept tables/t_edited.csv" in line for line in lines)
    assert outside.read_text() == "keep\n" and (out / "report" / ".quarto" / "x.json").read_text() == "keep\n"
    assert check(HANDMADE, out, DEFAULT_PARAMS) == ["tables/t_edited.csv"]


# --------------------------------------------------------------------------- --out validation

@pytest.mark.parametrize("flag", ["--out", "--evidence"])
def test_empty_path_is_refused(tmp_path: Path, flag: str) -> None:
    proc = run_cli("--evidence", str(HANDMADE), flag, "", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "must not be empty" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_empty_out_is_refused_by_the_library(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="--out is empty"):
        build(HANDMADE, "", DEFAULT_PARAMS, progress=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["same", "inside"])
def test_out_equal_to_or_inside_the_evidence_is_refused(tmp_path: Path, where: str) -> None:
    pkg = copy_handmade(tmp_path / "pkg")
    before = _snapshot(pkg)
    out = pkg if where == "same" else pkg / "tables"
    proc = run_cli("--evidence", str(pkg), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is the evidence package" in proc.stderr and "Pass an OUT outside the package" in proc.stderr
    assert _snapshot(pkg) == before


def test_evidence_inside_a_managed_output_dir_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pkg = copy_handmade(out / "report" / "pkg")
    before = _snapshot(pkg)
    with pytest.raises(BuildError, match="lies inside"):
        build(pkg, out, DEFAULT_PARAMS, progress=None)
    assert _snapshot(pkg) == before
    # the package beside the managed dirs is fine (the repository root holds data/v1 that way)
    pkg2 = copy_handmade(tmp_path / "out2" / "data" / "pkg")
    build(pkg2, tmp_path / "out2", DEFAULT_PARAMS, progress=None)
    assert (tmp_path / "out2" / "results.json").is_file()


def test_symlinked_managed_dir_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "report").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BuildError, match="symbolic link"):
        build(HANDMADE, out, DEFAULT_PARAMS, progress=None)
    assert list(elsewhere.iterdir()) == []


def test_failing_package_creates_no_out(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / "pkg")
    edit(pkg, "study.toml", "recency_cutoff = 2026-01-28", "recency_cutoff = 2026-01-32")
    proc = run_cli("--evidence", str(pkg), "--out", str(tmp_path / "new" / "out"))
    assert proc.returncode == 1 and not (tmp_path / "new").exists()


# --------------------------------------------------------------------------- commit and signals

def test_commit_rolls_back_when_a_move_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, staging = tmp_path / "out", tmp_path / "out" / ".build-staging-x"
    for rel in ("results.json", "tables/a.csv", "tables/gone.csv"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(f"old {rel}\n")
    for rel in ("results.json", "tables/a.csv", "tables/b.csv"):
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(f"new {rel}\n")
    before = {r: b for r, b in _snapshot(out).items() if not r.startswith(".build-staging")}
    real, calls = os.replace, []

    def failing(src: object, dst: object) -> None:
        calls.append(dst)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(outdir.os, "replace", failing)
    with pytest.raises(OSError):
        commit(staging, out, ["results.json", "tables/a.csv", "tables/b.csv"], ["tables/gone.csv"])
    monkeypatch.setattr(outdir.os, "replace", real)
    after = {r: b for r, b in _snapshot(out).items() if not r.startswith(".build-staging")}
    assert after == before


def test_signals_inside_the_commit_are_deferred() -> None:
    with deferred_signals() as pending:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
    assert pending == [signal.SIGINT, signal.SIGTERM]


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_sigterm_during_the_commit_leaves_the_complete_new_build(
        tmp_path: Path, built: Path, other_evidence: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _copy_tree(built, tmp_path / "o")
    real = pipeline_mod.commit

    def commit_with_sigterm(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the files are being swapped
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline_mod, "commit", commit_with_sigterm)
    with pytest.raises(BuildInterrupted) as info:
        build(other_evidence, out, DEFAULT_PARAMS, progress=None)
    assert info.value.committed and info.value.exit_status == 143
    monkeypatch.setattr(pipeline_mod, "commit", real)
    assert check(other_evidence, out, DEFAULT_PARAMS) == []  # wholly the new package, nothing old
    assert not list(out.glob(".build-staging-*"))


def _popen(*args: str, cwd: Path = REPO) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, str(REPO / "generate.py"), *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_until(proc: subprocess.Popen[str], marker: str, lines: list[str]) -> None:
    """Collect stderr lines until one contains ``marker`` (bounded: the process is killed at TIMEOUT_S)."""
    watchdog = threading.Timer(TIMEOUT_S, proc.kill)
    watchdog.start()
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if marker in line:
                return
        raise AssertionError(f"no {marker!r} in stderr: {''.join(lines)}")
    finally:
        watchdog.cancel()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_build_exits_with_one_line_and_leaves_out_as_it_was(
        tmp_path: Path, built: Path, other_evidence: Path, signum: int) -> None:
    out = _copy_tree(built, tmp_path / "o")
    _plant(out)
    before = _snapshot(out)
    proc = _popen("--evidence", str(other_evidence), "--out", str(out))
    lines: list[str] = []
    try:
        _read_until(proc, "[2/5] results", lines)
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
    stderr = "".join(lines) + rest
    assert proc.returncode == 128 + signum, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    name = signal.Signals(signum).name
    assert [line for line in stderr.splitlines() if "interrupted" in line] == [
        f"interrupted ({name}): {out} was left as it was"]
    assert _snapshot(out) == before  # byte for byte, staging directory gone, lock file empty again


# --------------------------------------------------------------------------- the lock

def _hold_lock(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / outdir.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_second_build_gives_up_after_wait_with_a_message(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fd = _hold_lock(out)
    try:
        t0 = time.monotonic()
        proc = run_cli("--evidence", str(HANDMADE), "--out", str(out), "--wait", "1")
        waited = time.monotonic() - t0
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert f"waiting for another build of {out} (pid {os.getpid()})" in proc.stderr
        assert f"another build of {out} (pid {os.getpid()}) is still running after 1 s" in proc.stderr
        assert waited >= 1
        proc = run_cli("--evidence", str(HANDMADE), "--out", str(out), "--wait", "0")
        assert proc.returncode == 1 and "waiting for" not in proc.stderr and "--wait SECONDS" in proc.stderr
        assert not (out / "results.json").exists()
    finally:
        os.close(fd)


def test_lock_is_released_and_emptied(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    with BuildLock(out, 0):
        assert (out / outdir.LOCK_FILE).read_text() == f"{os.getpid()}\n"
    assert (out / outdir.LOCK_FILE).read_text() == ""
    with BuildLock(out, 0):  # free again
        pass


@pytest.mark.slow  # issue 22: among the slowest of the suite (full builds); the full suite and CI run it
def test_two_concurrent_builds_never_mix(tmp_path: Path, other_evidence: Path) -> None:
    out = tmp_path / "shared"
    first = _popen("--evidence", str(HANDMADE), "--out", str(out))
    lines: list[str] = []
    try:
        _read_until(first, "[1/5] verify", lines)  # the first build holds the lock now
        second = _popen("--evidence", str(other_evidence), "--out", str(out))
        try:
            _, err2 = second.communicate(timeout=TIMEOUT_S)
        finally:
            second.kill()
        _, rest = first.communicate(timeout=TIMEOUT_S)
    finally:
        first.kill()
    assert first.returncode == 0, "".join(lines) + rest
    assert second.returncode == 0, err2
    assert f"waiting for another build of {out} (pid {first.pid})" in err2
    # the second build ran after the first: OUT is wholly the second package's build
    assert check(other_evidence, out, DEFAULT_PARAMS) == []


# --------------------------------------------------------------------------- output boundaries

def test_csv_text_cells_are_neutralised_numbers_stay_numeric() -> None:
    hostile = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "-0.225", None]
    data = pl.DataFrame({"configuration": hostile, "effect": [-0.5, 1.0, -2.0, 0.0, 3.0, -1e-9, 2.0, None],
                         "n": [-1, 2, 3, 4, 5, 6, 7, 8],
                         "groups": [["=a", "b"], ["c"], [], None, ["-d"], ["e"], ["f"], ["g"]]})
    spec = TableSpec("t_hostile", "Hostile", data, data)
    rows = list(csv.DictReader(io.StringIO(to_csv(spec), newline="")))
    assert [r["configuration"] for r in rows] == [
        "'=HYPERLINK(\"http://x\",\"y\")", "'+1+1", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "-0.225", ""]
    assert [r["effect"] for r in rows][:3] == ["-0.5", "1.0", "-2.0"] and rows[0]["n"] == "-1"
    assert [r["groups"] for r in rows][:5] == ["'=a;b", "c", "", "", "'-d"]


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_ansi_escape_in_a_study_key_is_printed_visibly(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / "pkg")
    text = (pkg / "study.toml").read_text()
    (pkg / "study.toml").write_text('"\\u001b[31mevil\\u0007" = 1\n' + text)
    edit(pkg, "study.toml", "evil", "evil")  # relock
    for args in (("verify", str(pkg)), ("--evidence", str(pkg), "--out", str(tmp_path / "out"))):
        proc = run_cli(*args)
        output = proc.stdout + proc.stderr
        assert "Traceback" not in output
        assert "\x1b" not in output and "\x07" not in output, output
        assert "\\x1b[31mevil\\x07" in proc.stderr, proc.stderr


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_staging_left_by_a_killed_build_is_removed(tmp_path: Path, built: Path) -> None:
    out = _copy_tree(built, tmp_path / "o")
    leftover = out / ".build-staging-killed"
    (leftover / "tables").mkdir(parents=True)
    (leftover / "tables" / "half.csv").write_text("half\n")
    lines: list[str] = []
    build(HANDMADE, out, DEFAULT_PARAMS, progress=lines.append, force=True)
    assert not leftover.exists() and any(".build-staging-killed" in line for line in lines)


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_check_waits_for_a_running_build_of_out(tmp_path: Path, built: Path) -> None:
    """--check compares OUT only once the build holding OUT's lock has committed."""
    out = _copy_tree(built, tmp_path / "o")
    fd = _hold_lock(out)
    (out / "tables" / "t3_panel.md").write_text("half-committed\n")
    result: list[list[str]] = []
    lines: list[str] = []
    worker = threading.Thread(
        target=lambda: result.append(check(HANDMADE, out, DEFAULT_PARAMS, progress=lines.append)))
    worker.start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not any("waiting for another build" in line for line in lines):
            assert worker.is_alive() and time.monotonic() < deadline, lines
            time.sleep(0.05)
        (out / "tables" / "t3_panel.md").write_bytes((built / "tables" / "t3_panel.md").read_bytes())
    finally:
        os.close(fd)  # the "build" commits and releases its lock
    worker.join(TIMEOUT_S)
    assert result == [[]]


def test_error_messages_show_control_characters_escaped(tmp_path: Path) -> None:
    hostile = tmp_path / "a\x1b[2Jb"
    hostile.write_text("a file, not a directory\n")
    proc = run_cli("--evidence", str(HANDMADE), "--out", str(hostile))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "\x1b" not in proc.stderr and "a\\x1b[2Jb is a file" in proc.stderr


# ------------------------------------------------------------------ a killed build's staging

def test_stale_staging_is_removed_even_when_nothing_is_rebuilt(tmp_path: Path) -> None:
    from analysis.outdir import STAGING_PREFIX, remove_stale_staging

    said: list[str] = []
    (tmp_path / (STAGING_PREFIX + "abc") / "tables").mkdir(parents=True)
    (tmp_path / (STAGING_PREFIX + "link")).symlink_to(tmp_path / "keep")
    (tmp_path / "keep").mkdir()
    remove_stale_staging(tmp_path, said.append)
    assert not (tmp_path / (STAGING_PREFIX + "abc")).exists() and (tmp_path / "keep").is_dir()
    assert said and "was killed" in said[0]


# ------------------------------------------------------------------ SIGTERM in every stage

@pytest.mark.slow
@pytest.mark.parametrize("after", ["[1/5] verify", "[2/5] results", "[3/5] tables", "[4/5] figures"])
def test_sigterm_is_honoured_within_two_seconds_in_every_stage(tmp_path: Path, after: str) -> None:
    import signal
    import time

    from test_build_safety import _popen, _read_until

    proc = _popen("--evidence", str(REPO / "tests" / "fixtures" / "handmade"), "--out", str(tmp_path / "o"),
                  "--force")
    lines: list[str] = []
    try:
        _read_until(proc, after, lines)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        proc.kill()
    assert proc.returncode == 143 and "Traceback" not in rest, rest[-800:]
    assert took < 2.0, f"SIGTERM after {after!r} took {took:.1f}s"

