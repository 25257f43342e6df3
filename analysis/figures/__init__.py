"""Report figures: builders (ReportContext -> FigureSpec holding a matplotlib Figure); only the
build's figures stage writes files (PNG and SVG, deterministic bytes). Cheap to import: the builders,
in report order, are ``analysis.figures.registry.FIGURE_ORDER``."""

from __future__ import annotations
