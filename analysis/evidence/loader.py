"""Parse rows.csv and checks.csv without type inference, then convert per schema.

Method: :mod:`csvscan` checks the structure and gives every record's physical
line; polars reads all cells as strings; each column is then checked and cast
with vectorised expressions (a regex for integers, exact ``true``/``false`` for
booleans, the schema's range). Bad cells become problems with file, line and
column; every problem is collected, none raised early.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.invocation import doc_command

from . import csvscan
from .csvscan import capped
from .errors import Problem
from .schema import BOOL, CHARSETS, INT, RULES, SCHEMAS, TEXT, Column, RowRule, charset_problem, extra_column

_INT_RE = r"^-?[0-9]{1,18}$"
_RAW = "__raw__"


@dataclass(frozen=True, slots=True)
class ParsedCsv:
    """A CSV file converted per its schema (bad cells are null)."""

    frame: pl.DataFrame
    """Schema columns in schema order with their dtypes, then extra columns as text named
    ``extra:<name>`` (schema.extra_column), so they never collide with internal names."""
    lines: np.ndarray
    """Physical 1-based start line of every row of ``frame``."""
    bad_cells: frozenset[str]
    """Columns with at least one cell that failed conversion."""


def _header_problems(file: str, header: tuple[str, ...], schema: tuple[Column, ...]) -> list[Problem]:
    problems = []
    seen: set[str] = set()
    for i, name in enumerate(header, start=1):
        if name == "":
            problems.append(Problem(file, 1, f"#{i}", "empty column name in the header; name it"))
        elif name in seen:
            problems.append(Problem(file, 1, name, "column appears twice in the header; keep one"))
        seen.add(name)
    for col in schema:
        if col.name not in seen:
            problems.append(Problem(file, 1, col.name,
                                    f"required column {col.name!r} is missing from the header"))
    return problems


def _describe(col: Column) -> str:
    if col.kind == INT:
        rng = ""
        if col.minimum is not None and col.maximum is not None:
            rng = f" in {col.minimum}..{col.maximum}"
        elif col.minimum is not None:
            rng = f" >= {col.minimum}"
        return "an integer" + rng
    if col.kind == BOOL:
        return "true or false"
    return "text"


@dataclass(slots=True)
class _Found:
    """Problems of one kind over all batches: the first MAX_PER_RULE + 1 kept, all counted."""

    what: str
    items: list[Problem]
    total: int = 0


def _convert(file: str, raw: pl.DataFrame, lines: np.ndarray, schema: tuple[Column, ...],
             findings: dict[int, _Found], quoted: bool) -> tuple[pl.DataFrame, set[str]]:
    """Cast every schema column; record empty required cells, bad types, ranges in ``findings``
    (keyed by the check's index, so batches of one file add to the same entries)."""
    if quoted:  # a quoted empty field ("") is read as "", but it is a missing value too
        raw = raw.with_columns(pl.when(pl.col(c) == "").then(None).otherwise(pl.col(c)).alias(c)
                               for c in raw.columns)
    conv: list[pl.Expr] = []
    for col in schema:
        s = pl.col(col.name)
        if col.kind == INT:
            conv.append(pl.when(s.str.contains(_INT_RE)).then(s.cast(pl.Int64, strict=False)))
        elif col.kind == BOOL:
            conv.append(pl.when(s.is_in(["true", "false"])).then(s == "true").alias(col.name))
        else:
            conv.append(s)
    known = {c.name for c in schema}
    conv += [pl.col(c).cast(pl.String).alias(extra_column(c)) for c in raw.columns if c not in known]
    typed = raw.select(conv)
    typed_cols = [c.name for c in schema if c.kind != TEXT]
    both = pl.concat([typed, raw.select(pl.col(typed_cols).name.prefix(_RAW))], how="horizontal")
    masks = []
    for col in schema:
        s, r = pl.col(col.name), pl.col((_RAW if col.kind != TEXT else "") + col.name)
        if col.required:
            masks.append((col, "empty", r.is_null()))
        if col.kind != TEXT:
            masks.append((col, "type", r.is_not_null() & s.is_null()))
        if col.charset is not None:
            pattern = CHARSETS[col.charset][0]
            masks.append((col, "charset", (r.is_not_null() & ~s.str.contains(f"^(?:{pattern})$"))
                          .fill_null(False)))
        if col.minimum is not None or col.maximum is not None:
            lo = s < col.minimum if col.minimum is not None else pl.lit(False)
            hi = s > col.maximum if col.maximum is not None else pl.lit(False)
            masks.append((col, "range", (lo | hi).fill_null(False)))
    flags = both.select([m.any().alias(f"m{i}") for i, (_, _, m) in enumerate(masks)]).row(0)
    bad_cols: set[str] = set()
    out_of_range = []
    for i, ((col, what, mask), flagged) in enumerate(zip(masks, flags, strict=True)):
        if not flagged:
            continue
        bad_cols.add(col.name)
        if what in ("range", "charset"):
            out_of_range.append(pl.when(mask).then(None).otherwise(pl.col(col.name)).alias(col.name))
        idx = both.select(mask.alias("m")).get_column("m").arg_true()
        entry = findings.setdefault(i, _Found(f"{col.name} {what}", []))
        entry.total += idx.len()
        picked = idx.head(max(0, csvscan.MAX_PER_RULE + 1 - len(entry.items))).to_list()
        values = raw.get_column(col.name).gather(picked).to_list()
        found = []
        for row, value in zip(picked, values, strict=True):
            if what == "empty":
                msg = f"empty, but {col.name} is required ({_describe(col)})"
            elif what == "type":
                msg = f"{value!r} is not {_describe(col)}"
            elif what == "charset" and col.charset is not None:  # charset masks exist only for such columns
                msg = f"{charset_problem(col.charset, value)}; rename it (see {doc_command('evidence_format')})"
            else:
                msg = f"{value} is out of range: must be {_describe(col)}"
            found.append(Problem(file, int(lines[row]), col.name, msg))
        entry.items += found
    if out_of_range:  # a value out of range or charset is not kept: the cross-file rules see it as empty
        typed = typed.with_columns(out_of_range)
    return typed, bad_cols


def _rule_problems(file: str, frame: pl.DataFrame, lines: np.ndarray, rules: tuple[RowRule, ...],
                   problems: list[Problem]) -> None:
    """Cross-column rules of one row, checked where all cells are present."""
    for rule in rules:
        if rule.kind == "le":
            left = pl.sum_horizontal([pl.col(c) for c in rule.left])
            present = pl.all_horizontal([pl.col(c).is_not_null() for c in (*rule.left, rule.right)])
            mask = present & (left > pl.col(rule.right))
        elif rule.kind == "reason":
            reason = pl.col(rule.left[0]).is_not_null()
            mask = (pl.col(rule.right) & reason) | (~pl.col(rule.right) & ~reason)
        else:  # pragma: no cover - the schema tables are fixed data
            raise ValueError(f"unknown rule kind {rule.kind!r}")
        idx = frame.select(mask.fill_null(False).alias("m")).get_column("m").arg_true()
        cols = [*rule.left, rule.right]
        picked = idx.head(csvscan.MAX_PER_RULE + 1).to_list()
        sub = frame.select(cols)[picked].rows() if picked else []
        found = [Problem(file, int(lines[i]), rule.left[0],
                         f"{rule.message} ({', '.join(f'{c}={v}' for c, v in zip(cols, vals, strict=True))})")
                 for i, vals in zip(picked, sub, strict=True)]
        capped(problems, found, file, rule.name, idx.len())


def parse_csv(file: str, raw_bytes: bytes | memoryview, problems: list[Problem],
              release: Callable[[int], None] | None = None) -> ParsedCsv | None:
    """Parse one of the package's CSV files; append problems; None if unusable.

    The records are read in batches of about csvscan.BATCH bytes, each straight from
    ``raw_bytes`` (with the header row in front) and converted before the next is read, so
    only one batch is ever held as text. ``release(end)``, when given, is called after each
    batch with the offset in ``raw_bytes`` below which nothing is read again.
    """
    schema = SCHEMAS[file]
    structure, found = csvscan.scan(raw_bytes, file)
    problems.extend(found)
    if structure is None:
        return None
    head = _header_problems(file, structure.header, schema)
    if head:
        problems.extend(head)
        return None
    data = structure.data
    header_row = data[:structure.header_end].tobytes()
    batches = structure.batches or ((structure.header_end, structure.header_end, 0),)
    frames: list[pl.DataFrame] = []
    findings: dict[int, _Found] = {}
    bad_cols: set[str] = set()
    done = 0
    for start, end, count in batches:
        try:
            raw = pl.read_csv(b"".join((header_row, data[start:end])), has_header=True,
                              infer_schema=False, quote_char='"', empty_string_is_null=True,
                              truncate_ragged_lines=False, raise_if_empty=False, encoding="utf8")
        except pl.exceptions.PolarsError as exc:  # structure was checked; keep a clean error anyway
            problems.append(Problem(file, None, None, f"cannot be parsed as CSV: {exc}".splitlines()[0]))
            return None
        if raw.height != count or tuple(raw.columns) != structure.header:
            problems.append(Problem(file, None, None,
                                    f"parsed {done + raw.height} rows but found {done + count} records; "
                                    "check quoting and line ends"))
            return None
        typed, bad = _convert(file, raw, structure.lines[done:done + count], schema, findings,
                              structure.quoted)
        del raw
        # several batches: one chunk each, not one per reader thread block; a single batch keeps
        # the reader's chunks, as a whole-file read did (float sums follow the chunks to the bit)
        frames.append(typed.rechunk() if len(batches) > 1 else typed)
        bad_cols |= bad
        done += count
        if release is not None:
            release(structure.offset + end)
    for key in sorted(findings):
        entry = findings[key]
        capped(problems, entry.items, file, entry.what, entry.total)
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=False)
    del frames
    _rule_problems(file, frame, structure.lines, RULES[file], problems)
    return ParsedCsv(frame=frame, lines=structure.lines, bad_cells=frozenset(bad_cols))
