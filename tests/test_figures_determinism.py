"""Figures: deterministic bytes, one style, empty evidence handled, residuals agree with results.json."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib
import pytest

from analysis.figures.common import style
from analysis.figures.headings import residual_slope
from analysis.figures.registry import FIGURE_ORDER, build_figures, write_figures
from analysis.style import MATPLOTLIBRC, OKABE_ITO
from report_support import context, handmade


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """``write_figures(build_figures(context()), DIR)`` on the hand-made package, drawn once for this module."""
    return write_figures(build_figures(context()), tmp_path_factory.mktemp("figures"))


def test_two_renders_are_byte_identical(tmp_path: Path, rendered: list[Path]) -> None:
    a = rendered
    b = write_figures(build_figures(context()), tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    assert len(a) == 2 * len(FIGURE_ORDER) + 1  # PNG + SVG each, plus index.json
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes(), pa.name


def test_svg_and_png_carry_no_date_or_software(rendered: list[Path]) -> None:
    for p in rendered:
        if p.suffix == ".svg":
            text = p.read_text(encoding="utf-8")
            assert "<dc:date>" not in text and "Matplotlib v" not in text
        if p.suffix == ".png":
            assert b"Software" not in p.read_bytes()[:4096]


def test_style_file_pins_agg_and_okabe_ito() -> None:
    text = MATPLOTLIBRC.read_text(encoding="utf-8")
    assert "backend: Agg" in text and "svg.hashsalt" in text
    with style():
        cycle = [c.lower() for c in matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]]
    assert cycle[:6] == [OKABE_ITO[k].lower() for k in ("blue", "orange", "green", "purple", "sky", "vermillion")]


def test_residual_slope_agrees_with_results_json() -> None:
    # The residual plot demeans within cells exactly like analysis.estimators.headings.within_cell.
    # Hand derivation (rows.csv): informative cells are the j cells only. g1 (x 5,0,1; y 1,0,.5)
    # -> x~ 3,-2,-1, y~ .5,-.5,0; g2 (x 2,3; y .5,1) -> -.5,.5 / -.25,.25; g3 (x 0,4; y 0,.5)
    # -> -2,2 / -.25,.25. Sum x~y~ = 1.5+1+.125+.125+.5+.5 = 3.75; sum x~^2 = 22.5; slope = 1/6.
    _, res = handmade()
    assert residual_slope(context()) == pytest.approx(res["headings"]["within_cell"]["slope"])
    assert residual_slope(context()) == pytest.approx(1 / 6)


def test_empty_evidence_draws_explaining_figures(tmp_path: Path) -> None:
    pkg, _ = handmade()
    empty = dataclasses.replace(pkg, rows=pkg.rows.head(0), checks=pkg.checks.head(0))
    specs = build_figures(context(empty, {}))
    assert all(s.empty_reason for s in specs)
    write_figures(specs, tmp_path)
    for s in specs:
        svg = (tmp_path / f"{s.name}.svg").read_text(encoding="utf-8")
        assert svg.startswith("<?xml")


def _pixels(data: bytes) -> tuple[tuple[int, int], bytes, str]:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return im.size, im.convert("RGBA").tobytes(), im.mode


def test_png_holds_the_pixels_matplotlib_draws_stored_as_rgb_when_opaque() -> None:
    # Oracle: matplotlib's own savefig(format="png") of the same figure at the same dpi. Our encoder must keep
    # every pixel (lossless) and drop only an alpha channel that is 255 everywhere.
    import io

    from analysis.figures.common import PNG_DPI, new_figure, png_bytes

    def figure():  # two identical figures: each is drawn by exactly one encoder
        fig, (ax,) = new_figure()
        ax.plot([0, 1, 2], [0, 1, 0.5], label="a")
        ax.set_title("pixels")
        ax.legend()
        return fig

    with style():
        ours = png_bytes(figure())
        buf = io.BytesIO()
        figure().savefig(buf, format="png", dpi=PNG_DPI)
    size, pixels, mode = _pixels(ours)
    ref_size, ref_pixels, ref_mode = _pixels(buf.getvalue())
    assert (size, pixels) == (ref_size, ref_pixels)
    assert (mode, ref_mode) == ("RGB", "RGBA")


def test_png_keeps_transparency_when_a_pixel_is_not_opaque() -> None:
    from analysis.figures.common import new_figure, png_bytes

    with style():
        fig, (ax,) = new_figure()
        fig.patch.set_alpha(0.0)  # a transparent background: dropping alpha would paint it black
        ax.plot([0, 1], [0, 1])
        _, pixels, mode = _pixels(png_bytes(fig))
    assert mode == "RGBA"
    assert pixels[3] == 0  # the top-left pixel is the transparent background


def test_svg_keeps_every_label_as_text_with_a_generic_font_fallback(rendered: list[Path]) -> None:
    """Each SVG's title and axis labels are <text> a reader can search, select and have read aloud, in the
    style's font with the generic sans-serif after it; no glyph outlines stand in for text (issue 21: outlines
    also took about 1.7x the CPU to write)."""
    import xml.etree.ElementTree as ET

    specs = {s.name: s for s in build_figures(context())}
    for p in rendered:
        if p.suffix != ".svg":
            continue
        root = ET.parse(p).getroot()
        texts = ["".join(el.itertext()) for el in root.iter() if el.tag.endswith("}text")]
        fig = specs[p.stem].figure
        labels = [t for ax in fig.axes for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) if t]
        assert labels and texts, p.name
        for label in labels:
            assert any(label.split("\n")[0] in t for t in texts), (p.name, label)
        styles = [el.get("style", "") for el in root.iter() if el.tag.endswith("}text")]
        assert all("font-family: 'DejaVu Sans', sans-serif" in s for s in styles), p.name
        assert not any(el.get("id", "").startswith("DejaVuSans") for el in root.iter()), p.name  # no glyph defs


def test_png_is_deflated_at_the_fast_zlib_level(rendered: list[Path]) -> None:
    """Every PNG's image data is zlib at PNG_ZLIB_LEVEL (3, 'fast'), which the zlib header records in FLEVEL
    (RFC 1950 section 2.2: 0 fastest = level 0-1, 1 fast = 2-5, 2 default = 6, 3 maximum = 7-9)."""
    import struct

    from analysis.figures.common import PNG_ZLIB_LEVEL

    flevel = 0 if PNG_ZLIB_LEVEL <= 1 else 1 if PNG_ZLIB_LEVEL <= 5 else 2 if PNG_ZLIB_LEVEL == 6 else 3
    assert flevel == 1  # the level the measurement chose (module note of PNG_ZLIB_LEVEL)
    for p in rendered:
        if p.suffix != ".png":
            continue
        data, pos = p.read_bytes(), 8
        while True:
            (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
            if kind == b"IDAT":
                flg = data[pos + 9]
                assert flg >> 6 == flevel, (p.name, flg >> 6)
                break
            pos += 12 + length
