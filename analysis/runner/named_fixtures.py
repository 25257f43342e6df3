"""The runner's ``--fixture`` argument: a named fixture of analysis/runner/fixture_files or a fixture JSON path.

Shared by the runner's command line, its preflight and the preregistration plan (which pins the
fixture's digest), so none of them imports another's command-line module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.locations import package_path

FIXTURE_DIR = package_path("runner", "fixture_files")
"""Where the committed fixture set lives, shipped as package data (written by
analysis.runner.fixture.write_fixture_set)."""
FIXTURES = {"small": "s5-small", "default": "s5-150k", "small-s1": "s1-small", "default-s1": "s1-150k"}
"""Fixture names accepted by --fixture -> file stem in FIXTURE_DIR."""


class FixtureArgError(RuntimeError):
    """--fixture names neither a known fixture nor an existing file; the message says the fix."""


def load_fixture_arg(name: str) -> Any:
    """The fixture named small/default/... (committed file if present, else rebuilt) or a JSON path."""
    from analysis.runner.fixture import DEFAULT_SPECS, build_fixture, load_fixture

    if name in FIXTURES:
        stem = FIXTURES[name]
        path = FIXTURE_DIR / f"{stem}.json"
        if path.exists():
            return load_fixture(path)
        return build_fixture(next(s for s in DEFAULT_SPECS if s.name == stem))
    path = Path(name)
    if not path.exists():
        raise FixtureArgError(f"--fixture {name!r} is neither {'/'.join(FIXTURES)} nor an existing fixture JSON file")
    return load_fixture(path)
