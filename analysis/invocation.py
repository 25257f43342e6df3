"""How the user runs the package's commands, so that messages name what they can type.

The analysis command line is ``carriers`` when installed (a wheel, or a console script on PATH) and
``python generate.py`` in a source checkout; the runner's is ``carriers-runner`` or
``python -m analysis.runner``. Each parser's ``prog`` is the name it was invoked by (``sys.argv[0]``),
and the docs a message cites are pages under :data:`DOCS_URL`, the Documentation URL pyproject.toml
declares (a wheel carries no docs/ folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

from analysis.locations import checkout_root

SOURCE_URL = "https://github.com/compaction-carriers/compaction-carriers"
"""The repository (pyproject.toml ``[project.urls] Source``; tests/test_cli_invocation.py keeps them equal)."""
DOCS_URL = f"{SOURCE_URL}/blob/main/docs"
"""The docs folder (pyproject.toml ``[project.urls] Documentation``)."""

CONSOLE_NAMES = ("carriers", "carriers-runner")
"""The console scripts pyproject.toml installs."""


def _arg0(argv0: str | None) -> str:
    name = Path(argv0 if argv0 is not None else (sys.argv[0] if sys.argv else "")).name
    return name[:-4] if name.lower().endswith(".exe") else name


def invoked_as(module: str, default: str, argv0: str | None = None) -> str:
    """The command as the user typed it: a console script's name (``carriers``), ``generate.py``, or
    ``python -m MODULE`` when run as a module; ``default`` when it cannot tell (a test calling ``main``).

    ``argv0``: the program path to read (default ``sys.argv[0]``).
    """
    name = _arg0(argv0)
    if name in (*CONSOLE_NAMES, "generate.py"):
        return name
    if name == "__main__.py":
        return f"python -m {module}"
    return default


def analysis_command() -> str:
    """The analysis command line a user of this install has: ``carriers`` (installed, or run as one of the
    console scripts), else ``python generate.py`` (a source checkout)."""
    if _arg0(None) in CONSOLE_NAMES or checkout_root() is None:
        return "carriers"
    return "python generate.py"


def runner_command() -> str:
    """The runner's command line for this install: ``carriers-runner`` or ``python -m analysis.runner``."""
    return "carriers-runner" if analysis_command() == "carriers" else "python -m analysis.runner"


def docs_url(page: str) -> str:
    """The URL of a page of docs/ (``page``: a file name such as ``PREREGISTRATION.md``)."""
    return f"{DOCS_URL}/{page}"
