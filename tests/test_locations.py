"""Where the package finds its files (analysis.locations) and what an installed package's command line
does without the repository (issue 22). The wheel itself is tested end to end in test_wheel.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis import cli, locations
from analysis.runner import pinning
from support.paths import REPO as ROOT


def test_checkout_root_is_the_repository() -> None:
    """The tests run from the checkout: its pyproject.toml names the project."""
    assert locations.checkout_root() == ROOT
    assert locations.claims_file() == ROOT / "data" / "published" / "claims.yaml"


def test_checkout_root_is_none_outside_a_checkout(tmp_path: Path, monkeypatch) -> None:
    """A folder whose pyproject.toml names another project (or none) is not this repository."""
    fake = tmp_path / "site-packages" / "analysis"
    fake.mkdir(parents=True)
    monkeypatch.setattr(locations, "files", lambda _name: fake)
    locations.checkout_root.cache_clear()
    try:
        assert locations.checkout_root() is None
        (fake.parent / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')
        locations.checkout_root.cache_clear()
        assert locations.checkout_root() is None
        (fake.parent / "pyproject.toml").write_text('[project]\nname = "compaction-carriers"\n')
        locations.checkout_root.cache_clear()
        assert locations.checkout_root() == fake.parent
    finally:
        locations.checkout_root.cache_clear()


@pytest.mark.parametrize("parts", [
    ("report", "templates", "index.qmd.j2"), ("report", "templates", "crossref.lua"),
    ("report", "templates", "table_alignment.lua"),
    ("report", "templates", "offline.css"), ("style", "matplotlibrc"), ("viewer", "trajectories.html"),
    ("runner", "arms.toml"),
])
def test_package_path_finds_every_shipped_file(parts: tuple[str, ...]) -> None:
    """The files the code opens at run time lie in the package (test_wheel checks they are in the wheel)."""
    assert locations.package_path(*parts).is_file()


def test_package_path_refuses_a_zipped_package(monkeypatch) -> None:
    """Pandoc and matplotlib need files on disk: a zip import is refused with the fix."""
    monkeypatch.setattr(locations, "files", lambda _name: object())
    with pytest.raises(locations.PackageDataError, match="install it unpacked"):
        locations.package_path("style", "matplotlibrc")


@pytest.fixture
def installed(monkeypatch) -> None:
    """The command line as an installed wheel sees it: no repository, no shipped evidence."""
    for name in ("REPO_ROOT", "V1_EVIDENCE", "HANDMADE_EVIDENCE", "V2_LADDER_PILOT", "V2_PILOT", "DEFAULT_OUT"):
        monkeypatch.setattr(cli, name, None)


@pytest.mark.parametrize(("argv", "says"), [
    ([], "carries no shipped evidence"),
    (["--check"], "carries no shipped evidence"),
    (["verify"], "carries no shipped evidence"),
    (["plan", "--out", "PLAN"], "carries no shipped evidence"),
    (["--evidence", str(ROOT / "tests" / "fixtures" / "handmade")], "add --out OUT"),
])
def test_installed_package_names_what_to_add(installed, argv: list[str], says: str, tmp_path: Path,
                                             monkeypatch, capsys) -> None:
    """Installed, nothing defaults to the install directory: a usage error (exit 2) says what to name."""
    monkeypatch.chdir(tmp_path)
    argv = [str(tmp_path / "plan") if a == "PLAN" else a for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_installed_package_with_evidence_and_out_verifies(installed, tmp_path: Path, capsys) -> None:
    """Named explicitly, a package is verified as from a checkout."""
    assert cli.main(["verify", str(ROOT / "tests" / "fixtures" / "handmade")]) == 0
    assert capsys.readouterr().out.startswith("OK ")


def test_git_commit_of_an_installed_package_is_none(monkeypatch) -> None:
    """Installed, the runner records no commit, never that of a repository the venv happens to lie in."""
    monkeypatch.setattr(pinning, "checkout_root", lambda: None)
    assert pinning.git_commit() == {"commit": None, "dirty": None}
    if (ROOT / ".git").exists():  # from the checkout: its HEAD
        monkeypatch.setattr(pinning, "checkout_root", lambda: ROOT)
        assert len(pinning.git_commit()["commit"] or "") == 40
