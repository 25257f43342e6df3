"""Issue 31, finding 11: text reaching a figure is never parsed as mathtext, and the SVG stays XML.

Every draw of analysis.figures.common (png_bytes, save) passes titles, labels, legends, annotations and
fixed tick labels through analysis.escape.figure_text first: a ``$\\x$`` from the evidence is shown as
written (no ParseFatalException), and control characters are shown as escapes (a well-formed SVG).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from analysis.escape import figure_text
from analysis.figures.common import FigureSpec, new_figure, png_bytes, save, style

HOSTILE = "$\\x$"
CONTROL = "bell\x07 and nul\x00 and esc\x1b"


def _figure():  # what a builder draws from evidence strings: title, tick labels, legend, annotation
    with style():
        fig, (ax,) = new_figure()
        ax.plot([0, 1], [0, 1], label=HOSTILE)
        ax.set_yticks([0, 1], [HOSTILE, CONTROL])
        ax.set_title(f"study {HOSTILE}")
        ax.set_xlabel(CONTROL)
        ax.annotate("$a$ $b$", (0.5, 0.5))
        ax.legend()
    return fig


def test_hostile_text_draws_as_written_and_the_svg_is_xml(tmp_path: Path) -> None:
    assert png_bytes(_figure()).startswith(b"\x89PNG")
    _png, svg = save(FigureSpec("hostile", "t", _figure(), "alt"), tmp_path)
    root = ET.fromstring(svg.read_bytes())  # well-formed: no control character reached the XML
    shown = "".join(root.itertext())
    assert f"study {HOSTILE}" in shown and HOSTILE in shown  # literal dollars, no math
    assert "bell\\x07 and nul\\x00 and esc\\x1b" in shown


@given(st.text())
def test_figure_text_is_idempotent_and_xml_legal(text: str) -> None:
    once = figure_text(text)
    assert figure_text(once) == once
    assert all(ch in "\t\n\r" or (0x20 <= ord(ch) < 0x7F or 0x9F < ord(ch) < 0xD800
                                    or 0xDFFF < ord(ch) < 0xFFFE or ord(ch) > 0xFFFF) for ch in once)
    assert "$" not in once.replace("\\$", "")  # every dollar escaped: matplotlib parses no math
