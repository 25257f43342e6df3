"""Escaping at the output boundaries: every string that came from evidence passes here.

Methods note: one function per boundary, each total (any ``str`` in, safe text out) and
pure. A string from an evidence package (study name, configuration, arm, scenario, answer,
invalid reason, carrier text) is hostile: it may hold HTML, Markdown or Quarto syntax
(``{{< include >}}`` shortcodes), spreadsheet formulas or terminal control sequences.

- :func:`html`: text content or a quoted attribute value in HTML (``& < > " '``).
- :func:`markdown`: inline text in Pandoc/Quarto Markdown, including a pipe-table cell.
  Inline syntax characters are backslash-escaped (Pandoc's ``all_symbols_escapable``), and so
  are the block markers that only act at the start of a line (``-``, ``+``, ``1.``, ``:``) when
  the text opens with one, and doubled ``-``/``.`` (smart dashes, ellipses); ordinary text
  such as ``qwen/qwen3.5-9b`` or ``2026-01-28`` stays readable. Braces become character
  references so no ``{{<`` shortcode or ``{#id}`` attribute can form, line breaks become
  spaces, control characters are dropped.
- :func:`markdown_code`: an inline code span when the text can be one safely (no backtick,
  brace or control character), else :func:`markdown`.
- :func:`markdown_attribute`: a double-quoted attribute value in Pandoc/Quarto Markdown
  (``fig-alt="..."``); quotes, backslashes and braces are replaced, not escaped.
- :func:`csv_cell`: a text cell of a CSV meant for spreadsheets; a leading ``= + - @``,
  tab or carriage return gets a ``'`` prefix (OWASP "CSV injection"). :func:`csv_value`
  does the same but keeps a cell that is exactly one decimal number (``-0.225``).
- :func:`terminal`: a message printed to a terminal; C0/C1 control characters (ESC, BEL,
  ...) and Unicode bidirectional overrides are shown as ``\\xNN``/``\\uNNNN`` escapes.
"""
from __future__ import annotations

import html as _html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_MD_BACKSLASH = frozenset("\\`*_[]<>#|!$@~^&\"'")
"""Inline Markdown syntax anywhere in a line: always backslash-escaped."""
_MD_LINE_START = frozenset("-+:%(=")
"""Block syntax when it opens a line (lists, definition lists, title block, example lists)."""
_MD_REPEAT = frozenset("-.")
"""Smart punctuation when doubled (``--`` en dash, ``...`` ellipsis)."""
_MD_ORDERED = re.compile(r"[0-9]+[.)](?=\s|$)")
_MD_ENTITY = {"{": "&#123;", "}": "&#125;"}
_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def html(text: str) -> str:
    """Escape ``text`` for HTML text content or a quoted attribute value."""
    return _html.escape(str(text), quote=True)


def markdown(text: str) -> str:
    """Escape ``text`` as literal inline text in Pandoc/Quarto Markdown (also in a table cell)."""
    text = _CONTROL.sub("", str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " "))
    ordered = _MD_ORDERED.match(text)
    list_mark = ordered.end() - 1 if ordered else -1  # "2026." opening a line is an ordered list
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch in _MD_ENTITY:
            out.append(_MD_ENTITY[ch])
        elif (ch in _MD_BACKSLASH or (i == 0 and ch in _MD_LINE_START) or i == list_mark
              or (ch in _MD_REPEAT and ch in (text[i - 1:i] + text[i + 1:i + 2]))):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


_CODE_UNSAFE = re.compile(r"[`{}\x00-\x1f\x7f-\x9f\u2028\u2029]")


def markdown_code(text: str) -> str:
    """``text`` as an inline code span, or escaped plain text when a code span could be broken.

    Inside a code span backslash escapes do not work, and Quarto runs ``{{< >}}`` shortcodes even
    there, so only text free of backticks, braces and control characters is put in backticks.
    """
    text = str(text)
    if text and not _CODE_UNSAFE.search(text) and text.strip() == text:
        return f"`{text}`"
    return markdown(text)


_ATTR_MAP = str.maketrans({'"': "'", "\\": "/", "{": "(", "}": ")", "\n": " ", "\r": " "})


def markdown_attribute(text: str) -> str:
    """``text`` safe inside a double-quoted Pandoc attribute value (alt text): no quote, backslash,
    brace or control character survives (they are replaced, since attribute values are literal)."""
    return _CONTROL.sub("", str(text).translate(_ATTR_MAP))


def csv_cell(text: str) -> str:
    """Neutralise a spreadsheet formula: prefix ``'`` when ``text`` starts with ``= + - @``, tab or CR."""
    text = str(text)
    return "'" + text if text.startswith(_FORMULA_LEAD) else text


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_value(text: str) -> str:
    """:func:`csv_cell`, except that a cell which is exactly one decimal number (``-0.225``,
    ``+3``, ``1e-5``) is kept: a spreadsheet reads it as that number, never as a formula, so a
    text column that holds printed numbers stays readable as numbers."""
    text = str(text)
    return text if _DECIMAL.fullmatch(text) else csv_cell(text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """Make ``text`` safe to print: control characters and bidi overrides shown as escapes.

    Newlines and tabs are kept (messages span lines); everything else below U+0020, DEL,
    the C1 range and the bidirectional-override characters are rendered visibly.
    """
    return _BIDI.sub(_visible, _CONTROL.sub(_visible, str(text)))


_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def figure_text(text: str) -> str:
    """Make ``text`` safe for a matplotlib figure: never parsed as mathtext, and XML-legal in an SVG.

    Every unescaped ``$`` is escaped (``\\$``: matplotlib shows a literal dollar and parses no math),
    and each character XML 1.0 cannot hold (C0 controls but tab, newline and carriage return; DEL, C1,
    lone surrogates, U+FFFE/U+FFFF) is shown visibly as ``\\xNN``/``\\uNNNN``. Idempotent.
    """
    return _UNESCAPED_DOLLAR.sub(r"\\$", _NOT_XML.sub(_visible, str(text)))


_SCRIPT_JSON = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_JSON_TABLE = {ord(k): v for k, v in _SCRIPT_JSON.items()}


def script_json(value: object) -> str:
    """JSON text of ``value`` safe inside ``<script type="application/json">`` (HTML boundary).

    ``<``, ``>`` and ``&`` (and U+2028/U+2029) become ``\\u`` escapes, so no ``</script>`` or
    ``<!--`` can end or bend the element; ``JSON.parse`` reads the same value back.
    """
    import json

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_JSON_TABLE)


def terminal_line(text: str) -> str:
    """:func:`terminal`, and newlines, carriage returns and tabs shown as escapes too: for a success
    line that quotes a path, which must stay one line (a name cannot forge a second line)."""
    return terminal(str(text)).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def for_stream(text: str, stream: object) -> str:
    """``text`` as the stream's encoding can carry it: characters it cannot encode (and lone
    surrogates) become backslash escapes, so printing never raises UnicodeEncodeError."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        try:
            return text.encode(encoding, "backslashreplace").decode(encoding, "replace")
        except LookupError:
            return text.encode("ascii", "backslashreplace").decode("ascii")
    return text


def emit(text: str, stream: object, *, one_line: bool = False) -> None:
    """Print ``text`` to ``stream`` (sys.stdout or sys.stderr): control characters made visible
    (:func:`terminal`, or :func:`terminal_line` when ``one_line``), then :func:`for_stream`."""
    safe = terminal_line(text) if one_line else terminal(text)
    print(for_stream(safe, stream), file=stream, flush=True)  # type: ignore[call-overload]
