"""The load ladder in a package: study.toml ``[ladder]`` and the rows' ``rung`` column.

Method: a package run on the runner's load ladder declares its rungs in study.toml (``[ladder]
rungs``, easiest first, and one ``[ladder.rung."<name>"]`` table per rung with its scenario and
load factors) and names the rung of every row in the runner's extra column ``rung``. Mixed or
missing rungs are refused at verify (``ConsistencyError``), never analysed silently: when a
package declares a ladder, every row must carry a declared rung whose scenario is the row's
scenario. A package without ``[ladder]`` is not a ladder package; a ``rung`` column there is an
extra column like any other and is not read.
"""
from __future__ import annotations

from typing import Any

import polars as pl

from .csvscan import capped
from .errors import Problem
from .model import LadderRung
from .schema import LADDER_KEYS, LADDER_RUNG_KEYS, ROWS_FILE, extra_column

RUNG_COLUMN = "rung"
"""The rows.csv extra column naming a row's rung (loaded as ``extra:rung``)."""


def parse_ladder(c: Any, value: Any) -> tuple[LadderRung, ...]:
    """The rungs of ``[ladder]``; problems go to the study checker ``c`` (see analysis.evidence.study)."""
    path: tuple[Any, ...] = ("ladder",)
    if (table := c.table(path, value)) is None:
        return ()
    head = c.keys(path, {k: v for k, v in table.items() if k != "rung"}, LADDER_KEYS)
    names = head.get("rungs", [])
    raw = table.get("rung", {})
    if c.table((*path, "rung"), raw) is None:
        return ()
    out: list[LadderRung] = []
    for name in names:
        rpath = (*path, "rung", name)
        if name not in raw:
            c.problem((*path, "rungs"), f"rung {name!r} has no [ladder.rung.\"{name}\"] table; add it")
            continue
        if (rt := c.table(rpath, raw[name])) is None:
            continue
        good = c.keys(rpath, rt, LADDER_RUNG_KEYS)
        if all(k in good for k, (_, req, _) in LADDER_RUNG_KEYS.items() if req):
            out.append(LadderRung(name, good["scenario"], good["graded_per_chunk"], good["distractors"],
                                  good["chunk_tokens"], good["folds"]))
    for name in raw:
        if name not in names:
            c.problem((*path, "rung", name), f"rung {name!r} is not listed in [ladder] rungs; list it or remove "
                      "its table")
    scen = [r.scenario for r in out]
    for r in out:
        if scen.count(r.scenario) > 1:
            c.problem((*path, "rung", r.name, "scenario"), f"scenario {r.scenario!r} belongs to two rungs; "
                      "give each rung its own scenario")
            break
    return tuple(out)


def check_rungs(frame: pl.DataFrame, lines: Any, ladder: tuple[LadderRung, ...], problems: list[Problem]) -> None:
    """Every row of a ladder package names a declared rung, and the rung's scenario is the row's."""
    col = extra_column(RUNG_COLUMN)
    declared = [r.name for r in ladder]
    listing = ", ".join(declared)
    if col not in frame.columns:
        problems.append(Problem(ROWS_FILE, 1, RUNG_COLUMN, f"study.toml declares a load ladder ({listing}) but "
                                "rows.csv has no rung column; add it with each row's rung, or remove [ladder]"))
        return
    scen = {r.name: r.scenario for r in ladder}
    df = frame.select("scenario", pl.col(col).alias("rung")).with_row_index("__i")
    missing = df.filter(pl.col("rung").is_null())
    unknown = df.filter(pl.col("rung").is_not_null() & ~pl.col("rung").is_in(declared))
    wrong = df.filter(pl.col("rung").is_in(declared) & pl.col("scenario").is_not_null()
                      & (pl.col("scenario") != pl.col("rung").replace_strict(scen, default=None)))
    found: list[Problem] = []
    for h in missing.head(1001).iter_rows(named=True):
        found.append(Problem(ROWS_FILE, int(lines[h["__i"]]), RUNG_COLUMN,
                             f"no rung: a ladder package names the rung of every row (declared: {listing})"))
    for h in unknown.head(1001).iter_rows(named=True):
        found.append(Problem(ROWS_FILE, int(lines[h["__i"]]), RUNG_COLUMN,
                             f"rung {h['rung']!r} is not declared in study.toml [ladder] (declared: {listing})"))
    for h in wrong.head(1001).iter_rows(named=True):
        found.append(Problem(ROWS_FILE, int(lines[h["__i"]]), RUNG_COLUMN,
                             f"rung {h['rung']!r} has scenario {scen[h['rung']]!r} in study.toml but the row's "
                             f"scenario is {h['scenario']!r}; fix one of them"))
    found.sort(key=lambda p: p.line or 0)
    capped(problems, found, ROWS_FILE, "rung", missing.height + unknown.height + wrong.height)
