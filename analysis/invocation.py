"""How the user runs the package's commands, so that messages name what they can type.

The analysis command line is ``carriers`` when installed (a wheel, or a console script on PATH) and
``python generate.py`` in a source checkout; the runner's is ``carriers-runner`` or
``python -m analysis.runner``. Each parser's ``prog`` is the name it was invoked by (``sys.argv[0]``).

The docs a message cites ship with the package: the checkout's docs/ (its ``*.md`` pages and the
truth files of docs/truth/), which setup.py copies into a built wheel as ``analysis/docs``. A message
cites one as the command that prints it (:func:`doc_command`: ``carriers docs preregistration``), which
a wheel user has; :func:`shipped_docs` finds them in either install.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from analysis.locations import checkout_root, package_path
from analysis.safeio import read_text

DOCS_IN_PACKAGE = ("docs",)
"""Where a built wheel carries the docs (setup.py copies docs/*.md and docs/truth/*.toml there)."""

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


class DocNotFoundError(LookupError):
    """A doc name :func:`doc_path` does not know; the message lists the names it does."""


def docs_dir() -> Path:
    """The docs folder: the checkout's docs/ in a source checkout, else the copy the wheel ships."""
    root = checkout_root()
    if root is not None and (root / "docs").is_dir():
        return root / "docs"
    return package_path(*DOCS_IN_PACKAGE)


def doc_name(path: Path) -> str:
    """The name ``carriers docs`` knows a shipped file by: ``preregistration`` for PREREGISTRATION.md,
    ``truth/clear-effect`` for truth/clear-effect.toml."""
    return ("truth/" if path.parent.name == "truth" else "") + path.stem.lower()


def shipped_docs() -> dict[str, Path]:
    """Every shipped doc by :func:`doc_name`, sorted: the ``*.md`` pages, then the truth files."""
    where = docs_dir()
    found = [*sorted(where.glob("*.md")), *sorted(where.glob("truth/*.toml"))]
    return {doc_name(p): p for p in found if p.is_file()}


def _key(name: str) -> str:
    return name.strip().lower().removesuffix(".md").removesuffix(".toml").replace("-", "_").removeprefix("docs/")


def doc_path(name: str) -> Path:
    """The shipped file named ``name`` (case, ``-``/``_``, a ``.md``/``.toml`` suffix and a ``docs/`` prefix
    do not matter: ``EVIDENCE_FORMAT.md`` is ``evidence_format``). :class:`DocNotFoundError` otherwise."""
    docs = shipped_docs()
    for known, path in docs.items():
        if _key(known) == _key(name):
            return path
    choices = ", ".join(docs) or f"none ({docs_dir()} holds no docs: reinstall the package)"
    raise DocNotFoundError(f"no doc named {name!r}; the docs are: {choices}")


def doc_command(name: str) -> str:
    """How a message cites the doc ``name``: the command that prints it, in backquotes
    (```carriers docs preregistration```, ```python generate.py docs ...``` in a checkout)."""
    return f"`{analysis_command()} docs {name}`"


def docs_text(name: str | None, *, path_only: bool = False) -> str:
    """What ``docs [NAME] [--path]`` prints: with no ``name``, each shipped doc's name and path, one a line;
    else the doc's text (its path with ``path_only``). :class:`DocNotFoundError` for an unknown name."""
    if name is None:
        docs = shipped_docs()
        width = max((len(known) for known in docs), default=0) + 2
        return "\n".join(f"{known:{width}}{path}" for known, path in docs.items())
    path = doc_path(name)
    return str(path) if path_only else read_text(path).rstrip("\n")


def add_docs_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``docs`` subcommand to ``sub`` (the analysis command line's subparsers); returns its parser."""
    docs: argparse.ArgumentParser = sub.add_parser(
        "docs", help="list the docs the package ships (the evidence format, the preregistration ...), or print one",
        description="The docs messages cite ship with the package (docs/ of the checkout; a wheel carries a copy): "
                    "with no NAME, list them with their paths; with NAME, print that doc.")
    docs.add_argument("name", nargs="?", metavar="NAME", help="a doc's name, e.g. evidence_format, preregistration")
    docs.add_argument("--path", action="store_true", help="print the doc's path instead of its text")
    return docs
