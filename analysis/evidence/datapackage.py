"""The Frictionless Data Package view of an evidence package (``datapackage.json``).

Methods note. ``provenance.lock`` pins every file by SHA-256; a Frictionless Data Package
(Data Package / Table Schema, https://datapackage.org) says the same in the field's standard
vocabulary, so ``frictionless validate`` can check a package without this code: each locked file
is a resource with its path, format, ``sha256:`` hash and byte count, and rows.csv and checks.csv
carry a Table Schema generated from the schema-as-data of :mod:`analysis.evidence.schema` (types,
required, enum, minimum/maximum, pattern, primary key ``row_id`` and the foreign key
checks.row_id -> rows.row_id). Columns a producer added beyond the format (``extra:`` columns
when loaded) are declared as optional strings, in header order. The file is written by ``lock``
before the lock (so the lock pins it too) and checked against the lock by ``verify``. What only
``verify`` checks (the cross-file rules: one valid row per slot, study keys, fold records) is in
docs/EVIDENCE_FORMAT.md.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from typing import Any

from analysis.invocation import analysis_command
from analysis.safeio import SafeIOError, dumps_json, loads_json

from .depth import MAX_DEPTH, json_depth
from .errors import Problem
from .schema import BOOL, CHARSETS, CHECKS_COLUMNS, CHECKS_FILE, INT, ROWS_COLUMNS, ROWS_FILE, Column

DATAPACKAGE_NAME = "datapackage.json"
PROFILE = "https://datapackage.org/profiles/2.0/datapackage.json"
TABLE_SCHEMAS: dict[str, tuple[Column, ...]] = {ROWS_FILE: ROWS_COLUMNS, CHECKS_FILE: CHECKS_COLUMNS}
_FORMATS: dict[str, tuple[str, str]] = {
    "csv": ("csv", "text/csv"), "toml": ("toml", "application/toml"), "json": ("json", "application/json"),
    "jsonl": ("jsonl", "application/jsonl"), "md": ("md", "text/markdown"), "txt": ("txt", "text/plain"),
    "html": ("html", "text/html"),
}
_TYPES = {INT: "integer", BOOL: "boolean"}
FINDINGS_FILE = "findings.csv"
FINDINGS_FIELDS: tuple[tuple[str, str], ...] = (
    ("id", "claim id of data/published/claims.yaml the finding is about"),
    ("status", "what the default reading gives for the claim (e.g. 'reachable under a choice', 'inconsistent')"),
    ("note", "why: the arithmetic behind the status"),
)
"""The columns of a reconstruction's findings.csv (analysis.reconstruct.build.findings_table), in order."""
DEFAULT_VERSION = "1.0.0"
"""The descriptor's ``version`` when the package has none yet (a re-lock keeps the one a producer set)."""
DEFAULT_LICENSES: tuple[dict[str, str], ...] = (
    {"name": "MIT", "path": "https://opensource.org/license/mit",
     "title": "MIT License (compaction-carriers' licence; set your own in datapackage.json, a re-lock keeps it)"},)
"""The descriptor's ``licenses`` when the package has none yet: the licence of this repository, under which
its shipped packages are distributed; a producer who licenses their evidence otherwise edits the
``licenses`` of datapackage.json and re-locks (the lock keeps it)."""


def _field(column: Column) -> dict[str, Any]:
    field: dict[str, Any] = {"name": column.name, "type": _TYPES.get(column.kind, "string")}
    if column.doc:
        field["description"] = column.doc
    if column.kind == BOOL:  # the format's only spellings (analysis.evidence.writer.format_cell)
        field["trueValues"], field["falseValues"] = ["true"], ["false"]
    constraints: dict[str, Any] = {"required": column.required}
    if column.minimum is not None:
        constraints["minimum"] = column.minimum
    if column.maximum is not None:
        constraints["maximum"] = column.maximum
    if column.allowed is not None:
        constraints["enum"] = list(column.allowed)
    if column.charset is not None:
        constraints["pattern"] = CHARSETS[column.charset][0]
    field["constraints"] = constraints
    return field


def _header(data: bytes) -> list[str]:
    first = data.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    return next(csv.reader(io.StringIO(first)), [])


def _other_table_schema(name: str, data: bytes) -> dict[str, Any]:
    """The Table Schema of a CSV other than rows.csv and checks.csv: findings.csv's declared columns (id unique
    and required), any other column (or any other CSV's) an optional string, in header order."""
    known = dict(FINDINGS_FIELDS) if name == FINDINGS_FILE else {}
    fields = [{"name": h, "type": "string",
               "description": known.get(h, "column of a file outside the format's tables"),
               "constraints": {"required": h == "id" and bool(known),
                               **({"unique": True} if h == "id" and known else {})}}
              for h in _header(data)]
    return {"fields": fields, "missingValues": [""]}


def table_schema(name: str, data: bytes) -> dict[str, Any]:
    """The Table Schema of a locked CSV, fields in the order of the file's header: rows.csv and checks.csv
    from the schema-as-data, findings.csv from FINDINGS_FIELDS, any other CSV as optional strings."""
    if name not in TABLE_SCHEMAS:
        return _other_table_schema(name, data)
    declared = {c.name: c for c in TABLE_SCHEMAS[name]}
    fields = [_field(declared[h]) if h in declared
              else {"name": h, "type": "string", "description": "extra column (not in the format)",
                    "constraints": {"required": False}}
              for h in _header(data)]
    schema: dict[str, Any] = {"fields": fields, "missingValues": [""]}
    if name == ROWS_FILE:
        schema["primaryKey"] = ["row_id"]
    else:
        schema["foreignKeys"] = [{"fields": ["row_id"], "reference": {"resource": "rows", "fields": ["row_id"]}}]
    return schema


def _resource_name(path: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9._-]+", "-", path.lower().rsplit(".", 1)[0]).strip("-") or "file"
    if path in TABLE_SCHEMAS:  # the foreign key refers to rows by this name
        base = path.rsplit(".", 1)[0]
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _kept(previous: Mapping[str, Any] | None, key: str, default: Any) -> Any:
    """``previous[key]`` when an earlier descriptor set a well-formed one, else ``default``."""
    value = (previous or {}).get(key)
    if key == "version" and isinstance(value, str) and value.strip():
        return value
    if key == "licenses" and isinstance(value, list) and value and all(
            isinstance(x, dict) and (isinstance(x.get("name"), str) or isinstance(x.get("path"), str)) for x in value):
        return value
    return default


def datapackage_doc(study_name: str, files: Mapping[str, bytes], digests: Mapping[str, str], *,
                    previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The datapackage.json document of a package whose locked files are ``files`` (name -> bytes).

    ``digests`` are their SHA-256 (the lock's); the tables' schemas are read from their headers (every
    CSV is a table). ``previous``: the package's earlier datapackage.json, whose ``licenses`` and
    ``version`` a re-lock keeps (defaults DEFAULT_LICENSES and DEFAULT_VERSION).
    """
    taken: set[str] = set()
    resources = []
    for path in sorted(files):
        suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
        fmt, media = _FORMATS.get(suffix, (suffix or "bin", "application/octet-stream"))
        resource: dict[str, Any] = {"name": _resource_name(path, taken), "path": path}
        # every CSV is a table with a schema; every other file (JSONL fold records too) is hashed and
        # sized as a plain file, never parsed by Frictionless
        schema = None
        if suffix == "csv":
            try:
                schema = table_schema(path, files[path])
            except (UnicodeDecodeError, csv.Error):  # no readable header: verify names the problem
                schema = None
        resource["type"] = "table" if schema is not None else "file"
        resource.update({"format": fmt, "mediatype": media, "encoding": "utf-8",
                         "hash": f"sha256:{digests[path]}", "bytes": len(files[path])})
        if schema is not None:
            resource["schema"] = schema
        resources.append(resource)
    title = study_name or "evidence package"
    return {"$schema": PROFILE, "name": _resource_name(title, set()), "title": title,
            "description": "Evidence package of the compaction-carriers format (docs/EVIDENCE_FORMAT.md); "
                           "provenance.lock pins the same files by SHA-256.",
            "version": _kept(previous, "version", DEFAULT_VERSION),
            "licenses": _kept(previous, "licenses", [dict(x) for x in DEFAULT_LICENSES]),
            "resources": resources}


def datapackage_bytes(doc: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a datapackage document (sorted keys, indent 2, trailing newline)."""
    return (dumps_json(doc, DATAPACKAGE_NAME, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def datapackage_problems(data: bytes | memoryview, locked: Mapping[str, str],
                         sizes: Mapping[str, int]) -> list[Problem]:
    """Where a locked datapackage.json disagrees with provenance.lock (``locked``: name -> sha256).

    Every locked file except the lock and datapackage.json itself must be one resource with the
    lock's hash (and, where known, its size in ``sizes``); no resource may name an unlocked file.
    """
    def problem(message: str, column: str | None = None) -> Problem:
        return Problem(DATAPACKAGE_NAME, None, column, message + f"; rewrite it with `{analysis_command()} lock DIR`")

    raw = bytes(data)
    if json_depth(raw) > MAX_DEPTH:
        return [problem(f"nested deeper than {MAX_DEPTH} levels")]
    try:
        doc = loads_json(raw, DATAPACKAGE_NAME)
    except SafeIOError as exc:
        return [problem(f"not JSON ({exc})")]
    resources = doc.get("resources") if isinstance(doc, dict) else None
    if not isinstance(resources, list):
        return [problem('must be a JSON object with a "resources" list')]
    expected = {k: v for k, v in locked.items() if k != DATAPACKAGE_NAME}
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, res in enumerate(resources):
        path = res.get("path") if isinstance(res, dict) else None
        where = f"resources[{i}]"
        if not isinstance(path, str) or path not in expected:
            problems.append(problem(f"resource {path!r} is not a file the lock names", where))
            continue
        seen.add(path)
        if res.get("hash") != f"sha256:{expected[path]}":
            problems.append(problem(f"{path}: hash {res.get('hash')!r} differs from the lock's "
                                    f"sha256:{expected[path]}", where))
        if path in sizes and res.get("bytes") != sizes[path]:
            problems.append(problem(f"{path}: bytes {res.get('bytes')!r} differs from the file's {sizes[path]}",
                                    where))
    problems.extend(problem(f"the locked file {name} has no resource") for name in sorted(set(expected) - seen))
    return problems
