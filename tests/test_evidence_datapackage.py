"""datapackage.json: the Frictionless view of an evidence package agrees with provenance.lock, passes
`frictionless validate` on every package we write, and fails on the same one-byte tampering that
`verify` catches (issue 22). frictionless is a test dependency only."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.evidence import verify_files, write_lock
from analysis.evidence.datapackage import DATAPACKAGE_NAME, datapackage_problems
from analysis.evidence.errors import ProvenanceError
from analysis.evidence.provenance import LOCK_NAME, canonical_lock_bytes, sha256_bytes
from analysis.evidence.schema import CHECKS_COLUMNS, ROWS_COLUMNS
from evidence_support import HANDMADE, REPO

frictionless = pytest.importorskip("frictionless")


def _errors(root: Path) -> list[str]:
    report = frictionless.validate(str(root / DATAPACKAGE_NAME))
    return [e.type for task in report.tasks for e in task.errors] + [e.type for e in report.errors]


def _locked_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    (dst / DATAPACKAGE_NAME).unlink(missing_ok=True)
    write_lock(dst, [n for n in json.loads((src / LOCK_NAME).read_text())["files"] if n != DATAPACKAGE_NAME])
    return dst


def test_lock_writes_a_datapackage_that_frictionless_accepts(tmp_path: Path) -> None:
    root = _locked_copy(HANDMADE, tmp_path / "p")
    lock = json.loads((root / LOCK_NAME).read_text())["files"]
    assert DATAPACKAGE_NAME in lock  # the lock pins the description too
    doc = json.loads((root / DATAPACKAGE_NAME).read_text())
    by_path = {r["path"]: r for r in doc["resources"]}
    assert set(by_path) == set(lock) - {DATAPACKAGE_NAME}
    for path, res in by_path.items():  # the same digests as the lock, and the true sizes
        assert res["hash"] == f"sha256:{lock[path]}" and res["bytes"] == (root / path).stat().st_size
    assert _errors(root) == []
    verify_files(root)  # and verify agrees


def test_table_schema_is_generated_from_the_schema_as_data(tmp_path: Path) -> None:
    root = _locked_copy(HANDMADE, tmp_path / "p")
    doc = json.loads((root / DATAPACKAGE_NAME).read_text())
    tables = {r["path"]: r["schema"] for r in doc["resources"] if r.get("type") == "table"}
    kinds = {"int": "integer", "bool": "boolean", "text": "string"}
    for name, columns in (("rows.csv", ROWS_COLUMNS), ("checks.csv", CHECKS_COLUMNS)):
        fields = {f["name"]: f for f in tables[name]["fields"]}
        for col in columns:
            if col.name in fields:
                assert fields[col.name]["type"] == kinds[col.kind]
                assert fields[col.name]["constraints"]["required"] is col.required
    assert tables["rows.csv"]["primaryKey"] == ["row_id"]
    assert tables["checks.csv"]["foreignKeys"][0]["reference"] == {"resource": "rows", "fields": ["row_id"]}


@pytest.mark.parametrize("package", ["data/v1", "data/v2/pilot", "data/v2/ladder-pilot"])
def test_frictionless_validates_the_shipped_packages(package: str) -> None:
    root = REPO / package
    if not (root / DATAPACKAGE_NAME).is_file():
        pytest.fail(f"{package} has no {DATAPACKAGE_NAME}: re-lock it with `python generate.py lock {package}`")
    assert _errors(root) == []


@pytest.mark.slow
def test_frictionless_validates_a_runner_written_package(scripted_scenario: Path) -> None:
    root = scripted_scenario  # write_scenario(tmp / "run"): the runner-written package, once per session (conftest)
    assert (root / DATAPACKAGE_NAME).is_file()
    assert _errors(root) == []
    verify_files(root)


@pytest.mark.parametrize("name", ["rows.csv", "study.toml"])
def test_one_changed_byte_fails_both_verify_and_frictionless(tmp_path: Path, name: str) -> None:
    root = _locked_copy(HANDMADE, tmp_path / "p")
    data = bytearray((root / name).read_bytes())
    at = data.index(b"1")
    data[at] = ord("2")
    (root / name).write_bytes(bytes(data))
    with pytest.raises(ProvenanceError):
        verify_files(root)
    assert "hash-count" in _errors(root)


def test_foreign_key_and_primary_key_are_checked_by_frictionless(tmp_path: Path) -> None:
    """A checks row naming no row, and a repeated row_id: Frictionless sees both from the schema."""
    root = tmp_path / "p"
    shutil.copytree(HANDMADE, root)
    checks = (root / "checks.csv").read_text().splitlines()
    first = checks[1].split(",", 1)
    checks[1] = "no-such-row," + first[1]
    (root / "checks.csv").write_text("\n".join(checks) + "\n")
    rows = (root / "rows.csv").read_text().splitlines()
    (root / "rows.csv").write_text("\n".join([*rows, rows[1]]) + "\n")
    write_lock(root, required=(), datapackage=True, files=["study.toml", "rows.csv", "checks.csv"])
    errors = _errors(root)
    assert "foreign-key" in errors and "primary-key" in errors


def test_verify_refuses_a_datapackage_that_disagrees_with_the_lock(tmp_path: Path) -> None:
    """Locked but wrong: a resource hash edited, then the lock rewritten over the edited file."""
    root = _locked_copy(HANDMADE, tmp_path / "p")
    doc = json.loads((root / DATAPACKAGE_NAME).read_text())
    doc["resources"][0]["hash"] = "sha256:" + "0" * 64
    doc["resources"].append({"name": "ghost", "path": "ghost.csv"})
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    (root / DATAPACKAGE_NAME).write_text(text)
    files = json.loads((root / LOCK_NAME).read_text())["files"]
    files[DATAPACKAGE_NAME] = sha256_bytes(text.encode())
    (root / LOCK_NAME).write_bytes(canonical_lock_bytes(files))
    with pytest.raises(ProvenanceError) as info:
        verify_files(root)
    message = str(info.value)
    assert "differs from the lock's" in message and "'ghost.csv' is not a file the lock names" in message


def test_datapackage_problems_on_malformed_documents() -> None:
    locked = {"rows.csv": "a" * 64}
    assert "not JSON" in str(datapackage_problems(b"{", locked, {})[0])
    assert "resources" in str(datapackage_problems(b"[]", locked, {})[0])
    assert "has no resource" in str(datapackage_problems(b'{"resources": []}', locked, {})[0])
    assert "deeper" in str(datapackage_problems(b"[" * 10_000 + b"]" * 10_000, locked, {})[0])


def test_every_csv_is_a_table_with_a_schema_and_the_descriptor_has_licence_and_version() -> None:
    """data/v1 lists findings.csv: a table whose schema declares id (required, unique), status and note; the
    descriptor carries licenses and version (issue 33)."""
    doc = json.loads((REPO / "data" / "v1" / DATAPACKAGE_NAME).read_text(encoding="utf-8"))
    csvs = [r for r in doc["resources"] if r["path"].endswith(".csv")]
    assert {r["path"] for r in csvs} >= {"rows.csv", "checks.csv", "findings.csv"}
    for r in csvs:
        assert r["type"] == "table" and r["schema"]["fields"], r["path"]
    findings = next(r for r in csvs if r["path"] == "findings.csv")["schema"]["fields"]
    assert [f["name"] for f in findings] == ["id", "status", "note"]
    assert findings[0]["constraints"] == {"required": True, "unique": True}
    assert doc["version"] and doc["licenses"][0]["name"] == "MIT"


def test_frictionless_checks_findings_csv_and_a_relock_keeps_the_producers_licence(tmp_path: Path) -> None:
    root = shutil.copytree(REPO / "data" / "v1", tmp_path / "v1")
    doc = json.loads((root / DATAPACKAGE_NAME).read_text(encoding="utf-8"))
    doc["licenses"] = [{"name": "CC-BY-4.0", "path": "https://creativecommons.org/licenses/by/4.0/"}]
    doc["version"] = "2.1.0"
    (root / DATAPACKAGE_NAME).write_text(json.dumps(doc), encoding="utf-8")
    findings = root / "findings.csv"
    first = findings.read_text(encoding="utf-8").splitlines()[1]
    findings.write_text(findings.read_text(encoding="utf-8") + first + "\n", encoding="utf-8")  # a duplicate id
    locked = [n for n in json.loads((root / LOCK_NAME).read_text())["files"] if n != DATAPACKAGE_NAME]
    write_lock(root, locked)
    relocked = json.loads((root / DATAPACKAGE_NAME).read_text(encoding="utf-8"))
    assert relocked["version"] == "2.1.0" and relocked["licenses"][0]["name"] == "CC-BY-4.0"
    assert "unique-error" in _errors(root)  # a plain file resource would not be parsed at all
