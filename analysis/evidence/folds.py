"""folds.jsonl: the optional, locked fold-by-fold record of every trajectory.

Methods note. One JSON object per line, one line per fold call, as the runner writes
it (analysis.runner.package.fold_records). The fields the analysis reads are declared
as data in :data:`FOLD_FIELDS` (name, JSON type, required, nullable); every other key
(``reply_text``, ``usage``, ...) is allowed and ignored. Validation follows the CSVs:
every problem is collected with its line and key and raised at once as
:class:`FoldsFormatError` (a :class:`SchemaError`). Per row the fold indices must run
0, 1, 2, ... in file order (a skipped or repeated index is named with both lines), and
every ``row_id`` must be a row of rows.csv. The parser reads the verified bytes once
(split on newlines, one ``json.loads`` per line), so its time is linear in the file
size, whatever one carrier's length.

Entry folds need to know which chunk holds each graded value. The package records the
fixture by ``fixture_digest`` (rows.csv, runner extra); :func:`fixture_placements`
finds the fixture whose bytes hash to that digest among the package's own locked files
and the repository's committed fixtures (``analysis/runner/fixture_files/*.json``, package data) and returns each
graded value's label, value, value class and chunk.
"""
from __future__ import annotations

import hashlib
import json
import math
import mmap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from analysis.locations import package_path
from analysis.safeio import LIMITS, SafeIOError, check_json_values, loads_json, read_bytes

from .depth import MAX_DEPTH, json_depth
from .errors import Problem, SchemaError
from .schema import MAX_COUNT, extra_column

FOLDS_FILE = "folds.jsonl"
NOT_IN_EVIDENCE = "not in this evidence: the package has no folds.jsonl"
FIXTURE_DIRS: tuple[Path, ...] = (package_path("runner", "fixture_files"),
                                  package_path("runner", "fixture_files", "ladder"))
"""Where committed fixtures are looked up by digest (after the package's own locked files): the v2
fixture set and the load ladder's rungs."""


class FoldsFormatError(SchemaError):
    """folds.jsonl breaks its schema: bad JSON, unknown rows, skipped/repeated folds, bad types."""

    summary = "folds.jsonl breaks the evidence format"
    fix = ("correct the lines named below (the format: {format}, 'folds.jsonl'), "
           "then re-lock the package")


@dataclass(frozen=True, slots=True)
class FoldField:
    """One key of a folds.jsonl line that the analysis reads."""

    name: str
    """JSON key."""
    kind: str
    """``text``, ``int`` (>= 0), ``bool`` or ``int_list`` (list of ints >= 0)."""
    required: bool
    """True when the key must be present."""
    nullable: bool
    """True when ``null`` is allowed."""
    doc: str
    """One-line meaning, as in docs/EVIDENCE_FORMAT.md."""


FOLD_FIELDS: tuple[FoldField, ...] = (
    FoldField("row_id", "text", True, False, "the row of rows.csv this fold belongs to"),
    FoldField("fold", "int", True, False, "0-based fold call index; per row 0, 1, 2, ... in file order"),
    FoldField("chunks", "int_list", True, False,
              "0-based chunk indices the fold read (more than one after a lost fold)"),
    FoldField("carrier", "text", True, False, "the carrier after this fold (after the carry cap)"),
    FoldField("parse_ok", "bool", True, True, "schema arms: the reply parsed; null for plain arms and lost folds"),
    FoldField("clipped", "bool", True, False, "the carry cap clipped the carrier"),
    FoldField("finish_reason", "text", False, True, "finish reason as the endpoint reported it"),
    FoldField("lost", "bool", False, True, "no usable reply: carrier kept, chunk folded with the next"),
)
"""The schema of folds.jsonl as data (the loader and the docs follow it)."""

SCHEMA: dict[str, pl.DataType] = {
    "row_id": pl.String(), "fold": pl.Int64(), "chunks": pl.List(pl.Int64()), "carrier": pl.String(),
    "parse_ok": pl.Boolean(), "clipped": pl.Boolean(), "finish_reason": pl.String(), "lost": pl.Boolean(),
    "line": pl.Int64(),
}
"""Columns of the loaded folds frame (``line`` is the 1-based line in folds.jsonl)."""


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return isinstance(value, list) and len(value) <= MAX_COUNT and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_COUNT for v in value)


_KIND_WORDS = {"text": "a string", "bool": "true or false", "int": f"an integer in 0..{MAX_COUNT}",
               "int_list": f"a list of integers in 0..{MAX_COUNT}"}


class _NotANumber(ValueError):
    """NaN, Infinity or -Infinity in a line (the JSON door refuses them)."""


def _no_constant(name: str) -> Any:
    raise _NotANumber(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotANumber(f"{text[:40]} overflows a double")
    return value


FLUSH_LINES = 1 << 16
"""Lines parsed into Python objects before they are moved into a columnar frame (bounded memory)."""


def _lines(data: bytes | memoryview) -> Iterator[tuple[int, bytes]]:
    """(1-based number, bytes) of each line, one at a time (no list of every line).

    A memoryview of :func:`read_evidence_buffer` starts at offset 0 of its memory map, whose
    ``find`` is used in place; any other buffer is searched as bytes.
    """
    view = memoryview(data)
    base = view.obj
    haystack: bytes | mmap.mmap = base if isinstance(base, bytes | mmap.mmap) else bytes(view)
    size = len(view)
    start, number = 0, 0
    while start < size:
        end = haystack.find(b"\n", start, size)
        if end < 0:
            end = size
        number += 1
        yield number, bytes(view[start:end])
        start = end + 1


def _parsed_lines(data: bytes | memoryview) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, its JSON document, None) for every line, or (line number, None, why it is unreadable)."""
    for number, raw in _lines(data):
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and json_depth(raw) > MAX_DEPTH:
            yield number, None, f"nested deeper than {MAX_DEPTH} levels; write one flat JSON object per line"
            continue
        try:  # the door's rules: no NaN/Infinity, no lone surrogate (analysis.safeio.check_json_values)
            text = raw.decode("utf-8")
            del raw  # memory: the line is held once as bytes or text, then as text and its parse
            doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
            check_json_values(doc, text, FOLDS_FILE, number)
            del text
        except SafeIOError as exc:
            yield number, None, f"{exc.message}"
        except UnicodeDecodeError as exc:
            yield number, None, f"not UTF-8 (byte {exc.start}); write the file as UTF-8"
        except json.JSONDecodeError as exc:
            yield number, None, f"not JSON ({exc.msg} at character {exc.pos + 1}); write one JSON object per line"
        except _NotANumber as exc:
            yield number, None, f"{exc}; write a finite number or null"
        except (RecursionError, ValueError):  # ValueError: e.g. an integer of over 4300 digits
            yield number, None, "not JSON: nested too deeply or a number too long; write one flat JSON object per line"
        else:
            yield number, doc, None


def _field_problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for every missing required key and every value of the wrong type."""
    found: list[tuple[str, str]] = []
    for f in FOLD_FIELDS:
        if f.name not in doc:
            if f.required:
                found.append((f.name, f"missing key {f.name!r} ({f.doc})"))
            continue
        value = doc[f.name]
        if value is None and f.nullable:
            continue
        if not _type_ok(f.kind, value):
            shown = "null" if value is None else type(value).__name__
            found.append((f.name, f"{f.name} must be {_KIND_WORDS[f.kind]}{' or null' if f.nullable else ''}, "
                                  f"got {shown}"))
    return found


def _order_problem(row_id: str, fold: int, number: int, last: dict[str, tuple[int, int]]) -> str | None:
    """Why fold `fold` of `row_id` (at line `number`) is out of order, else None; records it in `last`
    (later lines are judged against this one: one gap, one problem)."""
    prev = last.get(row_id)
    want = 0 if prev is None else prev[0] + 1
    last[row_id] = (fold, number)
    if fold == want:
        return None
    if prev is not None and fold <= prev[0]:
        return (f"fold {fold} of row {row_id!r} repeats or goes back (fold {prev[0]} at line "
                f"{prev[1]}); keep one line per fold, in fold order")
    after = "the row's first line" if prev is None else f"fold {prev[0]} at line {prev[1]}"
    return (f"fold {fold} of row {row_id!r} skips fold {want} (after {after}); "
            "write every fold call, numbered 0, 1, 2, ...")


def parse_folds(data: bytes | memoryview | None, row_ids: Iterable[str] | None,
                problems: list[Problem]) -> pl.DataFrame | None:
    """Parse folds.jsonl bytes; append every problem to ``problems``; None when absent or broken.

    ``row_ids``: the rows of rows.csv (None skips the unknown-row rule, e.g. when rows.csv failed).
    Memory: lines are read one at a time and moved into a columnar frame every
    :data:`FLUSH_LINES` lines, so Python objects never pile up for the whole file.
    """
    if data is None:
        return None
    known = None if row_ids is None else set(row_ids)
    start = len(problems)
    cols: dict[str, list[Any]] = {name: [] for name in SCHEMA}
    frames: list[pl.DataFrame] = []
    last: dict[str, tuple[int, int]] = {}  # row_id -> (last fold index, its line)
    for number, doc, unreadable in _parsed_lines(data):
        if unreadable is None and not isinstance(doc, dict):
            unreadable = f"is a JSON {type(doc).__name__}, not an object; write one JSON object per line"
        if unreadable is not None:
            problems.append(Problem(FOLDS_FILE, number, None, unreadable))
            continue
        if found := _field_problems(doc):
            problems.extend(Problem(FOLDS_FILE, number, key, message) for key, message in found)
            continue
        row_id, fold = doc["row_id"], doc["fold"]
        if known is not None and row_id not in known:
            problems.append(Problem(FOLDS_FILE, number, "row_id", f"row_id {row_id!r} is not a row of rows.csv; "
                                    "remove the line or add the row"))
            continue
        if (why := _order_problem(row_id, fold, number, last)) is not None:
            problems.append(Problem(FOLDS_FILE, number, "fold", why))
            continue
        if len(problems) > start:
            continue  # the file is refused: its lines are checked, not kept
        for name in SCHEMA:
            cols[name].append(number if name == "line" else doc.get(name))
        if len(cols["line"]) >= FLUSH_LINES:
            frames.append(pl.DataFrame(cols, schema=SCHEMA))
            cols = {name: [] for name in SCHEMA}
    if len(problems) > start:
        return None
    frames.append(pl.DataFrame(cols, schema=SCHEMA))
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=True)


def load_folds_bytes(data: bytes | None, row_ids: Iterable[str] | None) -> pl.DataFrame | None:
    """Parse folds.jsonl bytes and raise :class:`FoldsFormatError` listing every problem."""
    problems: list[Problem] = []
    frame = parse_folds(data, row_ids, problems)
    if problems:
        raise FoldsFormatError(problems)
    return frame


# ---------------------------------------------------------------- fixture placement
PLACEMENT_SCHEMA: dict[str, pl.DataType] = {
    "fixture_digest": pl.String(), "check": pl.String(), "value": pl.String(),
    "value_class": pl.String(), "chunk": pl.Int64(), "case_sensitive": pl.Boolean(),
}
"""Columns of :func:`fixture_placements`: one line per graded value of each fixture found."""


def _placement_rows(digest: str, data: bytes) -> list[dict[str, Any]] | None:
    try:
        doc = loads_json(data, "fixture")
        return [{"fixture_digest": digest, "check": str(g["label"]), "value": str(g["value"]),
                 "value_class": str(g["value_class"]), "chunk": int(g["chunk"]),
                 "case_sensitive": bool(g.get("case_sensitive", True))} for g in doc["graded"]]
    except (ValueError, KeyError, TypeError):  # SafeIOError is a ValueError
        return None


@dataclass(frozen=True, slots=True)
class FixtureLibrary:
    """The repository's committed fixtures, read once: what entry folds are looked up in.

    Loaded by :func:`load_fixture_library` before estimation (the build loads it once, and its
    stage key holds the digests of this very library: ``by_digest``), so no estimator reads a file."""

    by_digest: Mapping[str, bytes]
    """SHA-256 of a fixture file's bytes -> those bytes (first file in search order wins)."""


def _fixture_files(search: Iterable[Path]) -> list[Path]:
    return [path for directory in search if Path(directory).is_dir()
            for path in sorted(Path(directory).glob("*.json"))]


def load_fixture_library(search: Iterable[Path] | None = None) -> FixtureLibrary:
    """Read every ``*.json`` of ``search`` (default :data:`FIXTURE_DIRS`: the committed fixtures) once;
    unreadable files are skipped."""
    found: dict[str, bytes] = {}
    for path in _fixture_files(FIXTURE_DIRS if search is None else search):
        try:
            data = read_bytes(path, limit=LIMITS["json"])
        except (OSError, SafeIOError):
            continue
        found.setdefault(hashlib.sha256(data).hexdigest(), data)
    return FixtureLibrary(found)


def fixture_placements(files: Mapping[str, bytes], locked: Mapping[str, str], digests: Iterable[str],
                       search: Iterable[Path] = FIXTURE_DIRS, *,
                       library: FixtureLibrary | None = None) -> tuple[pl.DataFrame, dict[str, str]]:
    """Graded values and their chunks for each wanted fixture digest, and why any is missing.

    Looks first at the package's locked files whose lock digest equals the fixture digest, parsed
    from their verified bytes ``files`` (EvidencePackage.files: never read from the disk again),
    then in ``library`` (the committed fixtures, read once; loaded from
    ``search`` here when not given).
    """
    want = {d for d in digests if d}
    rows: list[dict[str, Any]] = []
    found: set[str] = set()
    for name, digest in sorted(locked.items()):
        if digest in want and digest not in found:
            data = files.get(name)
            if data is None:  # too large to be kept: never parsed
                continue
            got = _placement_rows(digest, data)
            if got is not None:
                rows += got
                found.add(digest)
    if not found >= want:
        lib = library if library is not None else load_fixture_library(search)
        for digest in sorted(want - found):
            if digest not in lib.by_digest:
                continue
            got = _placement_rows(digest, lib.by_digest[digest])
            if got is not None:
                rows += got
                found.add(digest)
    missing = {d: (f"fixture {d[:12]}… not found: lock its JSON into the package or commit it under "
                   "analysis/runner/fixture_files/ (or its ladder/)") for d in sorted(want - found)}
    return pl.DataFrame(rows, schema=PLACEMENT_SCHEMA), missing


FACTS_SCHEMA: dict[str, pl.DataType] = {
    "row_id": pl.String(), "check": pl.String(), "value": pl.String(), "value_class": pl.String(),
    "chunk": pl.Int64(), "case_sensitive": pl.Boolean(),
}
"""Columns of :func:`graded_facts` (the fact-timeline estimator's ``facts`` input)."""


def graded_facts(package: Any, search: Iterable[Path] = FIXTURE_DIRS, *,
                 library: FixtureLibrary | None = None) -> tuple[pl.DataFrame, dict[str, str]]:
    """Every (row, graded check) of a package with folds, with its value's chunk; and what is missing.

    Rows come from checks.csv (checks' ``expected`` must equal the fixture's value of that label),
    the chunk from the fixture named by rows.csv ``fixture_digest`` (the package's locked files, then
    ``library``: the committed fixtures loaded once). Reasons: ``"<scope>" -> why``.
    """
    empty = pl.DataFrame(schema=FACTS_SCHEMA)
    if package.folds is None:
        return empty, {"folds": NOT_IN_EVIDENCE}
    rows = package.rows
    if extra_column("fixture_digest") not in rows.columns:  # a runner extra column of rows.csv
        return empty, {"fixture": "rows.csv has no fixture_digest column, so entry folds are unknown"}
    digest = rows.select("row_id", pl.col(extra_column("fixture_digest")).cast(pl.String).alias("fixture_digest"))
    checks = package.checks.select("row_id", "check", "expected").join(digest, on="row_id", how="inner")
    placements, missing = fixture_placements(package.files, package.digests,
                                             checks.get_column("fixture_digest").drop_nulls().unique().to_list(),
                                             search, library=library)
    joined = checks.join(placements, on=["fixture_digest", "check"], how="left")
    reasons = dict(missing)
    unmatched = joined.filter(pl.col("value").is_null() | (pl.col("value") != pl.col("expected")))
    if unmatched.height:
        reasons["checks"] = (f"{unmatched.height} checks whose label or expected value is not a graded value "
                             "of the row's fixture are left out of the timeline")
    facts = joined.filter(pl.col("value") == pl.col("expected"))
    return facts.select([pl.col(c).cast(t) for c, t in FACTS_SCHEMA.items()]), reasons
