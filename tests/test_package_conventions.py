"""The conventions of a Python research package (issue 22): one version, a licence, a citation."""
from __future__ import annotations

import tomllib

import yaml

import analysis
from support.paths import REPO


def test_version_has_one_source() -> None:
    """pyproject reads the version from analysis.__version__; CITATION.cff and CHANGELOG repeat it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    dynamic = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["dynamic"]
    assert dynamic["version"] == {"attr": "analysis.version.__version__"}
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["version"] == analysis.__version__
    assert f"## {analysis.__version__} " in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def test_licence_is_declared_and_shipped() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))["license"] == "MIT"


def test_citation_cites_the_package_and_the_paper() -> None:
    """CFF 1.2.0 required keys, and the paper (title as printed in it) among the references."""
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(citation) and citation["type"] == "software"
    paper = REPO.parent / "shared" / "paper" / "000_82e10b174eee9d48.txt"
    title = "Partitioned versus Undivided Compaction Carriers"
    if paper.is_file():
        assert paper.read_text(encoding="utf-8").startswith(title)
    assert [r["title"] for r in citation["references"]] == [title]
    from analysis.report.render import PAPER_TITLE  # the report's title (issue 34)

    assert title == PAPER_TITLE
    assert citation["references"][0]["authors"][0]["family-names"] == "Tikhonov"


def test_package_is_typed() -> None:
    assert (REPO / "analysis" / "py.typed").is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert "py.typed" in data["package-data"]["*"]
