"""The package as a user installs it: a built wheel in a fresh venv, run from another directory (issue 22).

The wheel is built from a copy of the files the build reads (so no build/ of the checkout leaks in),
installed with --no-deps into a venv outside the checkout that sees the machine's installed
dependencies (--system-site-packages: no download), and every command runs from an empty working
directory with no PYTHONPATH, so the INSTALLED package is what runs (asserted). It then verifies a
copy of data/v1, builds its report into a temporary OUT, refuses to guess an evidence or an OUT,
and runs a sweep against the loopback scripted server on the runner's named fixture. It takes about
1 to 2 minutes on 2 cores (printed; marked slow).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.runner.named_fixtures import load_fixture_arg
from support.scripted_server import MemorizingModel, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "analysis",
                "data/published/claims.yaml")
"""What the wheel is built from (pyproject.toml, setup.py's claims copy); nothing else is copied."""


def _run(cmd: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _ok(r: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert r.returncode == 0, f"{r.args}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}"
    return r


@pytest.mark.slow
def test_installed_wheel_verifies_builds_and_sweeps_from_another_directory(tmp_path: Path) -> None:
    t0 = time.monotonic()
    src, dist, work = tmp_path / "src", tmp_path / "dist", tmp_path / "work"
    for name in BUILD_INPUTS:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src], cwd=tmp_path, timeout=600))
    wheel = next(dist.glob("compaction_carriers-*.whl"))
    venv = tmp_path / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=tmp_path))
    bin_dir = venv / "bin"
    _ok(_run([bin_dir / "python", "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q",
              wheel], cwd=tmp_path))
    t_installed = time.monotonic() - t0

    work.mkdir()
    where = _ok(_run([bin_dir / "python", "-c", "import analysis; print(analysis.__file__)"], cwd=work))
    installed = Path(where.stdout.strip())
    assert installed.is_relative_to(venv), f"imported {installed}, not the wheel in {venv}"
    assert not installed.is_relative_to(ROOT)

    evidence = work / "v1"
    shutil.copytree(ROOT / "data" / "v1", evidence)
    r = _ok(_run([bin_dir / "carriers", "verify", evidence], cwd=work))
    assert r.stdout.startswith("OK ")

    # installed, nothing defaults to the install directory: no evidence, no OUT
    r = _run([bin_dir / "carriers"], cwd=work)
    assert r.returncode == 2 and "carries no shipped evidence" in r.stderr, r.stderr
    r = _run([bin_dir / "carriers", "--evidence", evidence], cwd=work)
    assert r.returncode == 2 and "add --out OUT" in r.stderr, r.stderr

    out = tmp_path / "out"
    r = _ok(_run([bin_dir / "carriers", "--evidence", evidence, "--out", out], cwd=work, timeout=600))
    assert (out / "report" / "index.html").is_file()
    assert f"report: {out / 'report' / 'index.html'}" in r.stdout
    assert (out / "tables" / "t_claims_audit.md").is_file()  # the claims file shipped in the wheel
    assert (out / "figures").is_dir() and (out / "results.json").is_file()
    t_report = time.monotonic() - t0

    sweep = tmp_path / "sweep"
    with ScriptedServer(MemorizingModel(load_fixture_arg("small"))) as srv:
        r = _ok(_run([bin_dir / "carriers-runner", "sweep", "--base-url", srv.base_url, "--model", "scripted/model-1",
                      "--published", "2026-03-01", "--family", "test", "--fixture", "small", "--arms", "j,q",
                      "--repeats", "1", "--out", sweep, "--api-key-env", "", "--no-probe",
                      "--structured-mode", "json_schema", "--timeout", "20"], cwd=work))
    assert "evidence package" in r.stdout
    shipped = _ok(_run([bin_dir / "python", "-c", "from analysis.runner.named_fixtures import FIXTURE_DIR as d; "
                        "print((d / 's5-small.json').is_file(), (d / 'ladder' / 'provenance.lock').is_file())"],
                       cwd=work))
    assert shipped.stdout.split() == ["True", "True"]  # the fixtures ship in the wheel (not rebuilt)
    r = _ok(_run([bin_dir / "carriers", "verify", sweep / "evidence"], cwd=work))
    assert ", 2 rows (" in r.stdout, r.stdout
    assert not list(work.glob("*.json")) and not (work / "report").exists()  # nothing written to the cwd
    elapsed = time.monotonic() - t0
    print(f"wheel built and installed in {t_installed:.0f}s, report at {t_report:.0f}s, total {elapsed:.0f}s")
