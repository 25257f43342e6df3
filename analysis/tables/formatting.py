"""How a number is printed, in every output: report prose, Markdown and HTML table cells, table notes, figure labels.

Methods note: one function per declared number kind (``KINDS``); each takes a value (a float, an int, a
numeric string, None or NaN) and returns its text. An undefined value (None or NaN) prints as ``DASH``,
never as 0; a sentence says instead why it has no number (``stated``). CSV files hold the data frame at
full precision and are never formatted. Callers: the table builders (cells and notes), the report's jinja
filters (``analysis.report.numbers``, which record every number they print and add nothing to the text)
and the ``st`` macro of the report templates (through the ``stated`` filter).

The HTML table (great_tables) receives the cells as these strings and prints them unchanged. GT's own
formatters (``fmt_number``, ``fmt_percent``, ``fmt_integer``) cannot reproduce the rules here (great_tables
1.1): they print a negative value with U+2212 where the Markdown and the prose print ``-``; ``force_sign``
leaves a value that rounds to zero unsigned (``0.000``) where the paper prints ``+0.000``; a missing
value prints as ``NaN``/``None`` (``sub_missing`` aside); and most cells are compounds of several numbers
and words (``0.947 (n=4)``, ``3/8``, ``[lo, hi]``, ``not estimable: <reason>``). So there is one path: the
strings made here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

DASH = "—"
"""The mark of an undefined value (None or NaN) in a cell or a filter's output."""

UNDEFINED_WHY = "undefined for fewer than two values or values that do not vary"
"""Why a correlation, slope or interval prints no number (the reason every estimator of this kind shares)."""


def is_missing(x: object) -> bool:
    """None or NaN (an undefined statistic)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def present(x: float | None) -> float | None:
    """``x`` as a float, or None when it is missing (None or NaN)."""
    return None if x is None or is_missing(x) else float(x)


def fmt_num(x: float | None, decimals: int = 3) -> str:
    """Kind ``num``: fixed decimals (a proportion or mean ``0.947``; a p-value at 4 decimals)."""
    v = present(x)
    return DASH if v is None else f"{v:.{decimals}f}"


def fmt_signed(x: float | None, decimals: int = 3) -> str:
    """Kind ``signed``: signed fixed decimals (an effect or correlation ``+0.135``); a value that rounds to
    zero prints as ``+0.000`` like the paper (negative zero included)."""
    v = present(x)
    if v is None:
        return DASH
    s = f"{v:+.{decimals}f}"
    return "+" + s[1:] if s.startswith("-") and float(s) == 0 else s


def fmt_pct(x: float | None, decimals: int = 0) -> str:
    """Kind ``pct``: a fraction as a percentage (``0.81`` -> ``81%``)."""
    v = present(x)
    return DASH if v is None else f"{100 * v:.{decimals}f}%"


def fmt_int(x: float | None) -> str:
    """Kind ``count``: a whole number with thousands separators (``1,534``); an int exactly, a float rounded
    to the nearest."""
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    v = present(x)
    return DASH if v is None else f"{round(v):,}" if math.isfinite(v) else f"{v}"


def fmt_points(x: float | None) -> str:
    """Kind ``pts``: a difference of fractions in percentage points, no sign or unit (``0.12`` -> ``12``)."""
    v = present(x)
    return DASH if v is None else f"{100 * v:.0f}"


def fmt_general(x: float | None) -> str:
    """Kind ``g``: the shortest form of a parameter (``0.05``, ``1e-06``, ``95``)."""
    v = present(x)
    return DASH if v is None else f"{v:g}"


KINDS: Mapping[str, Callable[..., str]] = MappingProxyType({
    "num": fmt_num, "signed": fmt_signed, "pct": fmt_pct, "count": fmt_int, "pts": fmt_points, "g": fmt_general})
"""Every number kind by its name: the report's filter of that name and the table cells format through it."""


def formatted(kind: str, x: float | None, decimals: int | None = None) -> str:
    """``x`` printed as the number kind ``kind`` (a key of KINDS), with ``decimals`` where the kind takes them."""
    fmt = KINDS[kind]
    return fmt(x) if decimals is None else fmt(x, decimals)


def fmt_interval(lo: float | None, hi: float | None, kind: str = "num", decimals: int | None = None) -> str:
    """An interval ``[lo, hi]``, each end printed as ``kind``."""
    return f"[{formatted(kind, lo, decimals)}, {formatted(kind, hi, decimals)}]"


def fmt_mean_n(mean: float | None, n: float | None, decimals: int = 3) -> str:
    """A cell mean with its denominator: ``0.947 (n=4)``; no rows prints as a dash."""
    count = present(n)
    if count is None or int(count) == 0:
        return DASH
    return f"{fmt_num(mean, decimals)} (n={int(count)})"


def fmt_count_of(k: float, n: float | None) -> str:
    """``k of n`` as ``k/n``; no denominator prints as a dash."""
    count = present(n)
    if count is None or int(count) == 0:
        return DASH
    return f"{int(k)}/{int(count)}"


def stated(name: str, x: float | None, text: str, why: str = UNDEFINED_WHY, eq: str = " = ") -> str:
    """``name = text`` (``eq`` joins them) when ``x`` is a number, else ``name not computed (why)``: a
    sentence never holds a dash where a number should be."""
    return f"{name} not computed ({why})" if present(x) is None else f"{name}{eq}{text}"
