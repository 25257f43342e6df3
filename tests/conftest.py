"""Shared pytest options and session-wide setup (keep minimal).

``prebuilt`` (issue 22, the suite's time): many modules build the same package with the same
parameters into their own OUT (the hand-made package, the v2 pilot, data/v1, each ~10-25 s, mostly
figures). A build's outputs do not depend on where OUT lies (``diff -r`` of two builds is empty), so
the session builds each (evidence, companions) once and every user gets its own *copy*: a module
may change, rebuild or delete its copy without touching anyone else's, and the assertions stay as
they were. Only setup is shared.

The paths every module shares (``REPO``, ``HANDMADE``) are defined once in tests/support/paths.py; the
prebuilt trees are shared by the pytest-xdist workers of a run (tests/prebuilt_support.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

LONG_MARKS = ("slow", "embedded", "browser")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules holding a long test (marked slow, embedded or browser) run first, each module's tests in
    their order: pytest-xdist hands whole files to its workers in this order (``--dist loadfile
    --no-loadscope-reorder`` in pyproject.toml), so the longest files start early and the suite does not
    end on one worker running a long file while the other waits (issue 32, the suite's time)."""
    long_files = {item.path for item in items if any(item.get_closest_marker(m) for m in LONG_MARKS)}
    items.sort(key=lambda item: item.path not in long_files)  # stable: the order inside each group stays


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ instead of comparing to them")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with --update-golden (refresh golden files on purpose)."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def prebuilt(tmp_path_factory: pytest.TempPathFactory) -> Prebuilt:
    """Builds shared by the whole session, handed out as private copies (see Prebuilt). Under pytest-xdist the
    workers of one run share one directory (the run's base temp, one level above each worker's), so each tree
    is built once per run, not once per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return Prebuilt(tmp_path_factory.getbasetemp().parent / "prebuilt-shared")
    return Prebuilt(tmp_path_factory.mktemp("prebuilt"))


@pytest.fixture(scope="session")
def scripted_scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``write_scenario(root)`` of tests/survival_support.py, run once per session: the scripted-server package
    whose values are lost at known folds. READ-ONLY: a test that changes a package copies it first."""
    from survival_support import write_scenario

    return write_scenario(tmp_path_factory.mktemp("scripted") / "pkg")
