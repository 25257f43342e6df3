"""The architecture (docs/ARCHITECTURE.md): import-linter contracts in pyproject.toml.

`lint-imports` checks every import of the `analysis` package, function-level ones included:
the layers, the runner's isolation, no cycles between siblings at any depth, no cycle between
any two modules (a package's own __init__ included), and no import made through importlib or
__import__ (the project's two contract types, tests/support/import_contracts.py). The other
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

from support.import_contracts import dynamic_imports, one_cycle, strongly_connected
from support.paths import REPO

LINT_IMPORTS = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
TIMEOUT_S = 300


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run `lint-imports` on the `analysis` package under ``root`` with ``root``'s pyproject.toml."""
    if not Path(LINT_IMPORTS).exists():
        pytest.fail('lint-imports is not installed; run python -m pip install -e ".[test]"')
    env = {**os.environ, "PYTHONPATH": str(root),  # the package under root, not an installed copy
           "COLUMNS": "400"}  # one message a line
    return subprocess.run([LINT_IMPORTS, "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def test_import_contracts_are_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, f"lint-imports failed:\n{result.stdout}\n{result.stderr}"
    assert "0 broken" in result.stdout


@pytest.fixture()
def package_copy(tmp_path: Path) -> Path:
    """A copy of pyproject.toml, the contract types and the analysis package's Python files, to break."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "support").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "support" / "import_contracts.py", tmp_path / "tests" / "support")
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


def test_contracts_catch_a_cycle_through_a_package_init(package_copy: Path) -> None:
    """evidence/__init__ imports evidence.provenance; provenance -> evidence closes a cycle through the
    package's own __init__, which the sibling contract (children only) does not see."""
    _add_import(package_copy, "analysis.evidence.provenance", "from analysis.evidence import load_package")
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "Import cycle: analysis.evidence -> analysis.evidence.provenance -> analysis.evidence" in result.stdout


@pytest.mark.parametrize("line", [
    'importlib.import_module("analysis.report.numbers")',
    'import_module("analysis.report.numbers")',
    '__import__("analysis.report.numbers")',
    'importlib.util.find_spec("analysis.report.numbers")',
])
def test_contracts_catch_an_importlib_import_from_an_estimator(package_copy: Path, line: str) -> None:
    """An estimator reaching the report through importlib: no import statement, so only the
    static-imports contract can see it."""
    call = line.split("(", 1)[0].rsplit(".", 1)[-1]
    imports = "import importlib.util" if "util" in line else "import importlib"
    planted = f"{imports}\n    from importlib import import_module\n    {line}"
    _add_import(package_copy, "analysis.estimators.common", planted)
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "analysis.estimators.common:" in result.stdout and f"{call}() imports by a run-time name" in result.stdout


def test_an_allowance_that_allows_nothing_breaks_the_contract(package_copy: Path) -> None:
    """An allow-list entry (or a cycle allowance) outliving its reason is reported, never kept silently."""
    pyproject = package_copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('allow = [\n', 'allow = [\n  "analysis.digest: planted, allows nothing",\n', 1),
                         encoding="utf-8")
    result = lint_imports(package_copy)
    assert result.returncode != 0, result.stdout
    assert "analysis.digest is allowed a dynamic import but makes none" in result.stdout


def test_dynamic_import_scan_reads_calls_not_text() -> None:
    """The scan behind static_imports: calls that import by a run-time name, not importlib.metadata,
    not a find_spec of another distribution, not a method that merely shares a builtin's name."""
    source = (
        "import importlib.metadata, importlib.util\n"
        "importlib.metadata.version('polars')\n"  # a version look-up, no import
        "importlib.util.find_spec('llama_cpp')\n"  # another distribution: nothing of analysis runs
        "expr.list.eval(x)\n"  # a polars method, not the builtin
        "m = importlib.import_module(name)\n"
        "exec(code)\n"
        "importlib.util.find_spec('analysis.pipeline')\n"
    )
    found = dynamic_imports(source, "analysis.x", "analysis")
    assert [(c.line, c.call) for c in found] == [(5, "import_module"), (6, "exec"), (7, "find_spec")]


def test_cycle_search_finds_every_cycle_and_names_one_path() -> None:
    """Hand graph: a -> b -> c -> a and c -> d <-> e; f alone. Two cycles {a, b, c} and {d, e};
    the shortest path back to a is a -> b -> c -> a (derived by hand)."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    components = strongly_connected(edges)
    assert components == [["a", "b", "c"], ["d", "e"]]
    assert one_cycle(edges, components[0]) == ["a", "b", "c", "a"]
    assert one_cycle(edges, components[1]) == ["d", "e", "d"]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
