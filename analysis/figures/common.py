"""Shared figure plumbing: the one style file, Figure creation without pyplot, deterministic saving.

Methods note: figures are plain ``matplotlib.figure.Figure`` objects (no pyplot state, no global
backend switch). Saving fixes every source of byte drift: the SVG hash salt (style file), no
date or software metadata, a fixed dpi, SVG text kept as text in the
style's font (generic sans-serif after it).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from analysis.safeio import write_bytes
from analysis.style import MATPLOTLIBRC

PNG_DPI = 150
"""Resolution of every PNG."""
PNG_ZLIB_LEVEL = 3
"""zlib level of every PNG. Measured on the v1 figures (issue 21): level 3 encodes them in 0.085 s of CPU against
0.186 s at the default 6, for 2.3 % more bytes (501 KB against 490 KB); level 9 with ``optimize`` took 3.4x the
default's CPU for 2 % fewer bytes. Lossless at every level."""


@dataclass(frozen=True)
class FigureSpec:
    """One report figure."""

    name: str
    """File stem under OUT/figures/."""
    title: str
    """Caption used by the report."""
    figure: Figure
    """The drawn figure (never saved by the builder)."""
    alt: str
    """Alternative text: what the figure shows, in words."""
    empty_reason: str = ""
    """Why the figure shows no data in this evidence; empty when it does."""


MIN_SHOWN_PT = 8.0
"""Smallest text size a reader meets, at the size a figure is shown (tests/test_figures_legible.py)."""
NARROWEST_COLUMN_PX = 799
"""Quarto's text column at 1280 px (the narrower of the two renders): a figure wider than it is scaled down."""


def shown_scale(width_in: float, dpi: int = PNG_DPI, column_px: int = NARROWEST_COLUMN_PX) -> float:
    """Factor from a text's size in points in the figure to its size on the page: the PNG (``width_in`` × dpi
    pixels) is shown at its pixel width, or the column's where it is wider, and a CSS point is 96/72 px."""
    return min(width_in * dpi, column_px) / (width_in * 96)


def arm_key(*arms: str, sep: str = "; ") -> str:
    """What each arm code means, for a figure's label: ``j: one opaque field; q: five named fields``."""
    from analysis.tables.labels import ARM_LABELS

    return sep.join(f"{a}: {ARM_LABELS[a]}" if a in ARM_LABELS else a for a in arms)


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Draw and save under analysis/style/matplotlibrc only (rcParams restored afterwards)."""
    with matplotlib.rc_context(fname=str(MATPLOTLIBRC)):
        yield


def new_figure(ncols: int = 1, *, width: float | None = None, height: float | None = None,
               sharey: bool = False) -> tuple[Figure, list]:
    """A Figure with ``ncols`` axes in one row, sized from the style file unless given.

    Constrained layout fits labels and outside legends at draw time, so saving needs no
    ``bbox_inches='tight'`` pass (one render per file instead of two)."""
    w, h = matplotlib.rcParams["figure.figsize"]
    fig = Figure(figsize=(width or w, height or h), layout="constrained")
    axes = fig.subplots(1, ncols, sharey=sharey, squeeze=False)[0]
    return fig, list(axes)


def empty_figure(title: str, reason: str) -> Figure:
    """A small figure that states plainly what the evidence lacks (never a blank or a crash)."""
    fig, (ax,) = new_figure(height=1.6)
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"Not in this evidence: {reason}", ha="center", va="center", wrap=True)
    ax.set_title(title)
    return fig


def plain_texts(figure: Figure) -> None:
    """Pass every text of ``figure`` through analysis.escape.figure_text before it is drawn: titles, labels,
    legends, annotations and fixed tick labels (evidence strings among them) are never parsed as mathtext
    and hold only XML-legal characters (the SVG stays well-formed). Idempotent; called by every draw here."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    from analysis.escape import figure_text

    for ax in figure.axes:  # tick labels given as text are formatted at draw time: wrap their formatter
        for axis in (ax.xaxis, ax.yaxis):
            for major, fmt in ((True, axis.get_major_formatter()), (False, axis.get_minor_formatter())):
                if isinstance(fmt, FixedFormatter | FuncFormatter | StrCategoryFormatter) \
                        and not getattr(fmt, "plain_text", False):
                    wrapped = FuncFormatter(lambda x, pos=None, inner=fmt: figure_text(inner(x, pos)))
                    wrapped.plain_text = True  # type: ignore[attr-defined]
                    (axis.set_major_formatter if major else axis.set_minor_formatter)(wrapped)
    for text in figure.findobj(Text):
        shown = text.get_text()
        if shown:
            safe = figure_text(shown)
            if safe != shown:
                text.set_text(safe)


def png_bytes(figure: Figure, dpi: int = PNG_DPI) -> bytes:
    """The figure drawn once by Agg at ``dpi`` and encoded as PNG: deterministic and lossless.

    An opaque figure (every pixel's alpha 255, as the style's white background makes them) is stored as
    RGB, the same pixels in three quarters of the data; anything with transparency stays RGBA. zlib at
    PNG_ZLIB_LEVEL."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    plain_texts(figure)
    before = figure.get_dpi()
    figure.set_dpi(dpi)
    try:
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba()).copy()
    finally:
        figure.set_dpi(before)  # as savefig leaves it
    image = Image.fromarray(rgba[..., :3] if bool((rgba[..., 3] == 255).all()) else rgba)
    buf = io.BytesIO()
    # no text chunks: no date, no software
    image.save(buf, format="png", dpi=(dpi, dpi), compress_level=PNG_ZLIB_LEVEL)
    return buf.getvalue()


def _keep_layout(figure: Figure) -> None:
    """Detach the layout engine, so the next save draws the positions the last draw fixed, once.

    A placeholder engine (``set_layout_engine("none")``) still makes ``savefig`` run a layout draw before
    the real one (a second pass over every artist and text); no engine at all makes it draw once. Under the
    style file, None would mean "constrained" again, hence the rc switch for the call."""
    with matplotlib.rc_context({"figure.constrained_layout.use": False, "figure.autolayout": False}):
        figure.set_layout_engine(None)


def save(spec: FigureSpec, directory: Path) -> list[Path]:
    """Write ``<name>.png`` and ``<name>.svg`` with deterministic bytes; returns both paths.

    The constrained layout runs once, in the PNG's draw; the SVG is drawn with the positions it fixed
    (a second layout pass would cost as much as the drawing). The figure is left with no layout engine,
    so the SVG is drawn once."""
    directory.mkdir(parents=True, exist_ok=True)
    png, svg = directory / f"{spec.name}.png", directory / f"{spec.name}.svg"
    with style():  # drawn to memory, written through the door (atomic, never through a link)
        write_bytes(png, png_bytes(spec.figure))
        _keep_layout(spec.figure)
        plain_texts(spec.figure)
        buf = io.BytesIO()
        spec.figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
        write_bytes(svg, buf.getvalue())
    return [png, svg]
