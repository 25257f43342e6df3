"""Issue 31, findings 1 and 2: verified bytes are the only bytes.

Every reader of a package file (study.toml's [runner] and [preregistration] tables, findings.csv, a
locked fixture JSON) parses the bytes ``verify_files`` hashed, kept in ``EvidencePackage.files``; a
file swapped on disk after (or while) the package was verified is never read. The build keys its
stages on those same bytes, under OUT's lock, so a package swapped while a build waits for the lock is
the one keyed and the one built (never B's report under A's stamp).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from analysis import outdir
from analysis.audit.claims_audit import _package_findings
from analysis.evidence import files, load_package, write_lock
from analysis.evidence.describe import runner_table
from analysis.evidence.folds import FixtureLibrary, graded_facts
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build, read_stamp, stage_keys
from evidence_support import HANDMADE, REPO, copy_handmade, edit

LADDER = REPO / "data" / "v2" / "ladder-pilot"
V1 = REPO / "data" / "v1"


def _scribble(root: Path) -> None:
    """Replace every file of a package on disk by other bytes (the names stay)."""
    for path in root.iterdir():
        if path.name == "study.toml":
            path.write_bytes(path.read_bytes().replace(b"127.0.0.1", b"evil.example"))
        else:
            path.write_bytes(b'{"graded": [], "id,note": "swapped"}\n')


def test_readers_parse_the_verified_bytes_not_the_files_on_disk(tmp_path: Path) -> None:
    pkg_dir = shutil.copytree(LADDER, tmp_path / "ladder")
    package = load_package(pkg_dir)
    runner = runner_table(package)
    facts, why = graded_facts(package, search=(), library=FixtureLibrary({}))  # the package's locked fixtures
    assert runner is not None and "127.0.0.1" in str(runner)
    assert facts.height > 0 and why == {}
    _scribble(pkg_dir)  # every file swapped after verification
    assert runner_table(package) == runner
    again, why_again = graded_facts(package, search=(), library=FixtureLibrary({}))
    assert again.equals(facts) and why_again == why


def test_findings_csv_is_parsed_from_the_verified_bytes(tmp_path: Path) -> None:
    pkg_dir = shutil.copytree(V1, tmp_path / "v1")
    package = load_package(pkg_dir)
    found = _package_findings(package)
    assert found
    (pkg_dir / "findings.csv").write_bytes(b"id,note\nswapped,swapped\n")
    assert _package_findings(package) == found


def test_study_toml_swapped_while_a_large_file_is_hashed_is_never_read(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # the attack: the lock names a large file that sorts after study.toml; while it is hashed,
    # study.toml is swapped. The verified study.toml is the one every reader sees.
    pkg_dir = shutil.copytree(LADDER, tmp_path / "ladder")
    (pkg_dir / "zz-large.bin").write_bytes(b"\0" * (3 << 20))
    write_lock(pkg_dir, ["zz-large.bin", "answers.jsonl", "arms.json", "run_manifest.json",
                         *(p.name for p in pkg_dir.glob("ladder-*.json"))])
    real = files.iter_evidence_file

    def swapping(package_dir: str | Path, name: str, *args: object, **kwargs: object) -> Iterator[bytes]:
        if name == "zz-large.bin":
            study = Path(package_dir) / "study.toml"
            study.write_bytes(study.read_bytes().replace(b"127.0.0.1", b"evil.example"))
        return real(package_dir, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "iter_evidence_file", swapping)
    package = load_package(pkg_dir)
    assert b"evil.example" in (pkg_dir / "study.toml").read_bytes()  # the swap happened after verification
    assert "evil.example" not in str(runner_table(package)) and "127.0.0.1" in str(runner_table(package))
    assert "zz-large.bin" in package.files  # small enough to be kept: hashed and kept from one read


def test_a_large_extra_file_is_hashed_in_chunks_and_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.evidence import provenance

    root = copy_handmade(tmp_path / "p")
    (root / "big.bin").write_bytes(b"x" * 5000)
    write_lock(root, ["big.bin"])
    monkeypatch.setattr(provenance, "KEEP_LIMIT", 4096)
    package = load_package(root)
    assert package.verified_bytes("big.bin") is None and package.verified_bytes("study.toml") is not None
    assert package.digests["big.bin"] == files.sha256_evidence_file(root, "big.bin")


def _hold_lock(out: Path) -> int:
    fd = os.open(out / outdir.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_package_swapped_while_the_build_waits_for_the_lock_is_the_one_keyed(
        tmp_path: Path, prebuilt: Prebuilt) -> None:
    # OUT holds the build of B (the hand-made package). A build of A starts, waits for OUT's lock, and
    # meanwhile the evidence folder becomes B. The build must key and build what it then verifies (B):
    # OUT's stamp keys are B's, never A's over B's report.
    out = prebuilt.copy(HANDMADE, tmp_path / "out")
    evidence = copy_handmade(tmp_path / "evidence")
    edit(evidence, "study.toml", 'name = "', 'name = "package A: ')  # package A
    key_a = stage_keys(evidence, DEFAULT_PARAMS)
    key_b = stage_keys(HANDMADE, DEFAULT_PARAMS)
    assert key_a is not None and key_b is not None and key_a["verify"] != key_b["verify"]
    waiting = threading.Event()
    lines: list[str] = []
    errors: list[BaseException] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("waiting for another build"):
            waiting.set()

    def run() -> None:
        try:
            build(evidence, out, DEFAULT_PARAMS, progress=progress, wait=60)
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    fd = _hold_lock(out)
    worker = threading.Thread(target=run)
    try:
        worker.start()
        assert waiting.wait(60), lines
        shutil.rmtree(evidence)
        copy_handmade(evidence)  # the folder is package B now
    finally:
        os.close(fd)
        worker.join(120)
    assert not errors, errors
    stamp = read_stamp(out)["stages"]
    assert {s: e["key"] for s, e in stamp.items()} == key_b  # B's report under B's keys
    assert all(line.endswith("unchanged, skipped") for line in lines if line.startswith("["))


@pytest.mark.slow  # one build with a companion (about 6 s)
def test_a_build_reports_the_bytes_it_verified_when_the_files_change_after(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # the hook between verification and parsing: every file of the companion is swapped right after it was
    # verified; the build parses the verified bytes, so results.json carries the pinned base_url, not the swap
    import json

    from analysis.evidence import provenance

    companion = shutil.copytree(LADDER, tmp_path / "ladder")
    real = provenance.verify_files

    def verify_then_swap(root: str | Path, *args: object, **kwargs: object) -> object:
        verified = real(root, *args, **kwargs)  # type: ignore[arg-type]
        if Path(root) == companion:
            _scribble(companion)
        return verified

    for module in ("analysis.evidence", "analysis.evidence.package", "analysis.evidence.provenance"):
        monkeypatch.setattr(f"{module}.verify_files", verify_then_swap)
    build(HANDMADE, tmp_path / "out", DEFAULT_PARAMS, progress=None, companions=[companion])
    runner = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["v2_pilot"]["runner"]
    assert "127.0.0.1" in json.dumps(runner) and "evil.example" not in json.dumps(runner)
