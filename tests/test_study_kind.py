"""Where a package comes from: its study.toml says what it is (``[study] kind``), and a report's
companions are named explicitly (``--companion``), never found by path (issue 16)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis import cli
from analysis.cli import V1_EVIDENCE, V2_LADDER_PILOT, V2_PILOT, main
from analysis.evidence import LOCK_NAME, StudyError, load_package, write_lock
from analysis.evidence.describe import evidence_kind
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from analysis.pipeline.inputs import CompanionError
from support.paths import HANDMADE


def _with_kind(src: Path, dst: Path, line: str | None) -> Path:
    """A copy of ``src`` whose [study] kind line is ``line`` (None: no kind), re-locked."""
    shutil.copytree(src, dst)
    study = dst / "study.toml"
    text = study.read_text(encoding="utf-8").replace('kind = "fixture"\n', "" if line is None else line + "\n", 1)
    study.write_text(text, encoding="utf-8")
    write_lock(dst)
    return dst


def test_the_shipped_packages_declare_their_kind() -> None:
    assert evidence_kind(load_package(HANDMADE)) == "handmade"
    if (V1_EVIDENCE / LOCK_NAME).is_file():
        assert load_package(V1_EVIDENCE).study.kind == "reconstruction"
    if (V2_PILOT / LOCK_NAME).is_file():
        assert evidence_kind(load_package(V2_PILOT)) == "v2-pilot"


def test_the_kind_follows_the_file_not_the_folder(tmp_path: Path) -> None:
    # A copy of the hand-made package elsewhere is still the fixture; without the key it is a plain study.
    assert evidence_kind(load_package(_with_kind(HANDMADE, tmp_path / "a", 'kind = "fixture"'))) == "handmade"
    plain = load_package(_with_kind(HANDMADE, tmp_path / "b", None))
    assert plain.study.kind is None and evidence_kind(plain) == "other"
    assert evidence_kind(load_package(_with_kind(HANDMADE, tmp_path / "c", 'kind = "reconstruction"'))) == "v1"


def test_an_unknown_kind_is_a_study_error_with_its_line(tmp_path: Path) -> None:
    bad = _with_kind(HANDMADE, tmp_path / "bad", 'kind = "v1"')
    with pytest.raises(StudyError, match=r"study.toml:7.*kind.*must be one of 'reconstruction', 'pilot', 'fixture'"):
        load_package(bad)


def test_a_companion_that_is_not_a_pilot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CompanionError, match='add kind = "pilot"'):
        build(HANDMADE, tmp_path / "o", DEFAULT_PARAMS, progress=None, companions=[HANDMADE])
    assert not (tmp_path / "o" / "results.json").exists()


def test_the_default_invocation_reports_the_shipped_evidence_alone(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30, option (b): `python generate.py` reports data/v1 alone; a pilot only when named."""
    calls = []
    monkeypatch.setattr(cli, "run_main_job", lambda evidence, out, **kw: calls.append((evidence, kw)) or 0)
    assert main([]) == 0
    ((evidence, kw),) = calls
    assert evidence == cli.shipped_evidence() and list(kw["companions"]) == []
    # naming the ladder pilot is a run of your own: without --out it would replace the committed outputs
    if (V2_LADDER_PILOT / LOCK_NAME).is_file():
        assert main(["--companion", str(V2_LADDER_PILOT)]) == 2
        assert "add --out OUT" in capsys.readouterr().err
        assert main(["--companion", str(V2_LADDER_PILOT), "--out", "x"]) == 0
        assert list(calls[-1][1]["companions"]) == [V2_LADDER_PILOT]


def test_companion_belongs_to_the_main_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--companion", str(HANDMADE), "verify", str(HANDMADE)]) == 2
    assert "--companion" in capsys.readouterr().err
