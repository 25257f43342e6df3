"""A built table: full-precision data for CSV, a formatted view for the report, and an empty-reason.

Methods note: builders never round the data frame; rounding happens only in the display frame,
through the helpers below, so CSV stays machine-readable at full precision.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import polars as pl

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


def is_missing(x: object) -> bool:
    """None or NaN (an undefined statistic)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def _present(x: float | None) -> float | None:
    """x as a float, or None when it is missing (None or NaN)."""
    return None if x is None or is_missing(x) else float(x)


def defined(x: float | None) -> float | None:
    """An estimate as results.json holds it: a float, or None where the estimator left NaN (undefined).

    Builders that render a typed estimate (``ctx.estimates``) pass its floats through here, so that their
    frames, CSV files and figures see None exactly where results.json has null (json_ready turns NaN and
    ±inf into null)."""
    v = _present(x)
    return v if v is None or math.isfinite(v) else None


def fmt_num(x: float | None, decimals: int = 3) -> str:
    """Fixed decimals; an undefined value prints as an em dash, never as 0."""
    v = _present(x)
    return "—" if v is None else f"{v:.{decimals}f}"


def fmt_signed(x: float | None, decimals: int = 3) -> str:
    """Signed fixed decimals (``+0.135``); zero prints as ``+0.000`` like the paper."""
    v = _present(x)
    if v is None:
        return "—"
    s = f"{v:+.{decimals}f}"
    return "+" + s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_mean_n(mean: float | None, n: float | None, decimals: int = 3) -> str:
    """A cell mean with its denominator: ``0.947 (n=4)``; no rows prints as an em dash."""
    count = _present(n)
    if count is None or int(count) == 0:
        return "—"
    return f"{fmt_num(mean, decimals)} (n={int(count)})"


def fmt_pct(x: float | None, decimals: int = 0) -> str:
    """A fraction as a percentage (``0.81`` -> ``81%``)."""
    v = _present(x)
    return "—" if v is None else f"{100 * v:.{decimals}f}%"


def fmt_int(x: float | None) -> str:
    """An integer with thousands separators; missing prints as an em dash."""
    v = _present(x)
    return "—" if v is None else f"{round(v):,}"


def fmt_count_of(k: float, n: float | None) -> str:
    """``k of n``-style count as ``k/n``."""
    count = _present(n)
    if count is None or int(count) == 0:
        return "—"
    return f"{int(k)}/{int(count)}"


UNDEFINED_WHY = "undefined for fewer than two values or values that do not vary"
"""Why a correlation, slope or interval prints no number (the reason every estimator of this kind shares)."""


def stated(name: str, x: float | None, text: str, why: str = UNDEFINED_WHY, eq: str = " = ") -> str:
    """``name = text`` (``eq`` joins them) when ``x`` is a number, else ``name not computed (why)``: a
    sentence never holds a dash where a number should be."""
    return f"{name} not computed ({why})" if _present(x) is None else f"{name}{eq}{text}"


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
    return f"{n:,} {plural_noun(n, singular, many)}"


DASH = "—"
"""The mark of an undefined value in a table cell (fmt_num and its kin)."""


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
