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
