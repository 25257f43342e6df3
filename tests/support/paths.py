"""The paths the tests share, defined once (issue 32): ``from support.paths import REPO, HANDMADE``.

``REPO`` is the checkout the tests run in (the directory holding generate.py); ``HANDMADE`` is the
hand-made oracle package, tests/fixtures/handmade (READ-ONLY: a test that changes it copies it first,
e.g. ``evidence_support.copy_handmade``).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HANDMADE = REPO / "tests" / "fixtures" / "handmade"
