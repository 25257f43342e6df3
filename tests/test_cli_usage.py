"""generate.py usage: a run of one's own never overwrites the committed outputs, misspelled flags are
named, the no-lock message names the package, and a build ends with the path of its report (issue 22)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis import cli
from evidence_support import HANDMADE, run_cli


@pytest.mark.parametrize("argv", [
    ["--evidence", str(HANDMADE)],
    ["--evidence", str(HANDMADE), "--force"],
    ["--companion", str(HANDMADE)],
])
def test_other_evidence_without_out_is_a_usage_error(argv: list[str], monkeypatch, tmp_path: Path,
                                                      capsys) -> None:
    """Without --out only the shipped evidence may write into the repository root (here redirected)."""
    monkeypatch.setattr(cli, "DEFAULT_OUT", tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "add --out OUT" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_shipped_evidence_named_explicitly_still_writes_the_repository(monkeypatch, tmp_path: Path) -> None:
    """Naming the shipped package itself is the default invocation, not another package."""
    monkeypatch.setattr(cli, "DEFAULT_OUT", tmp_path)
    args = cli.build_parser().parse_args(["--evidence", str(cli.shipped_evidence())])
    assert cli.refuses_repository_overwrite(args) is None
    args = cli.build_parser().parse_args(["--evidence", str(HANDMADE), "--out", str(tmp_path / "o")])
    assert cli.refuses_repository_overwrite(args) is None
    args = cli.build_parser().parse_args(["--evidence", str(HANDMADE), "--check"])  # --check writes nothing
    assert cli.refuses_repository_overwrite(args) is None


@pytest.mark.parametrize(("argv", "named"), [
    (["--evidnce", "data/v1"], "unknown option --evidnce; did you mean --evidence?"),
    (["--evidence=x", "--outt", "y"], "unknown option --outt; did you mean --out?"),
    (["plan", "--simz", "3"], "unknown option --simz; did you mean --sims?"),
    (["--zzqqxx"], "unknown option --zzqqxx; see --help"),
])
def test_misspelled_flag_is_named(argv: list[str], named: str, capsys) -> None:
    # argparse alone says "invalid choice: 'data/v1' (choose from 'verify', 'lock', 'plan')".
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and "invalid choice" not in err


def test_abbreviations_argparse_accepts_are_not_misspellings() -> None:
    parser = cli.build_parser()
    assert cli.unknown_option(parser, ["--evid", "x", "--out", "y"]) is None
    assert cli.unknown_option(parser, ["verify", "--", "--not-an-option"]) is None


def test_missing_lock_says_how_to_lock_this_package(tmp_path: Path) -> None:
    root = tmp_path / "my run"
    shutil.copytree(HANDMADE, root)
    (root / "provenance.lock").unlink()
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"python generate.py lock '{root}'" in proc.stderr  # the real path, shell-quoted
    assert "lock DIR" not in proc.stderr and "restore the original files" not in proc.stderr


def test_a_build_ends_with_the_path_of_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("--evidence", str(HANDMADE), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"report: {out / 'report' / 'index.html'}"
    assert (out / "report" / "index.html").is_file()


@pytest.mark.parametrize("module", ["analysis", "analysis.cli"])
def test_module_entry_points_print_help(module: str) -> None:
    """`python -m analysis` and `python -m analysis.cli` are the generate.py command line."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                          cwd=HANDMADE.parent, timeout=120, check=False,
                          env={**__import__("os").environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])})
    assert proc.returncode == 0 and "usage:" in proc.stdout
    assert "{verify,lock,plan,calibrate,regenerate,docs}" in proc.stdout


def test_console_scripts_are_declared() -> None:
    import tomllib

    scripts = tomllib.loads((Path(cli.__file__).parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"carriers": "analysis.cli:main", "carriers-runner": "analysis.runner.cli:main"}
