"""The committed outputs (results.json, tables/, figures/, report/) are what the code computes now.

Like a docs-that-cannot-go-stale check: `generate.py --check` regenerates the shipped evidence's
outputs into a temporary directory and compares them byte for byte with the committed ones (the
git commit fields of results.json excepted). A code or evidence change without
`python generate.py` fails here. Byte identity is promised only under the library versions the
outputs were generated with (recorded in results.json); under others the test is skipped with
the command that refreshes the outputs.
"""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from analysis import pipeline as build
from analysis.cli import pointers_of, shipped_evidence
from analysis.params import DEFAULT_PARAMS
from support.paths import REPO


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return None


def test_committed_outputs_are_current() -> None:
    recorded = json.loads((REPO / "results.json").read_text(encoding="utf-8"))["provenance"]["libraries"]
    differing = {name: (version, _installed(name)) for name, version in recorded.items()
                 if _installed(name) != version}
    if differing:
        pytest.skip(f"outputs were generated under other library versions {differing} "
                    "(recorded, installed); refresh them with `python generate.py`")
    evidence = shipped_evidence()  # as `python generate.py --check` runs it: the shipped evidence alone
    stale = build.check(evidence, REPO, DEFAULT_PARAMS, pointers=pointers_of(evidence))
    assert stale == [], f"committed outputs differ from a rebuild; run `python generate.py`: {stale}"
