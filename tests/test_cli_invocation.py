"""The command lines speak for themselves (issue 33): they name themselves as invoked, both have --version,
one exit-status convention, messages name commands the user has and cite the docs the package ships
(``carriers docs NAME``), never a class name; the runner's defaults trigger none of its own warnings; an
``arms`` listing."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from analysis import invocation
from analysis.runner.arguments import build_runner_parser
from analysis.runner.preflight import notices
from support.paths import HANDMADE, REPO


def _run(argv: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(("argv0", "module", "default", "expected"), [
    ("/venv/bin/carriers", "analysis", "generate.py", "carriers"),
    ("C:\\venv\\Scripts\\carriers-runner.exe".replace("\\", "/"), "analysis.runner", "x", "carriers-runner"),
    ("generate.py", "analysis", "x", "generate.py"),
    ("/src/analysis/runner/__main__.py", "analysis.runner", "x", "python -m analysis.runner"),
    ("/usr/bin/pytest", "analysis", "generate.py", "generate.py"),
])
def test_invoked_as_names_the_command_as_typed(argv0: str, module: str, default: str, expected: str) -> None:
    assert invocation.invoked_as(module, default, argv0) == expected


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_console_scripts_name_themselves_and_runner_has_version(tmp_path: Path) -> None:
    """A script named like the installed console command (its argv[0]) prints its own name in --version and
    usage; the runner's --version works without a subcommand."""
    for name, entry in (("carriers", "analysis.cli"), ("carriers-runner", "analysis.runner.cli")):
        script = tmp_path / name
        script.write_text(f"import sys\nfrom {entry} import main\nsys.exit(main())\n", encoding="utf-8")
        version = _run([sys.executable, str(script), "--version"])
        assert version.returncode == 0, version.stderr
        assert version.stdout.split() == [name, "0.1.0"]
        usage = _run([sys.executable, str(script), "--help"])
        assert usage.stdout.startswith(f"usage: {name} ")
        assert "generate.py" not in usage.stdout.split("\n\n")[0]
    runner_help = _run([sys.executable, str(tmp_path / "carriers-runner"), "--help"]).stdout
    assert "python -m analysis.runner" not in runner_help and "carriers-runner sweep" in runner_help
    assert "OUT/report" not in runner_help  # --out OUT/report gave OUT/report/report/index.html
    module = _run([sys.executable, "-m", "analysis.runner", "--version"])
    assert module.stdout.split() == ["python", "-m", "analysis.runner", "0.1.0"]


def test_help_states_one_exit_status_convention() -> None:
    for argv in ([sys.executable, "generate.py", "--help"], [sys.executable, "-m", "analysis.runner", "--help"]):
        text = " ".join(_run(argv).stdout.split())
        assert "exit status: 0 done; 1 the" in text and "2 bad usage" in text, argv
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "Exit status: 0 done; 1 the evidence, the endpoint or another input failed a check" in readme


def test_runner_defaults_trigger_none_of_its_own_warnings() -> None:
    for argv in (["sweep", "--out", "x"], ["embedded", "--out", "x"]):
        a = build_runner_parser().parse_args(argv)
        rule = {"recency_cutoff_source": "given"}
        lines = notices([], dt.date(2026, 1, 1), rule, temperature=a.temperature, repeats=a.repeats, seed=a.seed,
                        seed_per_repeat=a.seed_per_repeat)
        assert lines == [], (argv, lines)


def test_arms_lists_every_code_with_its_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.runner.arms import load_arms
    from analysis.runner.cli import main

    assert main(["arms"]) == 0
    out = capsys.readouterr().out.splitlines()
    arms = load_arms()
    assert [line.split()[0] for line in out] == list(arms)
    for line, arm in zip(out, arms.values(), strict=True):
        assert arm.title in line
    assert main(["sweep", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--published", "2026-03-01",
                 "--arms", "j,zz", "--out", "unused", "--api-key-env", ""]) == 2
    err = capsys.readouterr().err
    assert "unknown or no arm codes ['zz']" in err and arms["q"].title in err and "Error" not in err


def test_out_naming_the_evidence_is_usage_exit_2(tmp_path: Path) -> None:
    proc = _run([sys.executable, "generate.py", "--evidence", str(HANDMADE), "--out", str(HANDMADE / "x")])
    assert proc.returncode == 2 and proc.stderr.startswith("error: --out ") and "Traceback" not in proc.stderr


def test_messages_name_the_installed_command_and_the_shipped_docs(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """Run as ``carriers`` (argv[0]), an evidence error's fix says ``carriers lock DIR``, not ``python
    generate.py``, and a format error cites ``carriers docs evidence_format`` (a doc the package ships, printed
    by a command the wheel user has), not docs/X.md nor a URL."""
    import shutil

    from analysis.cli import NO_SHIPPED_EVIDENCE
    from analysis.evidence import ProvenanceError, SchemaError, verify_package

    monkeypatch.setattr(sys, "argv", ["/venv/bin/carriers", "verify"])
    pkg = shutil.copytree(HANDMADE, tmp_path / "pkg")
    rows = pkg / "rows.csv"
    rows.write_bytes(rows.read_bytes().replace(b"all recalled", b"all recalleD", 1))
    with pytest.raises(ProvenanceError) as caught:
        verify_package(pkg)
    assert "`carriers lock DIR`" in str(caught.value) and "python generate.py" not in str(caught.value)
    error = str(SchemaError([]))
    assert "`carriers docs evidence_format`" in error and "docs/" not in error and "://" not in error
    assert invocation.doc_path("evidence_format").read_bytes() == (REPO / "docs" / "EVIDENCE_FORMAT.md").read_bytes()
    assert "://" not in NO_SHIPPED_EVIDENCE and "python -m analysis.reconstruct build --out v1" in NO_SHIPPED_EVIDENCE


def test_no_invented_project_url() -> None:
    """pyproject.toml declares only the paper's URL: the docs ship with the package (``carriers docs``)."""
    urls = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert list(urls) == ["Paper"]


def test_every_doc_a_message_cites_ships() -> None:
    """Each ``doc_command("NAME")`` and ``docs NAME`` in the package's source names a doc
    :func:`~analysis.invocation.doc_path` finds; every docs/*.md and docs/truth/*.toml is listed."""
    import re

    cited = set()
    for src in (REPO / "analysis").rglob("*.py"):
        text = src.read_text(encoding="utf-8")
        cited |= set(re.findall(r"doc_command\(['\"]([\w/-]+)['\"]\)", text))
        cited |= set(re.findall(r"\} docs ([\w/-]+)", text)) - {"truth/NAME"}
    assert {"evidence_format", "preregistration", "simulation", "truth/clear-effect"} <= cited, cited
    for name in cited:
        assert invocation.doc_path(name).is_file(), name
    listed = set(invocation.shipped_docs().values())
    assert listed == {*(REPO / "docs").glob("*.md"), *(REPO / "docs" / "truth").glob("*.toml")}


def test_docs_command_lists_prints_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.cli import main

    assert main(["docs"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing] == list(invocation.shipped_docs())
    assert main(["docs", "EVIDENCE-FORMAT.md"]) == 0
    text = (REPO / "docs" / "EVIDENCE_FORMAT.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == text.rstrip("\n") + "\n"
    assert main(["docs", "truth/clear-effect", "--path"]) == 0
    assert capsys.readouterr().out.strip() == str(REPO / "docs" / "truth" / "clear-effect.toml")
    assert main(["docs", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no doc named 'nope'") and "preregistration" in err and "Error" not in err


def test_progress_lines_are_singular_for_one_and_list_only_what_was_written(tmp_path: Path) -> None:
    from analysis.report.stage import report_detail
    from analysis.results.stage import results_stage

    _, one = results_stage({"panel": {"configurations": 1}}, tmp_path)
    _, three = results_stage({"panel": {"configurations": 3}}, tmp_path)
    assert one.endswith("(1 panel configuration)") and three.endswith("(3 panel configurations)")
    report = tmp_path / "report"
    assert "trajectories" not in report_detail([report / "index.qmd", report / "index.html"])
    assert "claims_audit" not in report_detail([report / "index.qmd"])
    assert report_detail([report / "trajectories.html", report / "claims_audit.csv"]).endswith(
        "report/claims_audit.*, report/trajectories.html")


def test_the_report_says_one_configuration_in_the_singular(prebuilt: Any, tmp_path: Path) -> None:
    import analysis
    from analysis.params import DEFAULT_PARAMS
    from analysis.report.render import render_report
    from analysis.report.stage import evidence_summary

    pkg = analysis.load(HANDMADE)
    results = analysis.analyse(pkg).to_dict()
    results["panel"]["configurations"] = 1
    out = prebuilt.copy(HANDMADE, tmp_path / "out")  # the build of HANDMADE (tables and figures indexes)
    text = str(render_report(out, results, DEFAULT_PARAMS, evidence_summary(pkg, HANDMADE)))
    assert "holds the only configuration of" in text and "1 configurations" not in text


def test_study_toml_records_the_command_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as carriers-runner (argv[0]), the sweep's study.toml records ``carriers-runner sweep ...``."""
    from analysis.runner.cli import main
    from support.fault_proxy import EchoUpstream

    with EchoUpstream(served_model="acme/m") as up:
        argv = ["sweep", "--base-url", up.url + "/v1", "--model", "acme/m", "--published", "2026-03-01",
                "--arms", "j,q", "--repeats", "1", "--out", str(tmp_path), "--api-key-env", "", "--quiet"]
        monkeypatch.setattr(sys, "argv", ["/venv/bin/carriers-runner", *argv])
        assert main(argv) == 0
    study = tomllib.loads((tmp_path / "evidence" / "study.toml").read_text(encoding="utf-8"))
    assert study["runner"]["command"].startswith("carriers-runner sweep --base-url "), study["runner"]["command"]


def test_the_verify_line_is_singular_for_one() -> None:
    from analysis.evidence import verify_package

    line = verify_package(REPO / "data" / "v2" / "pilot").line()
    assert ", 1 configuration;" in line and "1 configurations" not in line and " rows (" in line
