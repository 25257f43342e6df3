"""The API reference (docs/api, quartodoc): every public name of analysis.__all__ has its page, generated from
its docstring; the pages render where Quarto is installed (issue 33)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import analysis
from support.paths import REPO as ROOT

CONFIG = ROOT / "docs" / "api" / "_quarto.yml"
PUBLIC = sorted(set(analysis.__all__) - {"__version__"})


def test_the_reference_lists_every_public_name_once() -> None:
    doc = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["quartodoc"]
    assert doc["package"] == "analysis"
    listed = [name for section in doc["sections"] for name in section["contents"]]
    assert sorted(listed) == PUBLIC and len(listed) == len(set(listed))


def test_quartodoc_writes_a_page_for_every_public_name(tmp_path: Path) -> None:
    pytest.importorskip("quartodoc", reason="the docs tool (pip install -e '.[test]' installs it)")
    site = tmp_path / "api"
    site.mkdir()
    shutil.copy2(CONFIG, site / "_quarto.yml")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "quartodoc", "build"], cwd=site, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    pages = {p.stem for p in (site / "reference").glob("*.qmd")} - {"index"}
    assert pages == set(PUBLIC)
    page = (site / "reference" / "paired_effect.qmd").read_text(encoding="utf-8")
    assert "## Examples" in page and "## References" in page and ">>> import analysis" in page
    if shutil.which("quarto") is None:
        return  # the pages render where Quarto is installed (not installable here)
    rendered = subprocess.run(["quarto", "render"], cwd=site, capture_output=True, text=True, timeout=600)
    assert rendered.returncode == 0, rendered.stderr[-3000:]  # pragma: no cover - needs Quarto
    assert {p.stem for p in (site / "_site" / "reference").glob("*.html")} >= set(PUBLIC)  # pragma: no cover
