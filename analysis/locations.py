"""Where the package finds its own files and, when it runs from a checkout, the repository's data.

Methods note: every file the code needs at run time (the report templates, the Pandoc filter and
page style, the matplotlib style, the trajectory viewer page, the runner's arms and fixtures, the
paper's claims file) ships inside the ``analysis`` package and is found with importlib.resources
(``package_path``), so an installed wheel works from any directory. The repository's data
(``data/v1``, ``data/v2``, ``tests/fixtures/handmade``) is not package data: it is found only when
the package runs from its source checkout (``checkout_root``: ``python generate.py``, an editable
install). An installed package therefore has no shipped evidence and no default OUT: its command
line asks for ``--evidence DIR`` and ``--out OUT`` (analysis.cli). Nothing here imports the rest
of the package but the I/O door (analysis.safeio).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from analysis.safeio import SafeIOError, read_toml

PROJECT_NAME = "compaction-carriers"
"""The distribution name a checkout's pyproject.toml declares."""
CLAIMS_IN_CHECKOUT = ("data", "published", "claims.yaml")
"""The paper's claims file in the repository (the file a developer edits)."""
CLAIMS_IN_PACKAGE = ("audit", "claims.yaml")
"""Where a built wheel carries a copy of it (setup.py copies it there at build time)."""


class PackageDataError(RuntimeError):
    """A file the package ships cannot be opened as a file on disk; the message says the fix."""


def package_path(*parts: str) -> Path:
    """A file or folder shipped inside the ``analysis`` package, as a path on disk.

    Pandoc, matplotlib and the fixture loader need real paths, so a package imported from a zip
    archive is refused with the fix rather than failing later with a missing file.
    """
    root = files("analysis")
    if not isinstance(root, Path):
        raise PackageDataError(f"the analysis package is imported from {root!r}, not from a folder; "
                               "install it unpacked (python -m pip install compaction-carriers)")
    return root.joinpath(*parts)


@cache
def checkout_root() -> Path | None:
    """The repository root when the package runs from its source checkout, else None (a wheel).

    A checkout is the folder above the ``analysis`` package whose pyproject.toml names this
    project; an installed package lies in site-packages, where no such file is.
    """
    root = package_path().resolve().parent
    if not (root / "pyproject.toml").is_file():
        return None
    try:
        project = read_toml(root / "pyproject.toml").get("project")
    except (OSError, SafeIOError):
        return None
    return root if isinstance(project, dict) and project.get("name") == PROJECT_NAME else None


def claims_file() -> Path:
    """The paper's claims file: the repository's in a checkout, else the copy the wheel ships.

    When neither exists the packaged path is returned all the same: it is not a file, and the
    build then has no claims audit, as for any package without one.
    """
    root = checkout_root()
    if root is not None and root.joinpath(*CLAIMS_IN_CHECKOUT).is_file():
        return root.joinpath(*CLAIMS_IN_CHECKOUT)
    return package_path(*CLAIMS_IN_PACKAGE)
