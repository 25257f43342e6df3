"""The notebooks use the public API alone, take the evidence path as a parameter, are stored without outputs,
and execute top to bottom from a directory outside the checkout (nbclient; issue 33)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import analysis
from support.paths import REPO as ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
DEFAULT_EVIDENCE = {"fact_survival.ipynb": ROOT / "data" / "v2" / "pilot"}
"""The package each notebook runs on in the tests (default data/v1)."""


def _code(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def test_the_notebooks_exist() -> None:
    assert {p.name for p in NOTEBOOKS} >= {"primary_result.ipynb", "fill_exploration.ipynb",
                                           "headings_exploration.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_uses_the_public_api_only(path: Path) -> None:
    """``import analysis`` and names of ``analysis.__all__`` only: no internals, no walk to a pyproject.toml
    (so the notebook runs from a wheel install), no functions of its own."""
    source = _code(path)
    assert "import analysis" in source
    assert "from analysis" not in source and "import analysis." not in source, path.name
    used = set(re.findall(r"\banalysis\.([A-Za-z_]\w*)", source))
    assert used and used <= set(analysis.__all__), f"{path.name}: not public: {sorted(used - set(analysis.__all__))}"
    assert "pyproject.toml" not in source and "def " not in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_evidence_is_a_parameter(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].source.startswith("EVIDENCE = "), path.name
    namespace: dict[str, object] = {}
    exec(tagged[0].source, namespace)  # one assignment: the default, relative to notebooks/ (Jupyter's cwd)
    assert (path.parent / str(namespace["EVIDENCE"]) / "provenance.lock").is_file(), path.name


def test_readme_names_the_extra_the_notebooks_need() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert 'compaction-carriers[notebooks]' in readme and "parameters" in readme


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executes_top_to_bottom_outside_the_checkout(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    evidence = DEFAULT_EVIDENCE.get(path.name, ROOT / "data" / "v1")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = f"EVIDENCE = {str(evidence)!r}"
    # the kernel imports this checkout's package (as an editable install of it would), from another directory
    path_entries = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path_entries)}
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert any(o.get("data", {}).get("image/png") for c in nb.cells if c.cell_type == "code"
               for o in c.outputs), "the figure cell should display a figure"
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory
