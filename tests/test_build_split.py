"""The build package after issue 21: named modules, lifelines in the stage key and in provenance, and
``--check --ignore-code`` telling a refactor that changes no output from one that changes outputs.

Oracles: the library versions come from importlib.metadata (what pip installed); the two output
trees of the --check tests are built by the real pipeline, and the "refactor" is a different code
digest (analysis.sources.source_digest replaced) with the outputs' code untouched.
"""

from __future__ import annotations

import ast
import json
import shutil
from importlib import metadata
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from analysis import pipeline as build_pkg
from analysis import sources
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build, check, diff_outputs
from analysis.pipeline.check import VOLATILE_RESULT_KEYS, _comparable, code_digests
from evidence_support import HANDMADE, REPO


def test_the_package_init_only_re_exports() -> None:
    tree = ast.parse((REPO / "analysis" / "pipeline" / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    for name in ("build", "check", "diff_outputs", "managed_files", "run_stage", "stage_keys", "STAGES",
                 "STAMP_NAME", "BuildError", "BuildSummary"):
        assert hasattr(build_pkg, name), name
    assert not hasattr(build_pkg, "relative_to_cwd")  # dead: referenced nowhere


def test_lifelines_is_in_the_results_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "lifelines" in build_pkg.STAGE_LIBS["results"]
    before = build_pkg.stage_keys(HANDMADE, DEFAULT_PARAMS)
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.0-upgraded" if name == "lifelines" else real(name))
    after = build_pkg.stage_keys(HANDMADE, DEFAULT_PARAMS)
    assert before is not None and after is not None
    assert before["verify"] == after["verify"] and before["results"] != after["results"]  # an upgrade reruns it


def test_lifelines_is_in_the_provenance_libraries() -> None:
    from analysis.results.core import provenance

    assert provenance(DEFAULT_PARAMS)["libraries"]["lifelines"] == metadata.version("lifelines")


@pytest.fixture(scope="module")
def two_codes(tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> tuple[Path, Path]:
    """The hand-made package built by the code as it is, and by a 'refactor': another code digest."""
    base = tmp_path_factory.mktemp("ignore-code")
    now, refactored = base / "now", base / "refactored"
    prebuilt.copy(HANDMADE, now)  # build(HANDMADE, now, DEFAULT_PARAMS, progress=None), shared by the session
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sources, "source_digest", lambda _stage: "f" * 64)
        build(HANDMADE, refactored, DEFAULT_PARAMS, progress=None)
    return now, refactored


def test_a_refactor_that_changes_no_output_passes_only_with_ignore_code(two_codes: tuple[Path, Path]) -> None:
    now, refactored = two_codes
    assert VOLATILE_RESULT_KEYS == (("provenance", "code_sha256"),)
    assert diff_outputs(refactored, now) == ["results.json"]  # the plain check sees the new code digest
    assert diff_outputs(refactored, now, ignore_code=True) == []


def test_a_change_of_output_fails_with_ignore_code(two_codes: tuple[Path, Path], tmp_path: Path) -> None:
    now, refactored = two_codes
    changed = tmp_path / "changed"
    shutil.copytree(refactored, changed)
    doc = json.loads((changed / "results.json").read_text(encoding="utf-8"))
    doc["panel"]["mean"] = 0.123  # an estimate moved
    (changed / "results.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    table = changed / "tables" / "t3_panel.md"
    table.write_text(table.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert diff_outputs(changed, now, ignore_code=True) == ["results.json", "tables/t3_panel.md"]


def test_what_derives_from_the_code_digest_is_masked(tmp_path: Path) -> None:
    """A preregistration's code-digest deviation prints the digest in the report: masked with --ignore-code."""
    old, new = "a" * 64, "b" * 64
    doc = {"provenance": {"code_sha256": "c" * 64},
           "preregistration": {"deviations": [{"what": "analysis code digest", "planned": "d" * 64,
                                               "actual": new, "note": ""}]}}
    (tmp_path / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    assert code_digests(tmp_path) == {"c" * 64, "d" * 64, new}
    line = "| analysis code digest | {} | {} |"
    assert (_comparable("report/index.qmd", line.format("d" * 64, new).encode(), code_digests(tmp_path))
            == _comparable("report/index.qmd", line.format("d" * 64, old).encode(), frozenset({old, "d" * 64})))
    assert _comparable("report/index.qmd", new.encode(), None) == new.encode()  # a plain check masks nothing


@pytest.mark.slow
def test_check_with_ignore_code_end_to_end(two_codes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _now, refactored = two_codes
    assert check(HANDMADE, refactored, DEFAULT_PARAMS) == ["results.json"]
    assert check(HANDMADE, refactored, DEFAULT_PARAMS, ignore_code=True) == []


def test_ignore_code_without_check_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from analysis.cli import main

    assert main(["--ignore-code", "--out", "/nonexistent-n21"]) == 2
    assert "--ignore-code only changes what --check compares" in capsys.readouterr().err
