"""Load and verify whole evidence packages.

Order: the provenance lock is verified first (nothing is parsed before); then
study.toml, rows.csv and checks.csv are parsed from the verified bytes; then
the cross-file rules run. Every problem is collected and raised at once. The verified
bytes of study.toml and of the other small locked files stay in the package
(``EvidencePackage.files``): every later reader parses those, never the file again.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from analysis.safeio import SafeIOError, loads_toml

from . import consistency
from .errors import ConsistencyError, EvidenceError, Problem, SchemaError, StudyError, raise_collected
from .files import release_prefix
from .folds import FOLDS_FILE, FoldsFormatError, parse_folds
from .loader import ParsedCsv, parse_csv
from .model import EvidencePackage, PackageSummary
from .provenance import PARSED_OPTIONAL, VerifiedFiles, verify_files
from .schema import CHECKS_FILE, ROWS_FILE, STUDY_FILE
from .study import parse_study


def load_package(root: str | Path) -> EvidencePackage:
    """Verify the lock, then parse and validate the package; raise EvidenceError subclasses."""
    root = Path(root)
    return parse_verified(root, verify_files(root))


def parse_verified(root: Path, verified: VerifiedFiles) -> EvidencePackage:
    """Parse and validate a package from the bytes :func:`verify_files` verified (no file is read)."""
    digests = verified.digests
    contents = dict(verified.contents)
    del verified  # each file's verified bytes are dropped as soon as they are parsed
    study_bytes = bytes(contents.pop(STUDY_FILE))  # small, never a buffer: no copy
    parsed_study = parse_study(study_bytes)
    study = parsed_study.study
    if not parsed_study.problems:
        parsed_study.problems.extend(unlocked_names(study_bytes, digests))
    schema_problems: list[Problem] = []
    rows = _parse_table(ROWS_FILE, contents.pop(ROWS_FILE), schema_problems)
    checks = _parse_table(CHECKS_FILE, contents.pop(CHECKS_FILE), schema_problems)
    cross: list[Problem] = []
    if rows is not None:
        consistency.check_rows(rows, parsed_study, cross)
        if checks is not None:
            consistency.check_checks(rows, checks, cross)
    fold_problems: list[Problem] = []  # optional file: parsed only when the lock names it
    folds_raw = contents.pop(FOLDS_FILE, None)  # parsed line by line from the verified buffer: no copy
    folds = parse_folds(folds_raw, None if rows is None or folds_raw is None
                        else rows.frame.get_column("row_id").to_list(), fold_problems)
    del folds_raw
    kept = {name: bytes(data) for name, data in contents.items() if name not in PARSED_OPTIONAL}
    kept[STUDY_FILE] = study_bytes
    buckets: dict[type[EvidenceError], list[Problem]] = {
        StudyError: parsed_study.problems, SchemaError: schema_problems, ConsistencyError: cross,
        FoldsFormatError: fold_problems}
    raise_collected(buckets)
    if study is None or rows is None or checks is None:  # pragma: no cover - a bug, not bad input
        raise RuntimeError("a file failed to parse without reporting a problem")
    return EvidencePackage(root=root, digests=MappingProxyType(dict(digests)), study=study,
                           rows=rows.frame, checks=checks.frame, folds=folds,
                           files=MappingProxyType(dict(sorted(kept.items()))))


def unlocked_names(study_bytes: bytes, locked: Mapping[str, str]) -> list[Problem]:
    """Problems for each file study.toml names (``[preregistration] file``) that the lock does not
    pin: the build reads nothing from a package that its lock does not name."""
    try:
        doc = loads_toml(study_bytes, STUDY_FILE)
    except SafeIOError:
        return []  # parse_study reported it
    table = doc.get("preregistration")
    if not isinstance(table, dict):
        return []
    name = table.get("file") or "preregistration.json"
    if not isinstance(name, str) or name not in locked:
        return [Problem(STUDY_FILE, None, "preregistration.file",
                        f"names {name!r}, which is not a file the provenance lock pins; name a locked file "
                        "inside the package (a relative path such as preregistration.json) and re-lock")]
    return []


def _parse_table(file: str, data: bytes | memoryview, problems: list[Problem]) -> ParsedCsv | None:
    """Parse a CSV file from its verified buffer, giving pages back as batches are consumed.

    This function holds the only reference to the buffer, so no one reads the released pages.
    """
    view = memoryview(data)
    del data
    return parse_csv(file, view, problems, release=lambda end: release_prefix(view, end))


def verify_package(root: str | Path) -> PackageSummary:
    """Verify and fully validate a package; return counts and digests for a report."""
    package = load_package(root)
    return PackageSummary(
        root=package.root, digests=package.digests, rows=package.rows.height,
        valid_rows=int(package.rows.get_column("valid").sum()), checks=package.checks.height,
        configurations=len(package.study.configurations))
