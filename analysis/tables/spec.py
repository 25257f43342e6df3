"""A built table: full-precision data for CSV, a formatted view for the report, and an empty-reason.

Methods note: builders never round the data frame; rounding happens only in the display frame,
through the number kinds of analysis.tables.formatting, so CSV stays machine-readable at full precision.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import polars as pl

from analysis.tables.formatting import DASH, fmt_int, present

NOT_IN_EVIDENCE = "Not in this evidence"


@dataclass(frozen=True, slots=True)
class TableSpec:
    """One report table."""

    name: str
    """File stem under OUT/tables/ (e.g. ``t3_panel``)."""
    title: str
    """Caption, as printed above the table."""
    data: pl.DataFrame
    """Full-precision values, written to CSV."""
    display: pl.DataFrame
    """All-string view with denominators, written to Markdown and HTML."""
    note: str = ""
    """Reading note printed under the table (methods, denominators)."""
    empty_reason: str = ""
    """Why the table has no rows in this evidence; empty when it has rows."""
    anchor: str = ""
    """A display column whose cells name their row: each gets the id ``anchor_id(cell)``, so prose can link
    to the row (the claims list: ``claims.html#claim-icc.s5.icc``); empty for none."""

    @property
    def is_empty(self) -> bool:
        """True when the evidence holds nothing for this table."""
        return self.data.height == 0


CLAIM_ANCHOR = "claim-"
"""Prefix of a row id on the claims list (``claim-<claim id>``)."""


def anchor_id(text: str, prefix: str = CLAIM_ANCHOR) -> str:
    """The HTML id of a row named ``text``: ``prefix`` + the text with every character other than a letter,
    digit, ``.``, ``_`` or ``-`` replaced by ``-`` (what a Pandoc ``{#id}`` attribute takes as is)."""
    return prefix + re.sub(r"[^A-Za-z0-9._-]", "-", text)


def empty_table(name: str, title: str, columns: list[str], reason: str) -> TableSpec:
    """A table with no rows and a plain statement of what the evidence lacks."""
    data = pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in columns})
    return TableSpec(name, title, data, data, empty_reason=f"{NOT_IN_EVIDENCE}: {reason}")


def defined(x: float | None) -> float | None:
    """An estimate as results.json holds it: a float, or None where the estimator left NaN (undefined).

    Builders that render a typed estimate (``ctx.estimates``) pass its floats through here, so that their
    frames, CSV files and figures see None exactly where results.json has null (json_ready turns NaN and
    ±inf into null)."""
    v = present(x)
    return v if v is None or math.isfinite(v) else None


def plural_noun(n: int | None, singular: str, many: str | None = None) -> str:
    """``singular`` for a count of one, else its plural (``many``, or ``singular`` + s / + es): the one
    plural rule of every text the package writes (table notes here, the report's ``plural`` filter)."""
    if n is not None and int(n) == 1:
        return singular
    if many is not None:
        return many
    return singular + ("es" if singular.endswith(("s", "x", "ch", "sh")) else "s")


def counted(n: int, singular: str, many: str | None = None) -> str:
    """``n`` with its noun in agreement: ``1 configuration``, ``3 configurations``."""
    return f"{fmt_int(n)} {plural_noun(n, singular, many)}"


def if_marked(rows: list[dict[str, str]], sentence: str, mark: str = DASH) -> str:
    """``sentence`` (a note's explanation of ``mark``) when some cell of ``rows`` holds the mark, else "": a
    note never describes a mark its table does not contain (issue 34)."""
    return sentence if any(mark in str(v) for row in rows for v in row.values()) else ""


_ZERO = re.compile(r"0(?:/[0-9,]+)?")
"""A count of none: ``0``, or ``0/56`` (none of 56)."""


def without_zero_columns(rows: list[dict[str, str]], columns: list[str],
                         optional: tuple[str, ...]) -> tuple[list[str], str]:
    """``columns`` less each ``optional`` one whose every cell is a count of none (``0``, ``0/8``), and the note's
    sentence saying so: a
    table shows no column of zeros without a reason (issue 34). The sentence is "" when none is left out."""
    zero = [c for c in optional if c in columns and rows and all(_ZERO.fullmatch(row.get(c) or "") for row in rows)]
    if not zero:
        return columns, ""
    names = " and ".join(f"‘{c}’" for c in zero)
    return [c for c in columns if c not in zero], f" {names}: 0 in every row, so not shown as a column."


def display_frame(rows: list[dict[str, str]], columns: list[str]) -> pl.DataFrame:
    """An all-string frame with the given column order (works for zero rows)."""
    return pl.DataFrame(
        {c: pl.Series(c, [r[c] for r in rows], dtype=pl.String) for c in columns}
    )
