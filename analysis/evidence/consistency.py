"""Rules across rows, checks and study (the end of the format contract).

Method: each rule is one vectorised polars query that returns the offending
row indices; indices are turned into physical lines only for those rows.
Cells that failed conversion are null and never trigger a rule on their own.
Memory: rules read narrow frames (the columns they need); repeated keys and
matching row ids are found from sorted 64-bit hashes and confirmed on the
strings, so no hash table of every id is built (a million rows and 14 million
checks verify within bench_load's memory target).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from .csvscan import MAX_PER_RULE, capped
from .errors import Problem
from .ladder import check_rungs
from .loader import ParsedCsv
from .schema import CHECKS_FILE, ROWS_FILE
from .study import ParsedStudy

SLOT = ("scenario", "configuration", "execution_group", "repeat", "arm")
_I = "__index"


def _emit(problems: list[Problem], hits: pl.DataFrame, lines: np.ndarray, file: str, column: str,
          what: str, message: Callable[[dict[str, Any]], str]) -> None:
    """One problem per hit row (capped); ``message`` maps a hit dict to text."""
    total = hits.height
    found = [Problem(file, int(lines[h[_I]]), column, message(h))
             for h in hits.head(MAX_PER_RULE + 1).iter_rows(named=True)]
    capped(problems, found, file, what, total)


def _repeats(hashes: pl.Series, among: pl.Series | None) -> np.ndarray:
    """Rows of ``among`` (None: all) whose 64-bit hash occurs more than once among them (a mask).

    A superset of the rows whose key repeats, found by sorting 8-byte hashes: no hash table of
    the keys over every row. Callers run the exact test on these few rows only.
    """
    h = hashes.to_numpy()
    keep = np.ones(h.size, dtype=bool) if among is None else among.fill_null(False).to_numpy()
    sub = h[keep]
    ordered = np.sort(sub)
    again = ordered[1:][ordered[1:] == ordered[:-1]]
    out = np.zeros(h.size, dtype=bool)
    if again.size:
        out[keep] = np.isin(sub, again)
    return out


def _duplicated_ids(frame: pl.DataFrame) -> np.ndarray:
    """Rows whose non-null row_id occurs more than once in ``frame`` (numpy bool mask)."""
    rid = frame.get_column("row_id")
    cand = np.flatnonzero(_repeats(rid.hash(), rid.is_not_null()))
    out = np.zeros(frame.height, dtype=bool)
    if cand.size:
        out[cand[rid.gather(cand).is_duplicated().to_numpy()]] = True
    return out


def check_rows(rows: ParsedCsv, study: ParsedStudy, problems: list[Problem]) -> None:
    """Rules inside rows.csv and between rows.csv and study.toml (as far as it was read)."""
    # every rule reads a narrow frame of the columns it needs: no copy of the whole table
    df = rows.frame.select(*SLOT, "row_id", "valid", "checks_total").with_row_index(_I)
    lines = rows.lines
    # exact duplicate tests run only on rows whose 64-bit hash repeats (a superset of the duplicates)
    ids = df.select(_I, "row_id").filter(pl.Series(_duplicated_ids(df)))  # every repeated id's rows
    first = ids.group_by("row_id").agg(pl.col(_I).min().alias("first"))
    dup = ids.filter(~pl.col("row_id").is_first_distinct()).join(first, on="row_id")
    _emit(problems, dup.sort(_I), lines, ROWS_FILE, "row_id", "duplicate row_id",
          lambda h: f"duplicate row_id {h['row_id']!r} (first on line {lines[h['first']]}); "
                    "row ids must be unique")
    keep = pl.col("valid").fill_null(False) & pl.all_horizontal([pl.col(c).is_not_null() for c in SLOT])
    slot = pl.struct(list(SLOT))
    repeats = _repeats(df.select(SLOT).hash_rows(), df.select(keep).to_series())
    valid = df.select(_I, *SLOT, "valid").filter(pl.Series(repeats))
    twice = valid.filter(~slot.is_first_distinct())  # a later occurrence of a slot
    firsts = valid.filter(slot.is_first_distinct()).select(*SLOT, pl.col(_I).alias("first"))
    twice = twice.join(firsts, on=list(SLOT)).sort(_I)
    _emit(problems, twice, lines, ROWS_FILE, "valid", "duplicate valid row",
          lambda h: f"second valid row for slot ({', '.join(str(h[c]) for c in SLOT)}); first on line "
                    f"{lines[h['first']]}: mark the failed attempt valid=false with an invalid_reason")
    totals = (df.group_by("scenario", "checks_total").agg(pl.len().alias("n"))
              .filter(pl.col("checks_total").is_not_null() & pl.col("scenario").is_not_null())
              .sort(["scenario", "n", "checks_total"], descending=[False, True, False])
              .group_by("scenario", maintain_order=True).first()
              .select("scenario", pl.col("checks_total").alias("usual")))
    usual = pl.col("scenario").replace_strict(totals.get_column("scenario"), totals.get_column("usual"),
                                              default=None, return_dtype=pl.Int64)
    varies = (df.select(_I, "scenario", "checks_total", usual.alias("usual"))  # nulls never differ
              .filter(pl.col("checks_total") != pl.col("usual")).sort(_I))
    _emit(problems, varies, lines, ROWS_FILE, "checks_total", "varying checks_total",
          lambda h: f"checks_total {h['checks_total']} differs from {h['usual']} used by the other "
                    f"rows of scenario {h['scenario']!r}; one scenario has one number of checks")
    if study.study is not None and study.study.ladder:  # mixed or missing rungs: refused, never pooled
        check_rungs(rows.frame, lines, study.study.ladder, problems)
    arms = None if study.study is None else study.study.arms
    if arms is not None:
        undeclared = df.filter(pl.col("arm").is_not_null() & ~pl.col("arm").is_in(list(arms))).sort(_I)
        _emit(problems, undeclared, lines, ROWS_FILE, "arm", "undeclared arm",
              lambda h: f"arm {h['arm']!r} is not declared in study.toml [study] arms {list(arms)!r}; "
                        "declare it or fix the row")
    if study.configuration_keys is None:
        return
    known = sorted(study.configuration_keys)
    unknown = df.filter(pl.col("configuration").is_not_null()
                        & ~pl.col("configuration").is_in(known)).sort(_I)
    _emit(problems, unknown, lines, ROWS_FILE, "configuration", "unknown configuration",
          lambda h: f"unknown configuration {h['configuration']!r}: add "
                    f"[configurations.\"{h['configuration']}\"] to study.toml or fix the row")
    runs = pl.DataFrame(
        {"configuration": [r.configuration for r in study.partition_runs],
         "execution_group": [r.execution_group for r in study.partition_runs],
         "planned": [r.planned_repeats for r in study.partition_runs]},
        schema={"configuration": pl.String, "execution_group": pl.String, "planned": pl.Int64})
    run_key = ["configuration", "execution_group"]
    # the largest repeat of each run first (a small table); rows are joined only for runs above plan
    over = (df.group_by(run_key).agg(pl.col("repeat").max().alias("top")).join(runs, on=run_key)
            .filter(pl.col("top") > pl.col("planned")).select(*run_key, "planned"))
    above = (df.select(_I, *run_key, "repeat").join(over, on=run_key)
             .filter(pl.col("repeat") > pl.col("planned")).sort(_I))
    _emit(problems, above, lines, ROWS_FILE, "repeat", "repeat above planned",
          lambda h: f"repeat {h['repeat']} is above planned_repeats = {h['planned']} of the run "
                    f"({h['configuration']}, {h['execution_group']}); fix the repeat or the plan")


def _check_counts(cdf: pl.DataFrame, slice_rows: int = 1 << 20) -> pl.DataFrame:
    """Per row_id of checks.csv: n_checks, n_passed and bad (a passed cell failed conversion).

    Method: slice by slice, consecutive checks of one row_id (a run, found by comparing each
    id with the one before it: no hashing) are summed with numpy, then the runs are summed per
    row_id. The checks of a row are usually adjacent, so the string hash table holds about one
    entry per row, not per check. Any order of checks gives the same counts.
    """
    parts = []
    for part in cdf.iter_slices(slice_rows):
        if part.height == 0:
            continue
        rid, passed = part.get_column("row_id"), part.get_column("passed")
        starts = rid.ne_missing(rid.shift(1)).fill_null(True).to_numpy()
        starts[0] = True
        at = np.flatnonzero(starts)
        parts.append(pl.DataFrame({
            "row_id": rid.gather(at),
            "n_checks": np.diff(np.append(at, part.height)).astype(np.uint32),
            "n_passed": np.add.reduceat(passed.fill_null(False).to_numpy().astype(np.uint32), at)
            .astype(np.uint32),
            "bad": np.add.reduceat(passed.is_null().to_numpy().astype(np.uint32), at) > 0}))
    runs = pl.concat(parts) if parts else pl.DataFrame(
        schema={"row_id": pl.String, "n_checks": pl.UInt32, "n_passed": pl.UInt32, "bad": pl.Boolean})
    # an id in one run only is already counted; only ids whose hash repeats are grouped
    again = pl.Series(_repeats(runs.get_column("row_id").hash(), None))
    if not again.any():
        return runs
    return pl.concat([runs.filter(~again), runs.filter(again).group_by("row_id").agg(
        pl.col("n_checks").sum(), pl.col("n_passed").sum(), pl.col("bad").any())])


def _lookup(keys: pl.Series, table: pl.Series) -> np.ndarray:
    """For each key, the index of an equal non-null string in ``table``, or -1 (numpy int64).

    Method: the 64-bit hashes of ``table`` are sorted and each key's hash is found by binary
    search; every hit is confirmed by comparing the strings, and the rare unconfirmed ones (a
    hash collision) are resolved exactly. No hash table of the strings is built.
    """
    th, kh = table.hash().to_numpy(), keys.hash().to_numpy()
    order = np.argsort(th, kind="stable")
    sorted_h = th[order]
    out = np.full(kh.size, -1, dtype=np.int64)
    if not th.size or not kh.size:
        return out
    pos = np.minimum(np.searchsorted(sorted_h, kh), th.size - 1)
    cand = np.flatnonzero(sorted_h[pos] == kh)
    found = order[pos[cand]]
    same = (keys.gather(cand) == table.gather(found)).fill_null(False).to_numpy()
    out[cand[same]] = found[same]
    unsure = cand[~same & keys.gather(cand).is_not_null().to_numpy()]
    if unsure.size:  # another string with the same hash: look these few up exactly
        wanted = set(keys.gather(unsure).to_list())
        where: dict[str, int] = {}
        for i, value in enumerate(table.to_list()):
            if value in wanted:
                where.setdefault(value, i)
        out[unsure] = [where.get(v, -1) for v in keys.gather(unsure).to_list()]
    return out


def check_checks(rows: ParsedCsv, checks: ParsedCsv, problems: list[Problem]) -> None:
    """checks.csv against rows.csv: known row ids, counts equal checks_total/checks_passed."""
    cdf = checks.frame.select("row_id", "passed")
    rdf = rows.frame.select("row_id", "checks_total", "checks_passed").with_row_index(_I)
    # one pass over the checks' row ids: counts per id; unknown ids are found among the counts
    counts = _check_counts(cdf)
    ids = counts.get_column("row_id")
    unknown = counts.select("row_id").filter(
        ids.is_not_null() & pl.Series(_lookup(ids, rdf.get_column("row_id")) < 0))
    if unknown.height:
        orphan = cdf.select("row_id").with_row_index(_I).filter(
            pl.col("row_id").is_in(unknown.get_column("row_id").implode()))
        _emit(problems, orphan, checks.lines, CHECKS_FILE, "row_id", "unknown row_id",
              lambda h: f"row_id {h['row_id']!r} is not a row of rows.csv; remove the check or add the row")
    # rows with an outcome and a unique id; checks_passed > checks_total is already a range problem
    unique = rdf.filter(pl.col("row_id").is_not_null() & ~pl.Series(_duplicated_ids(rdf))
                        & pl.col("checks_passed").is_not_null()
                        & (pl.col("checks_passed") <= pl.col("checks_total")).fill_null(True))
    at = _lookup(unique.get_column("row_id"), ids)  # each row's counts (-1: no checks)
    hit = pl.Series(at >= 0)
    picked = counts.drop("row_id").gather(np.maximum(at, 0))
    joined = unique.with_columns(
        pl.when(hit).then(picked.get_column("n_checks")).otherwise(0).alias("n_checks"),
        pl.when(hit).then(picked.get_column("n_passed")).otherwise(0).alias("n_passed"),
        pl.when(hit).then(picked.get_column("bad")).otherwise(False).alias("bad"))
    del picked
    wrong_n = joined.filter(pl.col("checks_total").is_not_null()
                            & (pl.col("n_checks") != pl.col("checks_total"))).sort(_I)
    _emit(problems, wrong_n, rows.lines, ROWS_FILE, "checks_total", "check count",
          lambda h: f"row {h['row_id']!r} has {h['n_checks']} checks in checks.csv but checks_total "
                    f"is {h['checks_total']}; every row with an outcome lists all its checks")
    wrong_p = joined.filter(~pl.col("bad") & (pl.col("n_passed") != pl.col("checks_passed"))).sort(_I)
    _emit(problems, wrong_p, rows.lines, ROWS_FILE, "checks_passed", "passed count",
          lambda h: f"row {h['row_id']!r} has {h['n_passed']} passed checks in checks.csv but "
                    f"checks_passed is {h['checks_passed']}; make them agree")
