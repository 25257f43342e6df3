"""The provenance lock is checked first, pins every byte, and names file + digests."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysis.evidence.loader as loader_mod
import analysis.evidence.study as study_mod
from analysis.evidence import (
    EvidenceError,
    LockFormatError,
    ProvenanceError,
    load_package,
    verify_files,
    write_lock,
)
from analysis.evidence import package as package_mod
from analysis.evidence.provenance import read_lock
from evidence_support import HANDMADE, PACKAGE_FILES, copy_handmade, edit, run_cli


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_handmade_digests_match_hashlib(tmp_path: Path) -> None:
    verified = verify_files(HANDMADE)
    for name in ("study.toml", "rows.csv", "checks.csv"):
        assert verified.digests[name] == sha((HANDMADE / name).read_bytes())
        assert verified.contents[name] == (HANDMADE / name).read_bytes()


def test_write_lock_reproduces_the_shipped_lock_bytes(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "provenance.lock").unlink()
    doc = write_lock(root, datapackage=False)  # the hand-made lock predates datapackage.json
    assert (root / "provenance.lock").read_bytes() == (HANDMADE / "provenance.lock").read_bytes()
    assert doc["algorithm"] == "sha256" and set(doc["files"]) == {"study.toml", "rows.csv", "checks.csv"}
    doc = write_lock(root)  # by default a package's lock also writes and pins datapackage.json
    assert set(doc["files"]) == {"study.toml", "rows.csv", "checks.csv", "datapackage.json"}


def test_write_lock_pins_extra_files(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "notes").mkdir()
    (root / "notes" / "README.md").write_text("hello\n")
    doc = write_lock(root, ["notes/README.md"])
    assert doc["files"]["notes/README.md"] == sha(b"hello\n")
    load_package(root)
    (root / "notes" / "README.md").write_text("hellO\n")
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    assert info.value.file == "notes/README.md"
    assert info.value.actual == sha(b"hellO\n")


def test_changed_byte_names_file_expected_and_actual(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "rows.csv", "a3-j,S5,acme/alpha-1,g1,3,j,1,true,,14,7,",
         "a3-j,S5,acme/alpha-1,g1,3,j,1,true,,14,8,", relock=False)
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    err = info.value
    assert (err.file, err.expected) == ("rows.csv", sha((HANDMADE / "rows.csv").read_bytes()))
    assert err.actual == sha((root / "rows.csv").read_bytes())
    assert err.expected in str(err) and err.actual in str(err)


def test_missing_locked_file(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "checks.csv").unlink()
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    assert (info.value.file, info.value.actual) == ("checks.csv", None)
    assert info.value.expected == sha((HANDMADE / "checks.csv").read_bytes())


def test_required_file_not_in_lock(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    lock = json.loads((root / "provenance.lock").read_text())
    del lock["files"]["checks.csv"]
    (root / "provenance.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    err = info.value
    assert (err.file, err.expected) == ("checks.csv", None)
    assert err.actual == sha((root / "checks.csv").read_bytes())
    assert err.problems[0].file == "provenance.lock" and err.problems[0].column == "files.checks.csv"


def test_missing_lock(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "provenance.lock").unlink()
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    assert info.value.file == "provenance.lock"


@pytest.mark.parametrize("text, line, column", [
    ("{not json", 1, "2"),
    ('{\n  "algorithm": "sha256",\n  "files": {\n', 4, "1"),
    ("", 1, "1"),
])
def test_lock_not_json(tmp_path: Path, text: str, line: int, column: str) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "provenance.lock").write_text(text)
    with pytest.raises(LockFormatError) as info:
        load_package(root)
    p = info.value.problems[0]
    assert (p.file, p.line, p.column) == ("provenance.lock", line, column)
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"provenance.lock:{line} [{column}]: not JSON" in proc.stderr


@pytest.mark.parametrize("bad", ["A" * 64, "a" * 63, "g" * 64, "a" * 65, 12])
def test_digest_not_hex(tmp_path: Path, bad) -> None:
    root = copy_handmade(tmp_path / "p")
    lock = json.loads((root / "provenance.lock").read_text())
    lock["files"]["rows.csv"] = bad
    (root / "provenance.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    with pytest.raises(LockFormatError) as info:
        load_package(root)
    err = info.value
    assert (err.file, err.expected) == ("rows.csv", str(bad))
    assert err.actual == sha((root / "rows.csv").read_bytes())
    assert err.problems[0].column == "files.rows.csv"
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "not 64 lowercase hex" in proc.stderr and err.actual in proc.stderr


@pytest.mark.parametrize("name", ["../rows.csv", "/etc/passwd", "a\\b.csv", "./rows.csv", "provenance.lock"])
def test_lock_names_outside_the_package_are_refused(tmp_path: Path, name: str) -> None:
    root = copy_handmade(tmp_path / "p")
    lock = json.loads((root / "provenance.lock").read_text())
    lock["files"][name] = "0" * 64
    (root / "provenance.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    with pytest.raises(LockFormatError) as info:
        load_package(root)
    assert info.value.problems[0].column == f"files.{name}"


def test_lock_must_be_canonical(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    lock = json.loads((root / "provenance.lock").read_text())
    (root / "provenance.lock").write_text(json.dumps(lock, indent=4) + "\n")
    with pytest.raises(LockFormatError, match="canonical"):
        load_package(root)


def test_lock_is_checked_before_anything_is_parsed(tmp_path: Path, monkeypatch) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "study.toml", "hand-made", "hand-mad3", relock=False)

    def boom(*args, **kwargs):
        raise AssertionError("parsed before the lock was verified")

    monkeypatch.setattr(package_mod, "parse_csv", boom)
    monkeypatch.setattr(package_mod, "parse_study", boom)
    monkeypatch.setattr(loader_mod.pl, "read_csv", boom)
    monkeypatch.setattr(study_mod.tomllib, "loads", boom)
    with pytest.raises(ProvenanceError):
        load_package(root)


def test_files_not_in_the_lock_are_never_read(tmp_path: Path, monkeypatch) -> None:
    root = copy_handmade(tmp_path / "p")
    (root / "extra.csv").write_bytes(b"\xff\xfe garbage, not even UTF-8")
    (root / "notes.toml").write_text("this = [is not toml")
    opened: list[str] = []
    real_read_bytes = Path.read_bytes
    real_open = Path.open

    def read_bytes(self: Path) -> bytes:
        opened.append(self.name)
        return real_read_bytes(self)

    def path_open(self: Path, *a, **k):
        opened.append(self.name)
        return real_open(self, *a, **k)

    real_os_open = os.open

    def os_open(path, *a, **k):  # analysis.evidence.files opens every evidence file this way
        opened.append(os.path.basename(path))
        return real_os_open(path, *a, **k)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "open", path_open)
    monkeypatch.setattr(os, "open", os_open)
    package = load_package(root)
    assert "extra.csv" not in opened and "notes.toml" not in opened
    assert set(opened) == set(PACKAGE_FILES)
    assert set(package.digests) == {"study.toml", "rows.csv", "checks.csv"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), name=st.sampled_from(PACKAGE_FILES))
def test_every_single_byte_change_is_detected(tmp_path: Path, data, name: str) -> None:
    """Property: change one byte anywhere in any file -> a named error, never a load."""
    original = (HANDMADE / name).read_bytes()
    pos = data.draw(st.integers(0, len(original) - 1), label="position")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != original[pos]), label="byte")
    root = copy_handmade(tmp_path / f"p{pos}-{new}-{name}")
    (root / name).write_bytes(original[:pos] + bytes([new]) + original[pos + 1:])
    with pytest.raises(EvidenceError) as info:
        load_package(root)
    if name != "provenance.lock":
        err = info.value
        assert isinstance(err, ProvenanceError) and not isinstance(err, LockFormatError)
        assert (err.file, err.expected) == (name, sha(original))
        assert err.actual == sha((root / name).read_bytes())
    else:
        assert isinstance(info.value, ProvenanceError)


def test_tampered_shipped_evidence_fails_verify_cli(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    edit(root, "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,",
         "a1-j,dns zone,corp.vantgrid.test,false,", relock=False)
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert "checks.csv: changed: expected sha256" in proc.stderr


def test_links_out_of_the_package_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not part of the package\n")
    root = copy_handmade(tmp_path / "p")
    (root / "extra.txt").symlink_to(outside)
    lock = json.loads((root / "provenance.lock").read_text())
    lock["files"]["extra.txt"] = sha(outside.read_bytes())
    (root / "provenance.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    with pytest.raises(ProvenanceError) as info:
        load_package(root)
    assert info.value.file == "extra.txt" and "outside the package" in str(info.value)


# ---------------------------------------------------------------------------- the lock compared as bytes
@pytest.mark.parametrize("change", ["no-final-newline", "two-final-newlines", "crlf", "trailing-space",
                                    "compact"])
def test_lock_with_same_json_but_other_bytes_is_refused(tmp_path: Path, change: str) -> None:
    # Second test of the byte comparison (the first re-indents with 4 spaces). Each change below keeps
    # the parsed JSON identical (json.loads gives the same dict), so only a comparison of the raw bytes
    # with the canonical form can catch it.
    root = copy_handmade(tmp_path / "p")
    raw = (root / "provenance.lock").read_bytes()
    new = {"no-final-newline": raw[:-1], "two-final-newlines": raw + b"\n",
           "crlf": raw.replace(b"\n", b"\r\n"), "trailing-space": raw.replace(b"{\n", b"{ \n", 1),
           "compact": raw.replace(b"\n", b"").replace(b"  ", b"")}[change]
    assert new != raw and json.loads(new) == json.loads(raw)
    (root / "provenance.lock").write_bytes(new)
    with pytest.raises(LockFormatError, match="not in canonical form"):
        load_package(root)


# -------------------------------------------------------------------------------- evidence reading
@pytest.mark.parametrize("name", ["x/../rows.csv", "./rows.csv", "rows.csv/.", "a//rows.csv"])
def test_a_lock_naming_a_dotted_path_is_refused(tmp_path: Path, name: str) -> None:
    # Plant: `any(part in ("..",) ...)` only for a leading part -> x/../rows.csv verified rows.csv twice.
    root = copy_handmade(tmp_path / "p")
    files = json.loads((root / "provenance.lock").read_text())["files"]
    files[name] = files["rows.csv"]
    (root / "provenance.lock").write_text(json.dumps({"algorithm": "sha256", "files": dict(sorted(files.items()))},
                                                     indent=2, sort_keys=True) + "\n")
    with pytest.raises(LockFormatError, match="plain relative path"):
        read_lock(root)


def test_verify_of_the_handmade_package_still_passes() -> None:
    """Guard for the fixtures above: the untouched hand-made package verifies."""
    from evidence_support import HANDMADE

    verify_files(HANDMADE)

