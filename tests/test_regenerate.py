"""``python generate.py regenerate`` (analysis.cli.regenerate): the one command that rewrites what is
generated after a statistic is added (docs/ADDING_A_STATISTIC.md). Run on temporary copies or dry:
the repository's own generated files are never rewritten here."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import cli
from analysis.figures.registry import block_readers
from analysis.params import DEFAULT_PARAMS
from analysis.results.registry import DOCS_PATH, INDEX_BEGIN, INDEX_END, RESULTS_BLOCKS, with_docs_index
from analysis.tables.golden import golden_texts
from report_support import ROOT, handmade


def _stale_docs_copy(repo: Path) -> Path:
    """The repository's docs/RESULTS_KEYS.md copied under ``repo`` with an empty generated index."""
    text = (ROOT / DOCS_PATH).read_text(encoding="utf-8")
    head, _, rest = text.partition(INDEX_BEGIN)
    _, _, tail = rest.partition(INDEX_END)
    doc = repo / DOCS_PATH
    doc.parent.mkdir(parents=True)
    doc.write_text(f"{head}{INDEX_BEGIN}\n{INDEX_END}{tail}", encoding="utf-8")
    return doc


def test_regenerate_is_a_command_and_its_dry_run_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    before = (ROOT / DOCS_PATH).read_bytes()
    assert cli.main(["regenerate", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert [line.split(":")[0] for line in err.splitlines()] == [f"regenerate {s}" for s in cli.REGENERATE_STEPS]
    assert (ROOT / DOCS_PATH).read_bytes() == before


def test_regenerate_writes_the_docs_index(tmp_path: Path) -> None:
    doc = _stale_docs_copy(tmp_path)
    assert cli.regenerate(tmp_path, ["docs"]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text == with_docs_index(text, block_readers())  # what test_results_registry checks of the repository's copy
    assert all(f"| `{b.key}` |" in text for b in RESULTS_BLOCKS)


def test_regenerate_writes_the_golden_tables_the_golden_test_compares(tmp_path: Path) -> None:
    assert cli.regenerate(tmp_path, ["golden"]) == 0
    directory = tmp_path.joinpath(*cli.GOLDEN_TABLES)
    written = {p.name: p.read_text(encoding="utf-8") for p in directory.iterdir()}
    assert written == golden_texts(*handmade(), DEFAULT_PARAMS)
    assert set(written) == {p.name for p in ROOT.joinpath(*cli.GOLDEN_TABLES).iterdir()}


def test_regenerate_builds_the_shipped_evidence_into_the_checkout(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(cli, "run_main_job", lambda evidence, out, **kw: calls.append((evidence, out, kw)) or 0)
    assert cli.regenerate(tmp_path, ["build", "docs"], dry_run=True) == 0 and calls == []
    _stale_docs_copy(tmp_path)
    assert cli.regenerate(tmp_path, ["build", "docs"]) == 0
    evidence = cli.shipped_evidence()
    assert calls == [(evidence, tmp_path, {"progress": cli._progress})]   # data/v1 alone (issue 30)


def test_regenerate_refuses_an_unknown_step(tmp_path: Path) -> None:
    with pytest.raises(cli.UsageError, match="choose from docs, build, golden"):
        cli.regenerate(tmp_path, ["tables"])
