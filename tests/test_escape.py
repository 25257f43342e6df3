"""The output-boundary escapers (analysis/escape.py): hand cases and hypothesis invariants."""
from __future__ import annotations

import html as std_html

from hypothesis import given
from hypothesis import strategies as st

from analysis import escape


def test_html_escapes_markup_and_quotes() -> None:
    assert escape.html('<script>alert("x")</script>') == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    assert escape.html("<img src=x onerror='y'>") == "&lt;img src=x onerror=&#x27;y&#x27;&gt;"


def test_markdown_breaks_shortcodes_html_and_table_cells() -> None:
    out = escape.markdown("{{< include /etc/passwd >}}")
    assert "{{<" not in out and "{" not in out
    assert escape.markdown("a|b") == "a\\|b"
    assert escape.markdown("<b>x</b>") == "\\<b\\>x\\</b\\>"
    assert escape.markdown("line1\nline2") == "line1 line2"
    assert escape.markdown("@fig-x") == "\\@fig-x"
    assert escape.markdown("2026-01-28 qwen/qwen3.5-9b") == "2026-01-28 qwen/qwen3.5-9b"
    assert escape.markdown("- item") == "\\- item" and escape.markdown("1. x") == "1\\. x"
    assert escape.markdown("a--b...") == "a\\-\\-b\\.\\.\\."
    assert escape.markdown("plain text 123") == "plain text 123"


@given(st.text())
def test_markdown_leaves_no_unescaped_syntax(text: str) -> None:
    out = escape.markdown(text)
    assert "\n" not in out and "{" not in out and "}" not in out
    # every markup character is preceded by a backslash (an escaped backslash pairs up)
    out = out.replace("&#123;", "").replace("&#125;", "")  # brace character references
    i = 0
    while i < len(out):
        if out[i] == "\\":
            i += 2
            continue
        assert out[i] not in "<>|`*_[]#@$", (text, out)
        i += 1


def test_csv_cell_neutralises_formulas_only() -> None:
    assert escape.csv_cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    for lead in ("+1", "-1+2", "@SUM(A1)", "\tx", "\rx"):
        assert escape.csv_cell(lead).startswith("'")
    assert escape.csv_cell("qwen/qwen3.5-9b") == "qwen/qwen3.5-9b"


def test_terminal_shows_control_sequences() -> None:
    assert escape.terminal("a\x1b[31mred\x07") == "a\\x1b[31mred\\x07"
    assert escape.terminal("two\nlines\tok") == "two\nlines\tok"
    assert escape.terminal("x\u202ey") == "x\\u202ey"


@given(st.text())
def test_terminal_output_has_no_control_characters(text: str) -> None:
    out = escape.terminal(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)


@given(st.text())
def test_html_round_trips(text: str) -> None:
    assert std_html.unescape(escape.html(text)) == text


def test_csv_value_keeps_plain_numbers_only() -> None:
    for number in ("-0.225", "+3", "-1e-5", "12", ".5", "-2."):
        assert escape.csv_value(number) == number
    for formula in ("-1+1", "=1", "+A1", "-0.2;cmd", "-inf", "@x", "\t1", "-1 ", "- 1"):
        assert escape.csv_value(formula) == "'" + formula
    assert escape.csv_value("plain") == "plain"


@given(st.text())
def test_csv_value_never_leaves_a_formula_lead_except_on_a_number(text: str) -> None:
    out = escape.csv_value(text)
    if out.startswith(("=", "+", "-", "@", "\t", "\r")):
        float(out)  # only a plain decimal number keeps its sign
    assert out in (text, "'" + text)


def test_markdown_code_uses_backticks_only_when_safe() -> None:
    assert escape.markdown_code("data/v1") == "`data/v1`"
    assert escape.markdown_code("smollm2-135m-instruct") == "`smollm2-135m-instruct`"
    assert escape.markdown_code("a`b") == escape.markdown("a`b")  # a backtick would end the span
    assert "{" not in escape.markdown_code("{{< include x >}}")  # Quarto runs shortcodes in code too
    assert escape.markdown_code("") == ""


@given(st.text())
def test_markdown_code_is_a_plain_span_or_escaped_text(text: str) -> None:
    out = escape.markdown_code(text)
    if out.startswith("`") and out.endswith("`") and len(out) >= 2:
        inner = out[1:-1]
        assert inner == text and not any(c in inner for c in "`{}\n\r")
    else:
        assert out == escape.markdown(text)


@given(st.text())
def test_markdown_attribute_has_no_quote_backslash_brace_or_newline(text: str) -> None:
    out = escape.markdown_attribute(text)
    assert not any(c in out for c in '"\\{}\n\r')


@given(st.recursive(st.text() | st.integers() | st.booleans() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20))
def test_script_json_round_trips_and_cannot_close_the_element(value: object) -> None:
    import json

    from analysis.escape import script_json

    text = script_json(value)
    assert json.loads(text) == value
    assert "<" not in text and ">" not in text and "&" not in text


def test_script_json_neutralises_a_closing_tag() -> None:
    from analysis.escape import script_json

    assert script_json({"c": "</script><script>alert(1)</script>"}) == \
        '{"c":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"}'


def test_emit_escapes_what_the_stream_cannot_carry() -> None:
    import io

    from analysis.escape import emit

    buf = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    emit("R* ± 2 \ud800 ok", buf)
    buf.flush()
    assert buf.buffer.getvalue() == b"R* \\xb1 2 \\ud800 ok\n"  # type: ignore[attr-defined]

