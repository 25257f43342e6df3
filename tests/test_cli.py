"""generate.py: verify, lock and the analysis entry point, with clean errors."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import cli
from analysis.evidence import load_package
from evidence_support import HANDMADE, REPO, copy_handmade, edit, run_cli


def test_verify_shipped_evidence_one_line() -> None:
    proc = run_cli("verify")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("OK ")
    shipped = load_package(cli.shipped_evidence())
    assert f"{shipped.rows.height} rows" in lines[0] and f"{shipped.checks.height} checks" in lines[0]
    assert all(f"{k}={v}" in lines[0] for k, v in shipped.digests.items())


def test_verify_handmade_counts() -> None:
    proc = run_cli("verify", str(HANDMADE))
    assert proc.returncode == 0
    assert "3 files verified, 22 rows (18 valid), 252 checks, 3 configurations" in proc.stdout


@pytest.mark.parametrize("target", ["does-not-exist", "generate.py"])
def test_verify_not_a_package(target: str) -> None:
    proc = run_cli("verify", target)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no evidence package here" in proc.stderr


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_lock_then_verify(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "rows.csv", ",all recalled\na1-q", ",ALL recalled\na1-q", relock=False)
    assert run_cli("verify", str(root)).returncode == 1
    (root / "MANIFEST.txt").write_text("made by hand\n")
    proc = run_cli("lock", str(root), "--files", "MANIFEST.txt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {root / 'provenance.lock'}: 5 files")
    assert proc.stdout.splitlines()[-1].startswith("OK ")
    lock = json.loads((root / "provenance.lock").read_text())
    assert set(lock["files"]) == {"MANIFEST.txt", "study.toml", "rows.csv", "checks.csv", "datapackage.json"}
    assert run_cli("verify", str(root)).returncode == 0
    # re-locking keeps the extra file pinned before
    proc = run_cli("lock", str(root))
    assert proc.returncode == 0 and "MANIFEST.txt" in json.loads((root / "provenance.lock").read_text())["files"]


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_lock_of_invalid_package_reports_problems(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "rows.csv", "a1-q,S5,acme/alpha-1,g1,1,q,2,true", "a1-q,S5,acme/alpha-1,g1,1,q,2,maybe",
         relock=False)
    proc = run_cli("lock", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "rows.csv:3 [valid]: 'maybe' is not true or false" in proc.stderr
    assert (root / "provenance.lock").exists()
    assert run_cli("lock", str(root), "--no-check").returncode == 0


def test_lock_missing_required_file(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "checks.csv").unlink()
    proc = run_cli("lock", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "checks.csv: cannot be locked: no such file" in proc.stderr


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_analysis_entry_point_writes_evidence_block(tmp_path: Path) -> None:
    out = tmp_path / "out" / "nested"
    proc = run_cli("--evidence", str(HANDMADE), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())
    expected = load_package(HANDMADE).digests
    assert results["evidence"]["sha256"] == dict(expected)


def test_analysis_entry_point_refuses_bad_evidence(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "study.toml", "recency_cutoff = 2026-01-28", "recency_cutoff = 2026-01-32")
    out = tmp_path / "out"
    proc = run_cli("--evidence", str(root), "--out", str(out))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "study.toml:3" in proc.stderr and not (out / "results.json").exists()


@pytest.mark.slow  # issue 22: among the slowest of the suite (full builds); the full suite and CI run it
def test_main_job_defaults(tmp_path: Path, monkeypatch, capsys) -> None:
    """No arguments: shipped evidence into the default output root (redirected here)."""
    monkeypatch.setattr(cli, "DEFAULT_OUT", tmp_path)
    assert cli.main([]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["evidence"]["sha256"] == dict(load_package(cli.shipped_evidence()).digests)


def test_shipped_evidence_prefers_locked_v1(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cli, "V1_EVIDENCE", tmp_path / "v1")
    assert cli.shipped_evidence() == cli.HANDMADE_EVIDENCE
    copy_handmade(tmp_path / "v1")
    assert cli.shipped_evidence() == tmp_path / "v1"


def test_subcommand_rejects_main_job_options() -> None:
    proc = run_cli("--out", "x", "verify")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_every_flag_is_documented() -> None:
    """Each option of every command appears in --help (and the commands in the README)."""
    parser = cli.build_parser()
    text = parser.format_help()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    readme = (REPO / "README.md").read_text()
    for name, subparser in sub.choices.items():
        assert name in text and f"generate.py {name}" in readme
        sub_help = subparser.format_help()
        for action in subparser._actions:
            for flag in action.option_strings:
                assert flag in sub_help
    for flag in ("--evidence", "--out"):
        assert flag in text and flag in readme
    assert re.search(r"--files", readme)


def test_readme_setup_commands_and_ci_agree() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Set-up on a fresh machine", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = block.strip().splitlines()
    assert commands == ['python -m pip install -e ".[test]" && python generate.py', "python -m pytest"]
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci
    assert 'python -m pip install -e ".[test]"' in ci
    # the README's test command runs unchanged (its exit status becomes the script's: tests/test_ci_script.py)
    assert "\n" + commands[1] + " || status=$?\n" in ci and ci.rstrip().splitlines()[-1] == 'exit "$status"'
    assert "reconstruction" in readme.lower()


def _shipped_files() -> list[str]:
    root = cli.shipped_evidence()
    return ["provenance.lock", *sorted(json.loads((root / "provenance.lock").read_text())["files"])]


@pytest.mark.parametrize("name", _shipped_files())
def test_tampering_with_any_shipped_file_fails_verify(tmp_path: Path, name: str) -> None:
    """Done-when of the foundation issue: a changed byte in any shipped file fails `verify`."""
    import shutil

    src = cli.shipped_evidence()
    root = tmp_path / "shipped"
    for rel in _shipped_files():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, root / rel)
    data = bytearray((root / name).read_bytes())
    pos = len(data) // 2
    data[pos] = data[pos] ^ 0x01
    (root / name).write_bytes(bytes(data))
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == ""
    if name != "provenance.lock":  # a changed digest in the lock reads as a change of its file
        assert f"{name}: changed: expected sha256" in proc.stderr


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)


def _generate(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "generate.py"), *args], cwd=REPO, env=_env(**env),
                          capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------ stdout

@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_stdout_survives_an_ascii_terminal_and_paths_cannot_forge_lines(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / "évidence\nOK fake line")
    r = _generate("verify", str(pkg), PYTHONIOENCODING="ascii")
    assert r.returncode == 0, r.stderr[-800:]
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("OK ") and "\\n" in r.stdout
    assert "\\xe9" in r.stdout  # é escaped for the ascii stream, never a UnicodeEncodeError
    r = _generate("lock", str(pkg), PYTHONIOENCODING="ascii")
    assert r.returncode == 0 and r.stdout.count("\n") == 2, r.stderr[-800:]


def test_an_evidence_path_with_a_quote_verifies(tmp_path: Path) -> None:
    pkg = copy_handmade(tmp_path / 'evidence "quoted" {{< x >}}')
    r = run_cli("verify", str(pkg))
    assert r.returncode == 0 and r.stdout.startswith("OK "), r.stderr

