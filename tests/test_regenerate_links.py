"""Issue 31, finding 9: ``regenerate`` writes only inside the checkout, with the build's output-directory
safety: a symbolic link at (or above) tests/golden/tables or docs/ is refused, nothing is written through it."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis import cli


@pytest.mark.parametrize("link", [("tests", "golden", "tables"), ("tests", "golden"), ("tests",)])
def test_golden_refuses_a_symlinked_target(tmp_path: Path, link: tuple[str, ...]) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    where = repo.joinpath(*link)
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(cli.CliError, match="symbolic link"):
        cli.regenerate(repo, ["golden"])
    assert list(elsewhere.rglob("*")) == []


def test_docs_refuses_a_symlinked_docs_directory(tmp_path: Path) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (elsewhere / "RESULTS_KEYS.md").write_text("theirs\n", encoding="utf-8")
    (repo / "docs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(cli.CliError, match="symbolic link"):
        cli.regenerate(repo, ["docs"])
    assert (elsewhere / "RESULTS_KEYS.md").read_text(encoding="utf-8") == "theirs\n"


def test_the_command_line_says_it_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / "tests" / "golden").mkdir(parents=True)
    elsewhere.mkdir()
    (repo / "tests" / "golden" / "tables").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.setattr(cli, "REPO_ROOT", repo)
    assert cli.main(["regenerate", "--only", "golden"]) == 1
    err = capsys.readouterr().err
    assert "symbolic link" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []
