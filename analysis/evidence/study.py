"""Parse and check study.toml (tomllib), reporting problems with line and key.

Method: tomllib parses; the structural checks (required keys, types, the kind enum, character sets,
lengths, integer ranges) are the JSON Schema of :mod:`analysis.evidence.study_schema`, validated once
with ``jsonschema`` (every error). A small line scanner maps every table header and key to its line
so each problem is reported where it is, with its fix. Kept as code, because JSON Schema cannot state
them or they need the file: the TOML size limits before parsing (nesting depth, dotted-key length),
integers beyond 64 bits and NaN/inf anywhere, dates (a TOML date is not a JSON type), the rules that
tie keys together (control differs from treatment and both are declared arms; a partition run names a
declared configuration, at most one run per configuration; the planned-slot total; the ladder's rung
tables and scenarios; kind = "simulation" iff a [simulation] table whose truth matches its digest; a
simulated trace is never relabelled), and the warnings for unknown keys (:class:`StudyWarning`).
"""
from __future__ import annotations

import math
import re
import tomllib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from analysis.safeio import TOML_INT_MAX, TOML_INT_MIN

from .depth import MAX_DEPTH, MAX_KEY_PARTS, toml_depth
from .errors import Problem, StudyWarning
from .ladder import parse_ladder
from .model import Configuration, PartitionRun, Study
from .schema import (
    CONFIGURATION_KEYS,
    IDENTIFIER,
    MAX_PLANNED_SLOTS,
    PARTITION_RUN_KEYS,
    RUNNER_INT_RANGES,
    STUDY_FILE,
    STUDY_KEYS,
    charset_problem,
)
from .study_schema import kind_message, schema_errors, shown

_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)"""
                  r"""(?:\s*\.\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=\s*""")
_PART = re.compile(r""""((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+)""")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
TOP_KEYS = ("study", "configurations", "partition_runs", "ladder", "simulation")
EXTENSION_KEYS = ("runner", "preregistration")
"""Top-level tables this project's own producers write (the runner's pins and request shape):
known, kept out of the analysis, and not warned about."""


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(a or b or c for a, b, c in _PART.findall(dotted))


def _long_key(text: str) -> int | None:
    """1-based line of the first key or table name with more than MAX_KEY_PARTS dotted parts."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.count(".") < MAX_KEY_PARTS:
            continue
        m = _HEADER.match(line)
        k = _KEY.match(line)
        name = k.group(1) if k else m.group(2) if m else None
        if name is not None and len(_parts(name)) > MAX_KEY_PARTS:
            return number
    return None


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Map key paths (tables and keys; array tables get an index) to 1-based lines."""
    where: dict[tuple[Any, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}
    current: tuple[Any, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m and not _KEY.match(line):
            name = _parts(m.group(2))
            if m.group(1) == "[[":
                idx = counts.get(name, 0)
                counts[name] = idx + 1
                current = (*name, idx)
            else:
                current = name
            where.setdefault(current, number)
            continue
        k = _KEY.match(line)
        if k:
            where.setdefault((*current, *_parts(k.group(1))), number)
    return where


def _path_text(path: tuple[Any, ...]) -> str:
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out[-1] += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            out.append(part)
        else:
            out.append(f'"{part}"')
    return ".".join(out)


class _Checker:
    """Collects problems and warnings for one study.toml."""

    def __init__(self, text: str, doc: dict[str, Any]) -> None:
        self.lines = key_lines(text)
        self.schema = schema_errors(doc)
        self.problems: list[Problem] = []

    def line(self, path: tuple[Any, ...]) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def problem(self, path: tuple[Any, ...], message: str) -> None:
        self.problems.append(Problem(STUDY_FILE, self.line(path), _path_text(path), message))

    def warn_unknown(self, path: tuple[Any, ...]) -> None:
        line = self.line(path)
        where = STUDY_FILE if line is None else f"{STUDY_FILE}:{line}"
        warnings.warn(f"{where}: unknown key {_path_text(path)} is ignored", StudyWarning, stacklevel=4)

    def table(self, path: tuple[Any, ...], value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"must be a table, not {type(value).__name__}")
            return None
        return value

    def keys(self, path: tuple[Any, ...], table: dict[str, Any],
             spec: dict[str, tuple[str, bool, str]]) -> dict[str, Any]:
        """Check a table against a key spec (its schema errors); return the good values."""
        good: dict[str, Any] = {}
        missing = self.schema.missing.get(path, set())
        for key, (kind, _, _) in spec.items():
            if key not in table:
                if key in missing:
                    self.problem((*path, key), f"required key {key!r} is missing; add it")
                continue
            err = kind_message(kind, table[key], self.schema.under((*path, key)), len(path) + 1)
            if err:
                self.problem((*path, key), err)
            else:
                good[key] = table[key]
        for key in table:
            if key not in spec:
                self.warn_unknown((*path, key))
        return good


@dataclass(frozen=True, slots=True)
class ParsedStudy:
    """study.toml as far as it could be read."""

    study: Study | None
    """The study, or None when there are problems."""
    problems: list[Problem]
    """Every problem found."""
    configuration_keys: frozenset[str] | None
    """Keys of ``[configurations]`` (even when a table is faulty); None if unreadable."""
    partition_runs: tuple[PartitionRun, ...]
    """The well-formed partition runs."""


def parse_study(data: bytes) -> ParsedStudy:
    """Parse study.toml bytes into a :class:`Study`, collecting every problem."""
    study, problems, keys, runs = _parse(data)
    return ParsedStudy(study, problems, keys, runs)


def _parse(data: bytes) -> tuple[Study | None, list[Problem], frozenset[str] | None,
                                 tuple[PartitionRun, ...]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, [Problem(STUDY_FILE, line, None, f"not UTF-8 ({exc.reason}); save it as UTF-8")], \
            None, ()
    depth, line = toml_depth(data)
    if depth > MAX_DEPTH:
        return None, [Problem(STUDY_FILE, line, None, f"arrays or inline tables nested deeper than "
                              f"{MAX_DEPTH} levels; flatten them")], None, ()
    long_key = _long_key(text)
    if long_key is not None:
        return None, [Problem(STUDY_FILE, long_key, None, f"a dotted key or table name with more than "
                              f"{MAX_KEY_PARTS} parts; shorten it (quote a key that contains dots)")], None, ()
    try:
        doc = tomllib.loads(text)
    except (RecursionError, MemoryError):
        return None, [Problem(STUDY_FILE, None, None, "nested too deeply to parse; flatten the tables")], \
            None, ()
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_POS.search(str(exc))
        at: tuple[int, str] | tuple[None, None] = (int(m.group(1)), f"char {m.group(2)}") if m else (None, None)
        msg = _TOML_POS.sub("", str(exc)).strip()
        return None, [Problem(STUDY_FILE, at[0], at[1],
                              f"not valid TOML: {msg} (dates are unquoted, like 2026-01-28)")], \
            None, ()
    except ValueError:  # after TOMLDecodeError (a ValueError too): e.g. an integer of over 4300 digits
        return None, [Problem(STUDY_FILE, None, None, "holds a value TOML cannot represent (an integer "
                              "beyond 64 bits); write a smaller one")], None, ()
    c = _Checker(text, doc)
    _door_values(c, doc)
    for key in doc:
        if key not in TOP_KEYS and key not in EXTENSION_KEYS:
            c.warn_unknown((key,))
    head: dict[str, Any] = {}
    if "study" in c.schema.missing.get((), ()):
        c.problem(("study",), "the [study] table is missing; add it")
    elif (table := c.table(("study",), doc["study"])) is not None:
        head = c.keys(("study",), table, STUDY_KEYS)
        _contrast_rules(c, head)
    configurations: dict[str, Configuration] = {}
    confs = doc.get("configurations")
    if "configurations" in c.schema.missing.get((), ()):
        c.problem(("configurations",), "no [configurations.\"...\"] table; add one per configuration")
    elif (conf_table := c.table(("configurations",), confs)) is not None:
        for key, value in conf_table.items():
            path: tuple[Any, ...] = ("configurations", key)
            if key in c.schema.bad_names.get(("configurations",), ()):
                c.problem(path, f"configuration key {charset_problem(IDENTIFIER, key)}; rename it here and in rows.csv")
                continue
            if (table := c.table(path, value)) is None:
                continue
            good = c.keys(path, table, CONFIGURATION_KEYS)
            if {"family", "published"} <= good.keys():
                configurations[key] = Configuration(key, good["family"], good["published"],
                                                    good.get("provider"), good.get("quantization"))
    runs: list[PartitionRun] = []
    raw_runs = doc.get("partition_runs", [])
    if not isinstance(raw_runs, list):
        c.problem(("partition_runs",), "must be an array of tables written [[partition_runs]]")
        raw_runs = []
    seen: dict[str, int] = {}
    for i, value in enumerate(raw_runs):
        path = ("partition_runs", i)
        if (table := c.table(path, value)) is None:
            continue
        good = c.keys(path, table, PARTITION_RUN_KEYS)
        conf = good.get("configuration")
        if conf is not None and isinstance(confs, dict) and conf not in confs:
            c.problem((*path, "configuration"),
                      f"unknown configuration {conf!r}: add [configurations.\"{conf}\"] or fix the key")
        elif conf is not None and conf in seen:
            c.problem((*path, "configuration"), f"configuration {conf!r} already has a partition run "
                      f"(partition_runs[{seen[conf]}]); keep at most one per configuration")
        elif conf is not None and len(good) == len(PARTITION_RUN_KEYS):
            seen[conf] = i
            runs.append(PartitionRun(conf, good["execution_group"], good["planned_repeats"]))
    planned = sum(r.planned_repeats for r in runs)
    if planned > MAX_PLANNED_SLOTS:
        c.problem(("partition_runs",), f"the partition runs plan {planned} repeats in all, above the limit "
                  f"of {MAX_PLANNED_SLOTS}; plan fewer repeats")
    ladder = parse_ladder(c, doc["ladder"]) if "ladder" in doc else ()
    truth = _simulation(c, doc.get("simulation"), head.get("kind"))
    _simulated_traces(c, doc, head.get("kind"), configurations)
    keys = frozenset(confs) if isinstance(confs, dict) else None
    if c.problems:
        return None, c.problems, keys, tuple(runs)
    study = Study(head["name"], head["recency_cutoff"], head["control"], head["treatment"],
                  head["scenario"], MappingProxyType(configurations), tuple(runs),
                  tuple(head["arms"]) if "arms" in head else None, head.get("kind"), ladder, truth)
    return study, [], keys, tuple(runs)


def _simulation(c: _Checker, value: Any, kind: str | None) -> Any:
    """The planted truth of ``[simulation]`` (analysis.evidence.truth), required exactly when kind = "simulation"."""
    from analysis.evidence.truth import TruthError, parse_truth

    if value is None:
        if kind == "simulation":
            c.problem(("simulation",), 'kind = "simulation" needs the [simulation] table with the truth file; '
                      "the simulated runner writes it (python -m analysis.runner simulate)")
        return None
    if kind != "simulation":
        c.problem(("simulation",), 'a [simulation] table belongs to a package of kind = "simulation"; a '
                  "simulated package is never relabelled as a real run")
        return None
    if (table := c.table(("simulation",), value)) is None:
        return None
    text, digest = table.get("truth"), table.get("truth_sha256")
    if not isinstance(text, str) or not isinstance(digest, str):
        c.problem(("simulation",), "needs truth (the truth file's text) and truth_sha256; re-run the simulation")
        return None
    try:
        truth = parse_truth(text.encode("utf-8", "surrogatepass"), "study.toml [simulation] truth")
    except TruthError as exc:
        c.problem(("simulation", "truth"), str(exc))
        return None
    if truth.sha256 != digest:
        c.problem(("simulation", "truth_sha256"), f"is not the SHA-256 of truth ({truth.sha256[:12]}...); the "
                  "truth text was edited: re-run the simulation")
        return None
    for key in table:
        if key not in ("truth", "truth_sha256", "truth_file"):
            c.warn_unknown(("simulation", key))
    return truth


def _simulated_traces(c: _Checker, doc: dict[str, Any], kind: Any, confs: Mapping[str, Configuration]) -> None:
    """Refuse a package that a simulation wrote (``[runner.<conf>] simulated_truth_sha256``, a configuration of family
    "simulated") unless it says kind = "simulation" with its [simulation] table: it is never relabelled."""
    if kind == "simulation" and doc.get("simulation") is not None:
        return
    runner = doc.get("runner")
    for key, table in (runner.items() if isinstance(runner, dict) else ()):
        if isinstance(table, dict) and "simulated_truth_sha256" in table:
            c.problem(("runner", key, "simulated_truth_sha256"), "this configuration was run by the simulated "
                      'summariser: the package needs kind = "simulation" and its [simulation] table; a simulated '
                      "package is never relabelled as a real run")
    for key, conf in confs.items():
        if conf.family == "simulated":
            c.problem(("configurations", key, "family"), 'family "simulated" is the simulated summariser: the '
                      'package needs kind = "simulation" and its [simulation] table; a simulated package is never '
                      "relabelled as a real run")


def _door_values(c: _Checker, doc: dict[str, Any]) -> None:
    """What the TOML door (analysis.safeio.loads_toml) refuses, with key paths: integers beyond 64 bits,
    NaN/inf; and the documented ranges of the runner's integers (schema.RUNNER_INT_RANGES)."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and not TOML_INT_MIN <= value <= TOML_INT_MAX:
            c.problem(path, f"the integer {shown(value)} is outside TOML's 64-bit range; write a smaller one")
        elif isinstance(value, float) and not math.isfinite(value):
            c.problem(path, f"{value} is not a finite number; write one")
    runner = doc.get("runner")
    for key, table in (runner.items() if isinstance(runner, dict) else ()):
        for name, (lo, hi) in RUNNER_INT_RANGES.items():
            if isinstance(table, dict) and name in table and c.schema.under(("runner", key, name)):
                c.problem(("runner", key, name), f"{name} is {shown(table[name])}, not an integer in {lo}..{hi}; "
                                                 "write the value the endpoint really has, then re-lock")


def _contrast_rules(c: _Checker, head: dict[str, Any]) -> None:
    """Cross-key rules of [study]: control differs from treatment; both are declared arms."""
    control, treatment, arms = head.get("control"), head.get("treatment"), head.get("arms")
    if control is not None and control == treatment:
        c.problem(("study", "treatment"), f"treatment is the control arm {control!r}; the primary "
                  "contrast needs two different arms")
    for key, arm in (("control", control), ("treatment", treatment)):
        if arm is not None and arms is not None and arm not in arms:
            c.problem(("study", key), f"{key} arm {arm!r} is not in study.arms {arms!r}; declare it")
