"""The package as a user installs it: a built wheel in a fresh venv, run from another directory (issue 22).

The wheel is built from a copy of the files the build reads (so no build/ of the checkout leaks in),
installed with --no-deps into a venv outside the checkout that sees the dependencies of the interpreter
running the tests (a .pth file naming its site-packages: no download; --system-site-packages would name the
base interpreter's instead, which lacks them when the tests run in a venv), and every command runs from an empty working
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
from support.paths import REPO as ROOT
from support.scripted_server import MemorizingModel, ScriptedServer

BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "analysis",
                "data/published/claims.yaml", "docs")
"""What the wheel is built from (pyproject.toml, setup.py's copies of the claims file and the docs); nothing
else is copied."""


def _run(cmd: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _ok(r: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert r.returncode == 0, f"{r.args}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}"
    return r


def dependency_dirs() -> list[str]:
    """The site-packages directories of the interpreter running the tests (a venv's own when it runs in one):
    where the package's dependencies are installed."""
    import site

    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def see_dependencies(python: Path, cwd: Path) -> Path:
    """Make the venv of ``python`` see :func:`dependency_dirs` through a .pth file in its own site-packages
    (after its own entries, so the installed wheel wins; .pth files inside those directories, such as an
    editable install of the checkout, are not run). Returns the .pth file."""
    purelib = _ok(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=cwd))
    pth = Path(purelib.stdout.strip()) / "_carriers_test_dependencies.pth"
    pth.write_text("".join(f"{d}\n" for d in dependency_dirs()), encoding="utf-8")
    return pth


def test_a_venv_sees_the_running_interpreters_dependencies(tmp_path: Path) -> None:
    """The test venv imports the dependencies from where the running interpreter has them (its venv's
    site-packages when the tests run in a venv, not the base interpreter's), but not the checkout."""
    venv = tmp_path / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path))
    see_dependencies(venv / "bin" / "python", tmp_path)
    import polars

    r = _ok(_run([venv / "bin" / "python", "-c", "import polars, sys; print(polars.__file__); "
                  "import importlib.util as u; print(u.find_spec('analysis') is None)"], cwd=tmp_path))
    found, no_analysis = r.stdout.split()
    assert Path(found) == Path(polars.__file__)  # the running interpreter's polars, whichever venv it is in
    assert no_analysis == "True"  # an editable install of the checkout does not leak in


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
    _ok(_run([sys.executable, "-m", "venv", venv], cwd=tmp_path))
    bin_dir = venv / "bin"
    see_dependencies(bin_dir / "python", tmp_path)
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
    # where to get one, as that message says: the v1 reconstruction from the claims file the wheel ships
    _ok(_run([bin_dir / "python", "-m", "analysis.reconstruct", "build", "--out", "v1-rebuilt"], cwd=work))
    rebuilt = {p.relative_to(work / "v1-rebuilt"): p.read_bytes() for p in (work / "v1-rebuilt").rglob("*")
               if p.is_file()}
    assert rebuilt == {p.relative_to(evidence): p.read_bytes() for p in evidence.rglob("*") if p.is_file()}
    shutil.rmtree(work / "v1-rebuilt")

    # the docs the messages cite ship in the wheel (`carriers docs`), byte for byte the checkout's docs/
    listing = _ok(_run([bin_dir / "carriers", "docs"], cwd=work)).stdout.splitlines()
    shipped = {line.split()[0]: Path(line.split(maxsplit=1)[1]) for line in listing}
    checkout = {*(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "truth").glob("*.toml")}
    assert len(shipped) == len(checkout) >= 9 and {"evidence_format", "preregistration", "simulation"} <= set(shipped)
    assert sorted(p.read_bytes() for p in shipped.values()) == sorted(p.read_bytes() for p in checkout)
    assert all(p.is_relative_to(venv) for p in shipped.values()), shipped
    text = _ok(_run([bin_dir / "carriers", "docs", "preregistration"], cwd=work)).stdout
    assert text == (ROOT / "docs" / "PREREGISTRATION.md").read_text(encoding="utf-8").rstrip("\n") + "\n"
    (work / "no-plan").mkdir()  # a plan directory without plan.toml: the message cites the shipped doc
    r = _run([bin_dir / "carriers-runner", "sweep", "--plan", work / "no-plan", "--out", tmp_path / "no-sweep"],
             cwd=work)
    assert r.returncode != 0 and "`carriers docs preregistration`" in r.stderr, r.stderr
    (work / "no-plan").rmdir()

    out = tmp_path / "out"
    r = _ok(_run([bin_dir / "carriers", "--evidence", evidence, "--out", out], cwd=work, timeout=600))
    assert (out / "report" / "index.html").is_file()
    assert f"report: {out / 'report' / 'index.html'}" in r.stdout
    assert (out / "tables" / "t_claims_audit.md").is_file()  # the claims file shipped in the wheel
    assert (out / "figures").is_dir() and (out / "results.json").is_file()
    t_report = time.monotonic() - t0

    # the public API alone (issue 33): verify, load, analyse equals the results.json carriers wrote,
    # paired_effect is a one-row polars frame; and both commands name themselves
    script = work / "api_check.py"
    script.write_text(
        "import json, sys\nimport analysis\n"
        "analysis.verify(sys.argv[1])\npkg = analysis.load(sys.argv[1])\n"
        "written = json.load(open(sys.argv[2], encoding='utf-8'))\n"
        "assert analysis.analyse(pkg).to_dict() == written\n"
        "f = analysis.paired_effect(pkg).to_frame()\n"
        "assert f.height == 1 and f['estimate'][0] == written['panel']['mean']\n"
        "print('api ok', f['n'][0])\n", encoding="utf-8")
    r = _ok(_run([bin_dir / "python", script, evidence, out / "results.json"], cwd=work, timeout=600))
    assert r.stdout.startswith("api ok"), r.stdout
    for command in ("carriers", "carriers-runner"):
        assert _ok(_run([bin_dir / command, "--version"], cwd=work)).stdout.split()[0] == command
    # every notebook executes on the installed package (a kernel of the venv's python), its evidence a parameter
    runner = work / "run_notebooks.py"
    runner.write_text(
        "import sys, nbformat\nfrom nbclient import NotebookClient\n"
        "for path, evidence in zip(sys.argv[1::2], sys.argv[2::2], strict=True):\n"
        "    nb = nbformat.read(path, as_version=4)\n"
        "    cell = next(c for c in nb.cells if 'parameters' in c.metadata.get('tags', []))\n"
        "    cell.source = f'EVIDENCE = {evidence!r}'\n"
        "    NotebookClient(nb, timeout=600, kernel_name='python3').execute()\n"
        "    print('executed', path)\n", encoding="utf-8")
    pairs = [a for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))
             for a in (nb, ROOT / "data" / "v2" / "pilot" if nb.name == "fact_survival.ipynb" else evidence)]
    r = _ok(_run([bin_dir / "python", runner, *pairs], cwd=work, timeout=900))
    assert r.stdout.count("executed") == len(pairs) // 2

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
