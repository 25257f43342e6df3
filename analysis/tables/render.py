"""Render a TableSpec to CSV (full precision), Markdown (report) and HTML (great_tables).

Methods note: renderers are deterministic (no timestamps, fixed table ids) so rendered tables
can be golden files and ``generate.py --check`` can diff them byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Iterator

import polars as pl

from analysis import escape
from analysis.tables.spec import TableSpec, anchor_id


def _csv_frame(data: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) flattened to text so CSV stays one value per cell; every
    text cell then passes escape.csv_value (a leading = + - @ tab or CR gets a ' prefix, so a
    spreadsheet shows a hostile configuration name as text, not a formula). Numbers stay numbers,
    in numeric columns and as a whole-cell decimal like ``-0.225`` in a text column."""
    fixes = []
    for name, dtype in data.schema.items():
        if isinstance(dtype, pl.List):
            fixes.append(pl.col(name).list.eval(pl.element().cast(pl.String)).list.join(";"))
        elif isinstance(dtype, pl.Struct):
            fixes.append(pl.col(name).struct.json_encode())
    flat = data.with_columns(fixes) if fixes else data
    text = [name for name, dtype in data.schema.items()
            if _is_text(dtype) or (isinstance(dtype, pl.List) and _is_text(dtype.inner))]
    return flat.with_columns(pl.col(name).cast(pl.String).map_elements(escape.csv_value, return_dtype=pl.String)
                             for name in text) if text else flat


def _is_text(dtype: object) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def to_csv(spec: TableSpec) -> str:
    """Full-precision CSV of the data frame (header only when the evidence has no rows)."""
    buf = io.StringIO()
    _csv_frame(spec.data).write_csv(buf, float_precision=None, line_terminator="\n")
    return buf.getvalue()


_PLAIN_NUMBER = re.compile(r"(?:[0-9+\-−.,%()/ —]|n=)*")
"""A cell made only of digits, signs, separators and ``(n=…)``: no Markdown syntax can form in it."""


def _cell(text: object) -> str:
    """A Markdown table cell: evidence text escaped (analysis.escape.markdown); plain numbers as is."""
    text = str(text)
    return text if _PLAIN_NUMBER.fullmatch(text) else escape.markdown(text)


_NUMERIC_CELL = re.compile(r"[+\-−]?[0-9][0-9,]*(?:\.[0-9]+)?%?(?:/[0-9,]+)?(?: \((?:n=)?[0-9.,%]+\))?|—|")
"""A cell that reads as a number: ``+0.135``, ``81%``, ``0/56``, ``0.947 (n=4)``, ``4 (4)``, an em dash or empty."""
WIDTH_CAP = 90
"""Widest relative share (in characters of content) a column's dashes may claim."""
WORD_CAP = 24
"""A single unbreakable token longer than this wraps rather than widening its column further."""


def numeric_column(cells: list[str]) -> bool:
    """A column whose every cell reads as a number (and at least one holds a digit): right-aligned."""
    return any(any(ch.isdigit() for ch in c) for c in cells) and all(_NUMERIC_CELL.fullmatch(c) for c in cells)


def column_weight(header: str, cells: list[str]) -> int:
    """How many characters wide a column wants: its longest word (header included, so a header wraps
    between words, never inside one), or the length of its typical long cell (the 90th percentile,
    capped at WIDTH_CAP) when that is wider. Pipe-table dashes carry it as the relative width."""
    words = [len(w) for text in (header, *cells) for w in text.split()] or [1]
    lengths = sorted(len(c) for c in cells) or [0]
    typical = lengths[min(len(lengths) - 1, int(0.9 * len(lengths)))]
    return max(3, min(max(words), WORD_CAP), min(typical, WIDTH_CAP))


_ATOM_NUMBER = re.compile(r"[^A-Za-z]*|[^A-Za-z]*\(n=[0-9,]+\)")
"""A cell of digits, signs, separators and brackets, perhaps with its ``(n=…)``: ``0.161 (n=4)``,
``[0.025, 0.584]``, ``0/3 (0.000)``."""
ATOM_NUMBER_CAP = 22
"""A numeric cell up to this many characters reads as one unit (a number with its n, an interval)."""
ATOM_WORD_CAP = 48
"""A one-word cell (a model, rung or configuration id, a date) up to this long never breaks."""
_BREAKABLE = re.compile(r"[\s\-/‐–—,]")
"""Where a browser may end a line inside a cell: spaces, hyphens and dashes, slashes, commas."""


def atom(text: str) -> bool:
    """Whether a cell is one unit that must stay on one line (issue 34): a short numeric cell, or one word
    such as ``qwen/qwen3.6-35b-a3b`` or ``2024-09-25`` that a browser would otherwise break at a hyphen or
    slash. A cell with nowhere to break needs no mark."""
    if not _BREAKABLE.search(text, 1):  # a sign or dash at the start is no place to break
        return False
    if len(text) <= ATOM_NUMBER_CAP and any(ch.isdigit() for ch in text) and _ATOM_NUMBER.fullmatch(text):
        return True
    return len(text) <= ATOM_WORD_CAP and not any(ch.isspace() for ch in text)


def _atom_cell(text: str) -> str:
    """A body cell: an atom wrapped in a ``nw`` span (white-space: nowrap in both renders' CSS, a Pandoc
    bracketed span Quarto reads alike), any other cell as ``_cell`` writes it."""
    return f"[{_cell(text)}]{{.nw}}" if atom(text) else _cell(text)


def _curly(text: str) -> str:
    """Typographic apostrophes and single quotes, as Pandoc's smart punctuation prints them in the prose
    (``paper’s``, ``‘appeared at a later fold’``): after a letter a closing mark, elsewhere before one an
    opening mark."""
    text = re.sub(r"(?<=\w)'", "’", text)
    return re.sub(r"'(?=\w)", "‘", text)


def separator(header: list[str], rows: list[list[str]]) -> str:
    """The pipe table's header separator: alignment markers (text left, numbers right) and dash
    counts proportional to each column's content (Pandoc and Quarto size columns by them)."""
    marks = []
    for j, name in enumerate(header):
        cells = [row[j] for row in rows]
        dashes = "-" * column_weight(name, cells)
        marks.append(dashes + ":" if numeric_column(cells) else ":" + dashes)
    return "|" + "|".join(marks) + "|"


def to_markdown(spec: TableSpec) -> str:
    """A pipe table with its reading note, or the empty-reason when the evidence holds no rows.

    Text columns are left-aligned and number columns right-aligned (explicit markers, so no
    renderer centres a cell), column widths follow the content (``separator``), atoms never wrap
    (``atom``) and the note is a ``table-note`` div after the table."""
    if spec.is_empty or spec.display.height == 0:
        return f"*{escape.markdown(_curly(spec.empty_reason or 'Not in this evidence.'))}*\n"
    cols = spec.display.columns
    rows = [["" if v is None else str(v) for v in row] for row in spec.display.iter_rows()]
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", separator(cols, rows)]
    named = cols.index(spec.anchor) if spec.anchor in cols else -1
    for row in rows:
        cells = [_atom_cell(v) for v in row]
        if named >= 0:  # the row's id on its naming cell, so prose can link to the row
            cells[named] = f"[{_cell(row[named])}]{{#{anchor_id(row[named])}}}"
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    if spec.note:  # a left-aligned note in roman type (class table-note), not a centred italic paragraph
        text += f"\n::: table-note\n{_cell(_curly(spec.note))}\n:::\n"
    return text


def to_html(spec: TableSpec) -> str:
    """A great_tables HTML fragment with a fixed id (deterministic), or a note paragraph when empty. The cells
    are the display strings as analysis.tables.formatting printed them, not GT's fmt_* (its docstring: why)."""
    from great_tables import GT  # imported here: only the tables stage pays for it

    if spec.is_empty or spec.display.height == 0:
        reason = spec.empty_reason or "Not in this evidence."
        return (f'<div class="table-empty" id="{spec.name}"><p class="table-title">{_esc(spec.title)}</p>'
                f"<p><em>{_esc(reason)}</em></p></div>\n")
    gt = GT(spec.display, id=spec.name).tab_header(title=spec.title)
    if spec.note:
        gt = gt.tab_source_note(spec.note)
    with no_shell_probe():
        return gt.as_raw_html() + "\n"


@contextlib.contextmanager
def no_shell_probe() -> Iterator[None]:
    """Spare great_tables' render-environment probe the import of IPython (about 0.4 s CPU per build).

    Before rendering, great_tables asks ``IPython.get_ipython()`` whether a terminal IPython shell is running,
    importing IPython to ask. When IPython has not been imported, no IPython shell is running, so the answer
    is already known ("default", what an ImportError also gives): for the call, ``sys.modules["IPython"]``
    is None, which makes that import fail at once; the entry is removed afterwards. Inside an IPython shell
    (IPython already imported) nothing changes. The HTML is the same either way."""
    if "IPython" in sys.modules:
        yield
        return
    sys.modules["IPython"] = None  # type: ignore[assignment]  # documented: import of a None entry raises
    try:
        yield
    finally:
        if "IPython" in sys.modules and sys.modules["IPython"] is None:
            del sys.modules["IPython"]


def _esc(text: str) -> str:
    return escape.html(text)
