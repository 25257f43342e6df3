"""The committed outputs (results.json, tables/, figures/, report/) are what the code computes now.

Like a docs-that-cannot-go-stale check: `generate.py --check` regenerates the shipped evidence's
outputs into a temporary directory and compares them byte for byte with the committed ones (the
git commit fields of results.json excepted). A code or evidence change without
`python generate.py` fails here.
"""

from __future__ import annotations

from pathlib import Path

from analysis import build
from analysis.cli import shipped_evidence
from analysis.params import DEFAULT_PARAMS

REPO = Path(__file__).resolve().parents[1]


def test_committed_outputs_are_current() -> None:
    stale = build.check(shipped_evidence(), REPO, DEFAULT_PARAMS)
    assert stale == [], f"committed outputs differ from a rebuild; run `python generate.py`: {stale}"
