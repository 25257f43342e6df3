"""The provenance lock is checked first, pins every byte, and names file + digests."""
from __future__ import annotations

import hashlib
import json
import os
import stat
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
    UnsafeFileError,
    load_package,
    package_key,
    verify_files,
    verify_package,
    write_lock,
)
from analysis.evidence import package as package_mod
from analysis.evidence.provenance import canonical_lock_bytes, read_lock, sha256_bytes
from evidence_support import HANDMADE, PACKAGE_FILES, copy_handmade, edit, run_cli
from evidence_support import cli_fails_cleanly as _cli_fails_cleanly


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


def _lock_with(root: Path, extra: dict[str, str]) -> None:
    """Rewrite the (canonical) lock of ``root`` with ``extra`` names added, as a stranger could."""
    files = json.loads((root / "provenance.lock").read_text())["files"]
    files.update(extra)
    (root / "provenance.lock").write_bytes(canonical_lock_bytes(files))


# ------------------------------------------------------------------ unsafe file access
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


def test_a_locked_fifo_is_refused_by_verify_and_the_build_without_hanging(pkg: Path, tmp_path: Path) -> None:
    os.mkfifo(pkg / "pipe")
    _lock_with(pkg, {"pipe": "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="FIFO")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="FIFO")
    assert not (tmp_path / "out").exists()
    with pytest.raises(UnsafeFileError) as info:
        package_key(pkg)
    assert info.value.file == "pipe"


@pytest.mark.parametrize("name", ["/dev/zero", "../../../dev/stdin", "a/../../x"])
def test_lock_names_outside_the_package_are_refused_before_anything_is_read(pkg: Path, tmp_path: Path,
                                                                              name: str) -> None:
    _lock_with(pkg, {name: "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="plain relative path inside the package")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"),
                       expect="plain relative path inside the package")
    with pytest.raises(LockFormatError):
        package_key(pkg)


def test_a_symlink_loop_is_a_named_error(pkg: Path) -> None:
    (pkg / "loop1").symlink_to("loop2")
    (pkg / "loop2").symlink_to("loop1")
    _lock_with(pkg, {"loop1": "0" * 64})
    _cli_fails_cleanly("verify", str(pkg), expect="symbolic link loop")
    _cli_fails_cleanly("lock", str(pkg), "--files", "loop2", expect="symbolic link loop")


def test_the_lock_as_a_link_to_dev_zero_is_refused(pkg: Path, tmp_path: Path) -> None:
    (pkg / "provenance.lock").unlink()
    (pkg / "provenance.lock").symlink_to("/dev/zero")
    _cli_fails_cleanly("verify", str(pkg), expect="leads outside the package")
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="leads outside the package")


def test_the_lock_as_a_fifo_inside_the_package_is_refused(pkg: Path) -> None:
    (pkg / "provenance.lock").unlink()
    os.mkfifo(pkg / "provenance.lock")
    _cli_fails_cleanly("verify", str(pkg), expect="FIFO")


@pytest.mark.parametrize("name, size", [("provenance.lock", 8 << 30), ("study.toml", 3 << 20),
                                        ("rows.csv", (1 << 30) + 1)])
def test_sparse_or_huge_files_are_refused_by_size_before_reading(pkg: Path, name: str, size: int) -> None:
    with open(pkg / name, "r+b") as fh:  # sparse: no disk used, nothing to read but zeros
        fh.truncate(size)
    with pytest.raises(UnsafeFileError) as info:
        load_package(pkg)
    assert info.value.problems[0].file == name and "above the limit" in str(info.value)


def test_a_device_inside_the_package_is_refused(pkg: Path) -> None:
    try:
        os.mknod(pkg / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    _lock_with(pkg, {"null": "0" * 64})
    with pytest.raises(UnsafeFileError, match="a device"):
        verify_package(pkg)
    with pytest.raises(UnsafeFileError, match="a device"):
        write_lock(pkg, ["null"])


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_lock_files_refuses_links_out_fifos_and_links_to_devices(pkg: Path) -> None:
    (pkg / "passwd").symlink_to("/etc/passwd")
    (pkg / "zero").symlink_to("/dev/zero")
    os.mkfifo(pkg / "pipe")
    before = (pkg / "provenance.lock").read_bytes()
    for name, expect in (("passwd", "leads outside"), ("zero", "leads outside"), ("pipe", "FIFO")):
        _cli_fails_cleanly("lock", str(pkg), "--files", name, expect=expect)
    assert (pkg / "provenance.lock").read_bytes() == before  # a refused lock leaves the old one
    (pkg / "inside.txt").write_text("pinned\n")
    (pkg / "link-inside").symlink_to("inside.txt")  # a link that stays inside is fine
    doc = write_lock(pkg, ["link-inside"])
    assert doc["files"]["link-inside"] == sha256_bytes(b"pinned\n")


def test_the_lock_is_written_atomically_and_never_through_a_link(pkg: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("do not overwrite\n")
    (pkg / "provenance.lock").unlink()
    (pkg / "provenance.lock").symlink_to(outside)
    write_lock(pkg)
    assert outside.read_text() == "do not overwrite\n"
    assert not (pkg / "provenance.lock").is_symlink()
    assert sorted(p.name for p in pkg.iterdir()) == sorted(["checks.csv", "datapackage.json", "provenance.lock",
                                                            "rows.csv", "study.toml"])
    verify_package(pkg)


def test_package_key_changes_with_any_locked_byte_and_needs_a_valid_lock(pkg: Path) -> None:
    first = package_key(pkg)
    edit(pkg, "rows.csv", "a1-j,", "a1-J,", relock=False)
    assert package_key(pkg) != first
    (pkg / "provenance.lock").write_text('{"files": 1}')
    with pytest.raises(LockFormatError):
        package_key(pkg)


def test_a_lone_surrogate_in_the_lock_is_a_lock_format_error(tmp_path: Path) -> None:
    from analysis.evidence import LockFormatError

    root = copy_handmade(tmp_path / "p")
    text = (root / "provenance.lock").read_text(encoding="utf-8")
    (root / "provenance.lock").write_text(text.replace('"rows.csv"', '"rows\\ud800.csv"'), encoding="utf-8")
    with pytest.raises(LockFormatError, match="lone surrogate"):
        load_package(root)
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr

