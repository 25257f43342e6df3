"""The architecture (README "Architecture"): import-linter contracts in pyproject.toml.

`lint-imports` checks every import of the `analysis` package, function-level ones included:
the layers, the runner's isolation, and no cycles between siblings at any depth. The other
tests break a copy of the package on purpose and check that the contracts notice, so the first
one cannot pass by checking nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
TIMEOUT_S = 300


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run `lint-imports` on the `analysis` package under ``root`` with ``root``'s pyproject.toml."""
    if not Path(LINT_IMPORTS).exists():
        pytest.fail('lint-imports is not installed; run python -m pip install -e ".[test]"')
    env = {**os.environ, "PYTHONPATH": str(root)}  # the package under root, not an installed copy
    return subprocess.run([LINT_IMPORTS, "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def test_import_contracts_are_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, f"lint-imports failed:\n{result.stdout}\n{result.stderr}"
    assert "0 broken" in result.stdout


@pytest.fixture()
def package_copy(tmp_path: Path) -> Path:
    """A copy of pyproject.toml and the analysis package's Python files, to break on purpose."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(REPO / "analysis", tmp_path / "analysis",
                    ignore=lambda _d, names: [n for n in names if n == "__pycache__"
                                              or (Path(_d, n).is_file() and not n.endswith(".py"))])
    return tmp_path


def _add_import(root: Path, module: str, line: str) -> None:
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"\n\ndef _planted() -> None:\n    {line}  # function-level: still counted\n",
                    encoding="utf-8")


@pytest.mark.parametrize(("module", "line", "broken"), [
    # an estimator reaching up into the report
    ("analysis.estimators.common", "from analysis.report import numbers",
     "analysis.estimators is not allowed to import analysis.report"),
    # the evidence layer reaching up into the estimators
    ("analysis.evidence.loader", "import analysis.estimators.common",
     "analysis.evidence is not allowed to import analysis.estimators"),
    # the runner using something other than evidence
    ("analysis.runner.ledger", "import analysis.estimators.common",
     "The runner uses only evidence"),
    # the analysis importing the runner instead of reading its packages
    ("analysis.tables.render", "import analysis.runner.graders",
     "analysis.tables is not allowed to import analysis.runner"),
])
def test_contracts_catch_a_forbidden_import(package_copy: Path, module: str, line: str, broken: str) -> None:
    _add_import(package_copy, module, line)
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert broken in result.stdout


def test_contracts_catch_a_cycle_inside_a_package(package_copy: Path) -> None:
    """protocol -> fixture exists; fixture -> protocol closes a cycle one level down."""
    _add_import(package_copy, "analysis.runner.fixture", "import analysis.runner.protocol")
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "No cycles are allowed in analysis.runner" in result.stdout


def test_contracts_catch_an_unplaced_module(package_copy: Path) -> None:
    """Every top-level module must be placed in a layer (the layers contract is exhaustive)."""
    (package_copy / "analysis" / "newcomer.py").write_text('"""Not yet placed in a layer."""\n')
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "analysis.newcomer" in result.stdout
