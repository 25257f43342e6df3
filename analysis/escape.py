"""Escaping at the output boundaries: every string that came from evidence passes here.

Methods note: one function per boundary, each total (any ``str`` in, safe text out) and
pure. A string from an evidence package (study name, configuration, arm, scenario, answer,
invalid reason, carrier text) is hostile: it may hold HTML, Markdown or Quarto syntax
(``{{< include >}}`` shortcodes), spreadsheet formulas or terminal control sequences.

- :func:`html`: text content or a quoted attribute value in HTML (``& < > " '``).
- :func:`markdown`: inline text in Pandoc/Quarto Markdown, including a pipe-table cell.
  Every ASCII punctuation character is backslash-escaped (Pandoc's ``all_symbols_escapable``),
  braces become character references so no ``{{<`` shortcode or ``{#id}`` attribute can
  form, line breaks become spaces, control characters are dropped.
- :func:`csv_cell`: a text cell of a CSV meant for spreadsheets; a leading ``= + - @``,
  tab or carriage return gets a ``'`` prefix (OWASP "CSV injection").
- :func:`terminal`: a message printed to a terminal; C0/C1 control characters (ESC, BEL,
  ...) and Unicode bidirectional overrides are shown as ``\\xNN``/``\\uNNNN`` escapes.
"""
from __future__ import annotations

import html as _html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_MD_BACKSLASH = frozenset("\\`*_[]<>#|!$@~^=+-.:;,\"'()&%/?")
_MD_ENTITY = {"{": "&#123;", "}": "&#125;"}
_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def html(text: str) -> str:
    """Escape ``text`` for HTML text content or a quoted attribute value."""
    return _html.escape(str(text), quote=True)


def markdown(text: str) -> str:
    """Escape ``text`` as literal inline text in Pandoc/Quarto Markdown (also in a table cell)."""
    text = _CONTROL.sub("", str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " "))
    out: list[str] = []
    for ch in text:
        if ch in _MD_ENTITY:
            out.append(_MD_ENTITY[ch])
        elif ch in _MD_BACKSLASH:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def csv_cell(text: str) -> str:
    """Neutralise a spreadsheet formula: prefix ``'`` when ``text`` starts with ``= + - @``, tab or CR."""
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_LEAD) else text


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """Make ``text`` safe to print: control characters and bidi overrides shown as escapes.

    Newlines and tabs are kept (messages span lines); everything else below U+0020, DEL,
    the C1 range and the bidirectional-override characters are rendered visibly.
    """
    return _BIDI.sub(_visible, _CONTROL.sub(_visible, str(text)))


_SCRIPT_JSON = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: object) -> str:
    """JSON text of ``value`` safe inside ``<script type="application/json">`` (HTML boundary).

    ``<``, ``>`` and ``&`` (and U+2028/U+2029) become ``\\u`` escapes, so no ``</script>`` or
    ``<!--`` can end or bend the element; ``JSON.parse`` reads the same value back.
    """
    import json

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_JSON))
