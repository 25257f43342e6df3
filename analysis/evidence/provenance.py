"""The provenance lock: verified first, before any file is parsed.

Method: read ``provenance.lock``, check it is canonical JSON of the form
``{"algorithm": "sha256", "files": {name: 64 lowercase hex}}``, then hash the
exact bytes of every file it names and compare. The bytes that were hashed are
returned, so the parsers read exactly what was verified. Files in the
directory that the lock does not name are never opened.
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from analysis.invocation import analysis_command
from analysis.safeio import SafeIOError, loads_json, loads_toml, write_bytes

from .datapackage import DATAPACKAGE_NAME, datapackage_bytes, datapackage_doc, datapackage_problems
from .depth import MAX_DEPTH, json_depth
from .errors import EvidenceError, LockFormatError, Mismatch, PackageNotFoundError, Problem, ProvenanceError
from .files import (
    LOCK_LIMIT,
    UnsafeFileError,
    hash_evidence_file,
    read_evidence_buffer,
    read_evidence_file,
    sha256_evidence_file,
)

LOCK_NAME = "provenance.lock"
REQUIRED_FILES: tuple[str, ...] = ("study.toml", "rows.csv", "checks.csv")
PARSED_OPTIONAL: tuple[str, ...] = ("folds.jsonl", DATAPACKAGE_NAME)
"""Optional files the analysis parses when the lock names them (their verified bytes are returned)."""
BUFFERED: tuple[str, ...] = ("rows.csv", "checks.csv")
"""Files returned as a read-only memoryview of one private buffer (read once, hashed while read)."""
KEEP_LIMIT = 64 << 20
"""Other locked files at most this long are kept as verified bytes (a reader parses only those: findings.csv,
preregistration.json, a locked fixture); a larger one is hashed without being held, and no reader parses it."""
ALGORITHM = "sha256"
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class VerifiedFiles:
    """The outcome of a successful lock check."""

    digests: Mapping[str, str]
    """Every file named in the lock -> its SHA-256 (lowercase hex)."""
    contents: Mapping[str, bytes | memoryview]
    """The exact verified bytes of the required files, of PARSED_OPTIONAL ones the lock names and of
    every other locked file of at most :data:`KEEP_LIMIT` bytes; BUFFERED files as a read-only
    memoryview of the very buffer that was hashed. Nothing reads a package file again after this."""


def sha256_bytes(data: bytes) -> str:
    """SHA-256 of ``data`` as 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def canonical_lock_bytes(files: Mapping[str, str]) -> bytes:
    """The one byte form of a lock: sorted keys, indent 2, trailing newline."""
    doc = {"algorithm": ALGORITHM, "files": dict(sorted(files.items()))}
    return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _bad_name(name: str) -> str | None:
    """Why a lock entry cannot name a file inside the package, or None."""
    if not name or "\\" in name or "\x00" in name:
        return "is not a relative path with '/' separators"
    p = PurePosixPath(name)
    if p.is_absolute() or any(part in ("..", ".", "") for part in name.split("/")):
        return "must be a plain relative path inside the package (no '..', '.', or leading '/')"
    if name == LOCK_NAME:
        return "the lock cannot pin itself"
    return None


def _lock_problem(msg: str, line: int | None = None, col: str | None = None) -> LockFormatError:
    return LockFormatError([Problem(LOCK_NAME, line, col, msg)])


def read_lock(root: Path) -> dict[str, str]:
    """Parse and check the lock file; return name -> expected digest."""
    try:
        raw = read_evidence_file(root, LOCK_NAME, LOCK_LIMIT)
    except IsADirectoryError:
        raise _lock_problem(f"{LOCK_NAME} is a directory; remove it and write a lock file with "
                            f"`{analysis_command()} lock {shlex.quote(str(root))}`") from None
    except FileNotFoundError:
        command = f"{analysis_command()} lock {shlex.quote(str(root))}"
        raise ProvenanceError(
            [Problem(LOCK_NAME, None, None, f"{LOCK_NAME} is missing from {root}")],
            [Mismatch(LOCK_NAME, None, None)],
            summary="the package has no provenance lock, nothing was read",
            fix=(f"if you produced this package, pin its files with `{command}` (then verify it); "
                 "if it came from someone else, ask them for its provenance.lock"),
        ) from None
    if json_depth(raw) > MAX_DEPTH:
        raise _lock_problem(f"nested deeper than {MAX_DEPTH} levels; a lock is one flat object of "
                            "file name -> digest")
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text)
    except UnicodeDecodeError as exc:
        raise _lock_problem(f"not UTF-8 (byte {exc.start}): {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise _lock_problem(f"not JSON: {exc.msg}", exc.lineno, str(exc.colno)) from None
    except (RecursionError, ValueError) as exc:  # ValueError: e.g. an integer with too many digits
        raise _lock_problem(f"not usable JSON ({type(exc).__name__}); write a fresh lock") from None
    try:  # the door's checks too (lone surrogates, NaN, numbers a double cannot hold)
        loads_json(raw, LOCK_NAME, max_depth=MAX_DEPTH)
    except SafeIOError as exc:
        raise _lock_problem(f"{exc.message}; write a fresh lock") from None
    if not isinstance(doc, dict) or set(doc) != {"algorithm", "files"}:
        raise _lock_problem('must be a JSON object with exactly the keys "algorithm" and "files"')
    if doc["algorithm"] != ALGORITHM:
        raise _lock_problem(f'"algorithm" must be "{ALGORITHM}", not {doc["algorithm"]!r}',
                            None, "algorithm")
    files = doc["files"]
    if not isinstance(files, dict):
        raise _lock_problem('"files" must be an object of file name -> sha256', None, "files")
    problems: list[Problem] = []
    mismatches: list[Mismatch] = []
    for name, digest in files.items():
        why = _bad_name(name)
        if why:
            problems.append(Problem(LOCK_NAME, None, f"files.{name}", f"file name {name!r} {why}"))
        elif not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            actual = _digest_if_present(root, name)
            problems.append(Problem(
                LOCK_NAME, None, f"files.{name}",
                f"digest of {name} is {digest!r}, not 64 lowercase hex characters; "
                f"expected {digest!r}, actual {actual or 'missing file'}"))
            mismatches.append(Mismatch(name, str(digest), actual))
    if problems:
        raise LockFormatError(problems, mismatches)
    if raw != canonical_lock_bytes(files):
        raise _lock_problem(
            "not in canonical form (keys sorted, indent 2, one trailing newline), so a byte of "
            "it was changed after it was written; if the digests are right, rewrite it with "
            f"`{analysis_command()} lock DIR`")
    return dict(files)


def _digest_if_present(root: Path, name: str) -> str | None:
    """SHA-256 of a safe file of the package (for messages); None when absent or unsafe."""
    try:
        return sha256_bytes(read_evidence_file(root, name))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, UnsafeFileError):
        return None


def verify_files(root: str | Path, required: Sequence[str] = REQUIRED_FILES) -> VerifiedFiles:
    """Check every file the lock names against its digest.

    Raises :class:`ProvenanceError` naming every missing or changed file and
    every required file the lock does not name, with expected and actual digests.
    """
    root = Path(root)
    if not root.is_dir():
        raise PackageNotFoundError([Problem(str(root), None, None, "is not a directory")])
    expected = read_lock(root)
    problems: list[Problem] = []
    mismatches: list[Mismatch] = []
    contents: dict[str, bytes | memoryview] = {}
    sizes: dict[str, int] = {}
    unsafe: list[Problem] = []
    for name in sorted(expected):
        want = expected[name]
        data: bytes | memoryview | None = None
        try:
            if name in BUFFERED:  # large tables: one buffer, hashed while read, parsed in place
                data, got = read_evidence_buffer(root, name)
            elif name in required or name in PARSED_OPTIONAL:
                data = read_evidence_file(root, name)
                got = sha256_bytes(data)
            else:  # kept when small enough to be parsed by a reader; hashed in chunks either way
                got, size, data = hash_evidence_file(root, name, KEEP_LIMIT)
                sizes[name] = size
            if data is not None:
                sizes[name] = len(data)
        except UnsafeFileError as exc:
            unsafe.extend(exc.problems)
            mismatches.append(Mismatch(name, want, None))
            continue
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            problems.append(Problem(name, None, None,
                                    f"missing: the lock expects sha256 {want}, actual: no such file"))
            mismatches.append(Mismatch(name, want, None))
            continue
        if got != want:
            problems.append(Problem(name, None, None,
                                    f"changed: expected sha256 {want}, actual {got}"))
            mismatches.append(Mismatch(name, want, got))
        elif data is not None:
            contents[name] = data
        del data
    for name in required:
        if name not in expected:
            actual = _digest_if_present(root, name)
            problems.append(Problem(
                LOCK_NAME, None, f"files.{name}",
                f"required file {name} is not named in the lock: expected (none in lock), "
                f"actual {actual or 'missing file'}"))
            mismatches.append(Mismatch(name, None, actual))
    if unsafe:
        raise UnsafeFileError(unsafe + problems, mismatches)
    if not problems and DATAPACKAGE_NAME in contents:  # the Frictionless view must say what the lock says
        problems.extend(datapackage_problems(contents.pop(DATAPACKAGE_NAME), expected, sizes))
    if problems:
        raise ProvenanceError(problems, mismatches)
    return VerifiedFiles(digests=dict(sorted(expected.items())), contents=contents)


def write_lock(root: str | Path, files: Sequence[str] | None = None, *,
               required: Sequence[str] = REQUIRED_FILES, datapackage: bool | None = None) -> dict[str, Any]:
    """Hash the package's files and write ``provenance.lock``.

    ``files`` are extra file names (relative, '/' separators) to pin besides the
    ``required`` ones (an evidence package's; a directory that is not a package, such
    as the runner's fixture set, passes ``required=()``). For an evidence package
    (``datapackage`` None and ``required`` given, or ``datapackage=True``) the Frictionless
    ``datapackage.json`` describing the same files is written first and locked with them
    (analysis.evidence.datapackage). Returns the lock document that was written.
    """
    root = Path(root)
    if not root.is_dir():
        raise PackageNotFoundError([Problem(str(root), None, None, "is not a directory")])
    with_datapackage = bool(required) if datapackage is None else datapackage
    names = sorted((set(required) | set(files or ())) - {DATAPACKAGE_NAME})
    problems: list[Problem] = []
    unsafe: list[Problem] = []
    digests: dict[str, str] = {}
    kept: dict[str, bytes] = {}
    for name in names:
        why = _bad_name(name)
        if why:
            problems.append(Problem(name, None, None, f"cannot be locked: {why}"))
            continue
        try:
            data = read_evidence_file(root, name)
            digests[name] = sha256_bytes(data)
            if with_datapackage:
                kept[name] = data
        except UnsafeFileError as exc:
            unsafe.extend(Problem(p.file, p.line, p.column, f"cannot be locked: {p.message}")
                          for p in exc.problems)
        except (FileNotFoundError, NotADirectoryError):
            problems.append(Problem(name, None, None, "cannot be locked: no such file"))
        except IsADirectoryError:
            problems.append(Problem(name, None, None, "cannot be locked: is a directory, not a file"))
    if unsafe:
        raise UnsafeFileError(unsafe + problems, summary="cannot write the lock")
    if problems:
        raise ProvenanceError(problems, summary="cannot write the lock")
    if with_datapackage:
        described = datapackage_bytes(datapackage_doc(_study_name(kept.get("study.toml"), root), kept, digests,
                                                      previous=_previous_descriptor(root)))
        _write_atomic(root / DATAPACKAGE_NAME, described)
        digests = dict(sorted({**digests, DATAPACKAGE_NAME: sha256_bytes(described)}.items()))
    _write_atomic(root / LOCK_NAME, canonical_lock_bytes(digests))
    return {"algorithm": ALGORITHM, "files": digests}


def _previous_descriptor(root: Path) -> dict[str, Any] | None:
    """The package's current datapackage.json, when readable (a re-lock keeps its licenses and version)."""
    try:
        raw = read_evidence_file(root, DATAPACKAGE_NAME)
        if json_depth(raw) > MAX_DEPTH:
            return None
        doc = loads_json(raw, root / DATAPACKAGE_NAME)
    except (OSError, ValueError, EvidenceError):
        return None
    return doc if isinstance(doc, dict) else None


def _study_name(study: bytes | None, root: Path) -> str:
    """[study] name of study.toml for the datapackage title (the folder name when it has none)."""
    try:
        name = loads_toml(study or b"", "study.toml").get("study", {}).get("name")
    except (SafeIOError, AttributeError):
        name = None
    return name if isinstance(name, str) and name.strip() else root.resolve().name


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` through the door: a temporary sibling renamed over ``path`` (never half a lock),
    fsynced; a symbolic link at ``path`` is replaced by the file, never written through."""
    try:
        write_bytes(path, data, durable=True, replace_link=True)
    except SafeIOError as exc:
        raise ProvenanceError([Problem(LOCK_NAME, None, None, exc.message)],
                              summary="cannot write the lock") from None


def package_key(root: str | Path) -> str:
    """A content key of a package: the lock's digest and every locked file's actual digest.

    The lock is read and validated first (names inside the package, canonical form), so
    nothing it names is opened before that; each named file is then hashed in chunks under
    the checks of :mod:`analysis.evidence.files`. A key says nothing about whether the
    digests match (``verify_files`` does); it changes whenever a byte of a locked file does.
    Raises :class:`EvidenceError` subclasses (no package, bad lock, an unsafe file);
    a missing locked file keys as ``missing``.
    """
    root = Path(root)
    if not root.is_dir():
        raise PackageNotFoundError([Problem(str(root), None, None, "is not a directory")])
    expected = read_lock(root)
    actual: dict[str, str] = {}
    for name in sorted(expected):
        try:
            actual[name] = sha256_evidence_file(root, name)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            actual[name] = "missing"
    return content_key(expected, actual)


def content_key(locked: Mapping[str, str], actual: Mapping[str, str]) -> str:
    """The key :func:`package_key` gives a package whose lock pins ``locked`` and whose files hash to
    ``actual``; for a verified package both are its ``digests``, so the key is computed from the
    verified bytes without reading a file again."""
    parts = [f"{LOCK_NAME}:{sha256_bytes(canonical_lock_bytes(locked))}"]
    parts += [f"{name}:{actual[name]}" for name in sorted(locked)]
    return sha256_bytes("\n".join(parts).encode("utf-8"))
