"""What outputs say about a package: its display path, its kind and its runner pins.

Methods note: ``display_path`` names a package relative to the repository (or the working
directory), so outputs do not depend on where the build ran. ``evidence_kind`` says how a
package is reported, from what its study.toml declares (``[study] kind``), never from where it
lies. ``runner_table`` reads the ``[runner]`` table of a verified package's
study.toml, parsed from the verified bytes the package keeps (never read from the disk again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.locations import checkout_root
from analysis.safeio import loads_toml

REPO = checkout_root()
"""The repository checkout the package runs from (None when installed: paths are then named
relative to the working directory)."""


def display_path(path: Path) -> Path:
    """How outputs name ``path``: relative to the repository when inside it, else to the working
    directory when below it, else as given. Outputs then do not depend on where the build ran."""
    resolved = Path(path).resolve()
    for base in (*((REPO,) if REPO else ()), Path.cwd()):
        try:
            return resolved.relative_to(base)
        except ValueError:
            continue
    return Path(path)


REPORT_KINDS: dict[str | None, str] = {"reconstruction": "v1", "pilot": "v2-pilot", "fixture": "handmade",
                                       "simulation": "simulation", None: "other"}
"""``[study] kind`` (schema.STUDY_KINDS; None when absent) -> how the report presents the package."""


def evidence_kind(package: Any) -> str:
    """'v1', 'v2-pilot', 'handmade', 'simulation' or 'other': what study.toml says it is (``[study] kind``)."""
    return REPORT_KINDS[package.study.kind]


def runner_table(package: Any) -> dict[str, Any] | None:
    """The [runner] table of a verified package's study.toml (the runner's pins and request shape), or None.

    Parsed from the bytes load_package verified (``package.verified_bytes``): a file swapped on disk
    after verification is never read.
    """
    data = package.verified_bytes("study.toml")
    if data is None:
        return None
    try:
        doc = loads_toml(data, "study.toml")
    except ValueError:  # SafeIOError is a ValueError
        return None
    runner = doc.get("runner")
    if not isinstance(runner, dict) or not runner:
        return None
    return {str(k): v for k, v in sorted(runner.items()) if isinstance(v, dict)} or None
