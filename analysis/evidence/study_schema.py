"""study.toml's structure as a JSON Schema (Draft 2020-12), validated with ``jsonschema``.

Method: ``STUDY_SCHEMA`` is built once, as data, from the key specs of :mod:`analysis.evidence.schema`
(``STUDY_KEYS`` and the others: each key's kind maps to a fragment of ``KIND_SCHEMAS``). It states the
structural rules: required keys, types, the enum of ``[study] kind``, character sets (anchored
patterns), text lengths, integer ranges (also of the runner's ``[runner."<key>"]`` integers), non-empty
and duplicate-free arrays, and configuration key names. :func:`schema_errors` runs one compiled
validator over the whole document (``iter_errors``: every problem, not the first) and indexes the
errors by key path; :func:`kind_message` turns the errors of one key into the message users get (the
checker in :mod:`analysis.evidence.study` adds file, line and key). ``integer`` is strict here: a TOML
float such as ``2.0`` is not an integer (Draft 2020-12 would accept it). A TOML date is not a JSON
type, so the ``date`` kind has an empty fragment and is checked in code, like every rule that ties
keys together or needs the file (see analysis.evidence.study).
"""
from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .schema import (
    ARM,
    CHARSETS,
    CONFIGURATION_KEYS,
    IDENTIFIER,
    LADDER_KEYS,
    LADDER_RUNG_KEYS,
    MAX_COUNT,
    MAX_TEXT,
    PARTITION_RUN_KEYS,
    RUNNER_INT_RANGES,
    STUDY_KEYS,
    STUDY_KINDS,
    charset_problem,
)

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

Spec = Mapping[str, tuple[str, bool, str]]


def _pattern(charset: str) -> dict[str, Any]:
    # a full match: `$` alone would also match before a final newline (Python's re.search)
    return {"type": "string", "pattern": f"^(?:{CHARSETS[charset][0]})$(?!\\n)"}


KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
    "date": {"description": "a TOML date, like 2026-01-28 (not a JSON type: checked in code)"},
    "count>=0": {"type": "integer", "minimum": 0, "maximum": MAX_COUNT},
    "count>=1": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT},
    IDENTIFIER: _pattern(IDENTIFIER),
    ARM: _pattern(ARM),
    "study_kind": {"enum": list(STUDY_KINDS)},
    "identifier_list": {"type": "array", "minItems": 1, "items": _pattern(IDENTIFIER), "uniqueItems": True},
    "arm_list": {"type": "array", "minItems": 1, "items": _pattern(ARM), "uniqueItems": True},
}
"""Key kind (the first field of a key spec) -> the JSON Schema of its value."""


def toml_table_schema(spec: Spec) -> dict[str, Any]:
    """The JSON Schema of one table of study.toml from its key spec (unknown keys are allowed: warned in code)."""
    return {"properties": {key: KIND_SCHEMAS[kind] for key, (kind, _, _) in spec.items()},
            "required": [key for key, (_, required, _) in spec.items() if required]}


STUDY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "study.toml",
    "required": ["study", "configurations"],
    "properties": {
        "study": toml_table_schema(STUDY_KEYS),
        "configurations": {"propertyNames": _pattern(IDENTIFIER),
                           "additionalProperties": toml_table_schema(CONFIGURATION_KEYS)},
        "partition_runs": {"items": toml_table_schema(PARTITION_RUN_KEYS)},
        "ladder": {**toml_table_schema(LADDER_KEYS),
                   "properties": {**toml_table_schema(LADDER_KEYS)["properties"],
                                  "rung": {"additionalProperties": toml_table_schema(LADDER_RUNG_KEYS)}}},
        "runner": {"additionalProperties": {"properties": {
            name: {"type": "integer", "minimum": lo, "maximum": hi} for name, (lo, hi) in RUNNER_INT_RANGES.items()}}},
    },
}
"""The JSON Schema of study.toml. Tables are walked in code (analysis.evidence.study), which says
"must be a table" where one is not; ``properties`` and ``required`` apply only to tables."""


@functools.cache
def _validator() -> Any:
    """The compiled validator: jsonschema is imported on first use, once (about 0.1 s); the schema is
    checked against the meta-schema by the tests, not here (0.06 s)."""
    from jsonschema import Draft202012Validator, validators

    def strict_integer(_checker: Any, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    types = Draft202012Validator.TYPE_CHECKER.redefine("integer", strict_integer)
    cls = validators.extend(Draft202012Validator, type_checker=types)  # type: ignore[no-untyped-call]
    return cls(STUDY_SCHEMA)


@dataclass
class SchemaErrors:
    """The schema errors of one document, by key path."""

    errors: list[tuple[tuple[Any, ...], ValidationError]] = field(default_factory=list)
    """(absolute path, error) of every value error."""
    missing: dict[tuple[Any, ...], set[str]] = field(default_factory=dict)
    """Table path -> its required keys that are missing."""
    bad_names: dict[tuple[Any, ...], set[str]] = field(default_factory=dict)
    """Table path -> its keys whose names are outside their character set."""

    def under(self, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], ValidationError]]:
        """The errors at ``path`` or inside it (array items)."""
        n = len(path)
        return [(p, e) for p, e in self.errors if p[:n] == path]


def schema_errors(doc: Mapping[str, Any]) -> SchemaErrors:
    """Validate ``doc`` against STUDY_SCHEMA, collecting every error."""
    out = SchemaErrors()
    for error in _validator().iter_errors(doc):
        path = tuple(error.absolute_path)
        if error.validator == "required":
            out.missing.setdefault(path, set()).update(k for k in error.validator_value if k not in error.instance)
        elif "propertyNames" in error.relative_schema_path:
            out.bad_names.setdefault(path, set()).add(error.instance)
        else:
            out.errors.append((path, error))
    return out


def shown(value: Any) -> str:
    """A value for a message: short, and a huge integer by its bit length."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**40:
        return f"{'-' if value < 0 else ''}a {value.bit_length()}-bit integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_LISTS: dict[str, tuple[str, str, str]] = {
    "identifier_list": (IDENTIFIER, "must be a non-empty array of names, like [\"g1-d0-c900-f2\"]",
                        "names a rung twice; list each rung once"),
    "arm_list": (ARM, "must be a non-empty array of arm codes, like [\"j\", \"q\"]",
                 "names an arm twice; list each arm once"),
}
"""Array kinds -> (item character set, message when not a non-empty array, message for a duplicate)."""


def _list_message(kind: str, value: Any, errors: Iterable[tuple[tuple[Any, ...], ValidationError]],
                  depth: int) -> str:
    charset, not_list, twice = _LISTS[kind]
    found = list(errors)
    if any(len(p) == depth and e.validator in ("type", "minItems") for p, e in found):
        return not_list
    items = [p[depth] for p, _ in found if len(p) > depth]
    if items:
        return charset_problem(charset, value[min(items)]) or not_list
    return twice


def kind_message(kind: str, value: Any, errors: list[tuple[tuple[Any, ...], ValidationError]],
                 depth: int) -> str | None:
    """What is wrong with ``value`` of key kind ``kind``, given its schema errors (key path length
    ``depth``), or None when it is good. Dates are checked here, in code."""
    if kind == "date":
        if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
            return f"must be a TOML date written unquoted like 2026-01-28, not {value!r}"
        return None
    if not errors:
        return None
    if kind in _LISTS:
        return _list_message(kind, value, errors, depth)
    if kind == "text":
        if any(e.validator in ("type", "minLength") for _, e in errors):
            return "must be a non-empty string"
        return f"is {len(value)} characters long; keep it to {MAX_TEXT}"
    if kind in CHARSETS:
        return charset_problem(kind, value)
    if kind == "study_kind":
        return (f"must be one of {', '.join(repr(k) for k in STUDY_KINDS)} (or left out for a "
                f"study of its own), not {shown(value)}")
    low = KIND_SCHEMAS[kind]["minimum"]
    return f"must be an integer in {low}..{MAX_COUNT}, not {shown(value)}"
