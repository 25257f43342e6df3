"""Writing the CSV files of an evidence package (the inverse of the loader's cell rules).

Methods note: one cell encoding for every producer (the v1 reconstruction, the runner):
null -> empty field, booleans -> ``true``/``false``, everything else ``str``; RFC 4180
minimal quoting, LF line ends, UTF-8 without BOM.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def format_cell(value: Any) -> str:
    """The CSV text of one value: empty for None, ``true``/``false`` for booleans."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def csv_text(columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> str:
    """A header row of ``columns`` and one line per record (missing keys are empty cells)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for record in records:
        writer.writerow([format_cell(record.get(c)) for c in columns])
    return buf.getvalue()
