"""A built table: full-precision data for CSV, a formatted view for the report, and an empty-reason.

Methods note: builders never round the data frame; rounding happens only in the display frame,
through the helpers below, so CSV stays machine-readable at full precision.
"""

from __future__ import annotations

import math
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

    @property
    def is_empty(self) -> bool:
        """True when the evidence holds nothing for this table."""
        return self.data.height == 0


def empty_table(name: str, title: str, columns: list[str], reason: str) -> TableSpec:
    """A table with no rows and a plain statement of what the evidence lacks."""
    data = pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in columns})
    return TableSpec(name, title, data, data, empty_reason=f"{NOT_IN_EVIDENCE}: {reason}")


def is_missing(x: object) -> bool:
    """None or NaN (an undefined statistic)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_num(x: object, decimals: int = 3) -> str:
    """Fixed decimals; an undefined value prints as an em dash, never as 0."""
    if is_missing(x):
        return "—"
    return f"{float(x):.{decimals}f}"  # type: ignore[arg-type]


def fmt_signed(x: object, decimals: int = 3) -> str:
    """Signed fixed decimals (``+0.135``); zero prints as ``+0.000`` like the paper."""
    if is_missing(x):
        return "—"
    v = float(x)  # type: ignore[arg-type]
    s = f"{v:+.{decimals}f}"
    return "+" + s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_mean_n(mean: object, n: object, decimals: int = 3) -> str:
    """A cell mean with its denominator: ``0.947 (n=4)``; no rows prints as an em dash."""
    if is_missing(n) or int(n) == 0:  # type: ignore[arg-type]
        return "—"
    return f"{fmt_num(mean, decimals)} (n={int(n)})"  # type: ignore[arg-type]


def fmt_pct(x: object, decimals: int = 0) -> str:
    """A fraction as a percentage (``0.81`` -> ``81%``)."""
    if is_missing(x):
        return "—"
    return f"{100 * float(x):.{decimals}f}%"  # type: ignore[arg-type]


def fmt_int(x: object) -> str:
    """An integer with thousands separators; missing prints as an em dash."""
    if is_missing(x):
        return "—"
    return f"{int(round(float(x))):,}"  # type: ignore[arg-type]


def fmt_count_of(k: object, n: object) -> str:
    """``k of n``-style count as ``k/n``."""
    if is_missing(n) or int(n) == 0:  # type: ignore[arg-type]
        return "—"
    return f"{int(k)}/{int(n)}"  # type: ignore[arg-type]


def display_frame(rows: list[dict[str, str]], columns: list[str]) -> pl.DataFrame:
    """An all-string frame with the given column order (works for zero rows)."""
    return pl.DataFrame(
        {c: pl.Series(c, [r[c] for r in rows], dtype=pl.String) for c in columns}
    )
