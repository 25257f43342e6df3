"""Rules across rows, checks and study (the end of the format contract).

Method: each rule is one vectorised polars query that returns the offending
row indices; indices are turned into physical lines only for those rows.
Cells that failed conversion are null and never trigger a rule on their own.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from .csvscan import MAX_PER_RULE, capped
from .errors import Problem
from .loader import ParsedCsv
from .study import ParsedStudy
from .schema import CHECKS_FILE, ROWS_FILE

SLOT = ("scenario", "configuration", "execution_group", "repeat", "arm")
_I = "__index"


def _emit(problems: list[Problem], hits: pl.DataFrame, lines: np.ndarray, file: str, column: str,
          what: str, message) -> None:
    """One problem per hit row (capped); ``message`` maps a hit dict to text."""
    total = hits.height
    found = [Problem(file, int(lines[h[_I]]), column, message(h))
             for h in hits.head(MAX_PER_RULE + 1).iter_rows(named=True)]
    capped(problems, found, file, what, total)


def check_rows(rows: ParsedCsv, study: ParsedStudy, problems: list[Problem]) -> None:
    """Rules inside rows.csv and between rows.csv and study.toml (as far as it was read)."""
    # every rule reads a narrow frame of the columns it needs: no copy of the whole table
    df = rows.frame.select(*SLOT, "row_id", "valid", "checks_total").with_row_index(_I)
    lines = rows.lines
    # exact duplicate tests run only on rows whose 64-bit hash repeats (a superset of the duplicates)
    ids = df.select(_I, "row_id").filter(pl.col("row_id").is_not_null()
                                         & pl.col("row_id").hash().is_duplicated())
    dup = ids.filter(~pl.col("row_id").is_first_distinct())
    if dup.height:
        first = ids.filter(pl.col("row_id").is_in(dup.get_column("row_id").implode())) \
            .group_by("row_id").agg(pl.col(_I).min().alias("first"))
        dup = dup.join(first, on="row_id")
    else:
        dup = dup.with_columns(pl.lit(0, pl.UInt32).alias("first"))
    _emit(problems, dup.sort(_I), lines, ROWS_FILE, "row_id", "duplicate row_id",
          lambda h: f"duplicate row_id {h['row_id']!r} (first on line {lines[h['first']]}); "
                    "row ids must be unique")
    valid = df.select(_I, *SLOT, "valid").filter(
        pl.col("valid").fill_null(False) & pl.all_horizontal([pl.col(c).is_not_null() for c in SLOT]))
    slot = pl.struct(list(SLOT))
    valid = valid.filter(slot.hash().is_duplicated())
    twice = valid.filter(~slot.is_first_distinct())  # a later occurrence of a slot
    firsts = valid.filter(slot.is_first_distinct()).select(*SLOT, pl.col(_I).alias("first"))
    twice = twice.join(firsts, on=list(SLOT)).sort(_I)
    _emit(problems, twice, lines, ROWS_FILE, "valid", "duplicate valid row",
          lambda h: f"second valid row for slot ({', '.join(str(h[c]) for c in SLOT)}); first on line "
                    f"{lines[h['first']]}: mark the failed attempt valid=false with an invalid_reason")
    totals = (df.filter(pl.col("checks_total").is_not_null() & pl.col("scenario").is_not_null())
              .group_by("scenario", "checks_total").agg(pl.len().alias("n"))
              .sort(["scenario", "n", "checks_total"], descending=[False, True, False])
              .group_by("scenario", maintain_order=True).first()
              .select("scenario", pl.col("checks_total").alias("usual")))
    varies = (df.select(_I, "scenario", "checks_total").join(totals, on="scenario")
              .filter(pl.col("checks_total") != pl.col("usual")).sort(_I))
    _emit(problems, varies, lines, ROWS_FILE, "checks_total", "varying checks_total",
          lambda h: f"checks_total {h['checks_total']} differs from {h['usual']} used by the other "
                    f"rows of scenario {h['scenario']!r}; one scenario has one number of checks")
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
    above = (df.select(_I, "configuration", "execution_group", "repeat")
             .join(runs, on=["configuration", "execution_group"])
             .filter(pl.col("repeat") > pl.col("planned")).sort(_I))
    _emit(problems, above, lines, ROWS_FILE, "repeat", "repeat above planned",
          lambda h: f"repeat {h['repeat']} is above planned_repeats = {h['planned']} of the run "
                    f"({h['configuration']}, {h['execution_group']}); fix the repeat or the plan")


def _check_counts(cdf: pl.DataFrame, slice_rows: int = 1 << 20) -> pl.DataFrame:
    """Per row_id of checks.csv: n_checks, n_passed and bad (a passed cell failed conversion).

    Method: slice by slice, consecutive checks of one row_id (a run; rle_id compares neighbours,
    no hashing) are summed first, then the runs are summed per row_id. The checks of a row are
    usually adjacent, so the string hash table holds about one entry per row, not per check,
    and only one slice's runs are built at a time. Any order of checks gives the same counts.
    """
    parts = [part.with_columns(pl.col("row_id").rle_id().alias("_run")).group_by("_run").agg(
        pl.col("row_id").first(), pl.len().alias("n_checks"), pl.col("passed").sum().alias("n_passed"),
        pl.col("passed").is_null().any().alias("bad")).drop("_run")
        for part in cdf.iter_slices(slice_rows)]
    runs = pl.concat(parts) if parts else pl.DataFrame(
        schema={"row_id": pl.String, "n_checks": pl.UInt32, "n_passed": pl.UInt32, "bad": pl.Boolean})
    return runs.group_by("row_id").agg(pl.col("n_checks").sum(), pl.col("n_passed").sum(),
                                       pl.col("bad").any())


def check_checks(rows: ParsedCsv, checks: ParsedCsv, problems: list[Problem]) -> None:
    """checks.csv against rows.csv: known row ids, counts equal checks_total/checks_passed."""
    cdf = checks.frame.select("row_id", "passed")
    rdf = rows.frame.select("row_id", "checks_total", "checks_passed").with_row_index(_I)
    # one pass over the checks' row ids: counts per id; unknown ids are found among the counts
    counts = _check_counts(cdf)
    unknown = (counts.select("row_id").filter(pl.col("row_id").is_not_null())
               .join(rdf.select("row_id"), on="row_id", how="anti"))
    if unknown.height:
        orphan = cdf.select("row_id").with_row_index(_I).filter(
            pl.col("row_id").is_in(unknown.get_column("row_id").implode()))
        _emit(problems, orphan, checks.lines, CHECKS_FILE, "row_id", "unknown row_id",
              lambda h: f"row_id {h['row_id']!r} is not a row of rows.csv; remove the check or add the row")
    # rows with an outcome and a unique id; checks_passed > checks_total is already a range problem
    unique = rdf.filter(pl.col("row_id").is_not_null() & ~pl.col("row_id").is_duplicated()
                        & pl.col("checks_passed").is_not_null()
                        & (pl.col("checks_passed") <= pl.col("checks_total")).fill_null(True))
    joined = unique.join(counts, on="row_id", how="left").with_columns(
        pl.col("n_checks").fill_null(0), pl.col("n_passed").fill_null(0), pl.col("bad").fill_null(False))
    wrong_n = joined.filter(pl.col("checks_total").is_not_null()
                            & (pl.col("n_checks") != pl.col("checks_total"))).sort(_I)
    _emit(problems, wrong_n, rows.lines, ROWS_FILE, "checks_total", "check count",
          lambda h: f"row {h['row_id']!r} has {h['n_checks']} checks in checks.csv but checks_total "
                    f"is {h['checks_total']}; every row with an outcome lists all its checks")
    wrong_p = joined.filter(~pl.col("bad") & (pl.col("n_passed") != pl.col("checks_passed"))).sort(_I)
    _emit(problems, wrong_p, rows.lines, ROWS_FILE, "checks_passed", "passed count",
          lambda h: f"row {h['row_id']!r} has {h['n_passed']} passed checks in checks.csv but "
                    f"checks_passed is {h['checks_passed']}; make them agree")
