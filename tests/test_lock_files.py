"""Issue 31, finding 5: a lock file never truncates a hard-linked (or any other) user file.

``.build.lock`` (analysis.outdir.BuildLock) and ``.runner.lock`` (analysis.runner.cli) share
analysis.safeio.lock.DirLock: its path must be a regular file with one link holding nothing but a
pid, else LockFileError is raised before a byte is written.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis import outdir
from analysis.outdir import BuildLock
from analysis.runner.cli import RUNNER_LOCK
from analysis.runner.cli import main as runner_main
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.safeio.lock import DirLock, LockFileError
from evidence_support import HANDMADE, run_cli
from support.scripted_server import MemorizingModel, ScriptedServer
from support.sweep_args import sweep_args as _sweep

USER_BYTES = b"a user's thesis, irreplaceable\n" * 10


@pytest.mark.parametrize("name", [outdir.LOCK_FILE, RUNNER_LOCK])
def test_a_hard_link_to_a_user_file_is_refused_and_left_intact(tmp_path: Path, name: str) -> None:
    user = tmp_path / "thesis.txt"
    user.write_bytes(USER_BYTES)
    out = tmp_path / "out"
    out.mkdir()
    os.link(user, out / name)
    with pytest.raises(LockFileError, match="hard links"), DirLock(out / name):
        pass
    assert user.read_bytes() == USER_BYTES


def test_a_users_own_file_at_the_lock_path_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / outdir.LOCK_FILE).write_bytes(USER_BYTES)
    with pytest.raises(LockFileError, match="not a lock file"), BuildLock(out, 0):
        pass
    assert (out / outdir.LOCK_FILE).read_bytes() == USER_BYTES


def test_a_lock_file_of_ours_is_reused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / outdir.LOCK_FILE).write_bytes(b"4242\n")  # a killed holder's pid
    with BuildLock(out, 0):
        assert (out / outdir.LOCK_FILE).read_bytes() == f"{os.getpid()}\n".encode()
    assert (out / outdir.LOCK_FILE).read_bytes() == b""


def test_build_cli_refuses_a_hard_linked_lock_in_one_line(tmp_path: Path) -> None:
    user = tmp_path / "thesis.txt"
    user.write_bytes(USER_BYTES)
    out = tmp_path / "out"
    out.mkdir()
    os.link(user, out / outdir.LOCK_FILE)
    proc = run_cli("--evidence", str(HANDMADE), "--out", str(out))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "hard links" in proc.stderr
    assert user.read_bytes() == USER_BYTES
    assert not (out / "results.json").exists()


# ------------------------------------------------------------------ a sweep against a scripted server



# ------------------------------------------------------------------ one runner per --out

def test_a_second_runner_into_the_same_out_is_refused_before_any_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    out.mkdir()
    fx = load_fixture_arg("small")
    with ScriptedServer(MemorizingModel(fx)) as srv, DirLock(out / RUNNER_LOCK):  # another runner holds it
        rc = runner_main(_sweep(srv.base_url, out))
        sent = len(srv.requests)
    err = capsys.readouterr().err
    assert rc == 2 and "another runner" in err and sent == 0, err

