"""Report figures: builders (ReportContext -> FigureSpec holding a matplotlib Figure); only the
build's figures stage writes files (PNG and SVG, deterministic bytes). Cheap to import."""

from __future__ import annotations

FIGURE_ORDER: tuple[tuple[str, str], ...] = (
    ("analysis.figures.panel", "forest"),
    ("analysis.figures.panel", "ladder"),
    ("analysis.figures.fill", "fill_vs_effect"),
    ("analysis.figures.headings", "headings"),
    ("analysis.figures.recall", "recall_distribution"),
    ("analysis.figures.panel", "sensitivity"),
    ("analysis.figures.survival", "fact_survival"),
    ("analysis.figures.dose_response", "dose_response"),
)
"""Every figure builder, in report order, as (module, function)."""
