"""Build every figure and write its PNG and SVG."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from analysis.figures import FIGURE_ORDER
from analysis.figures.common import FigureSpec, save
from analysis.tables.context import ReportContext
from analysis.safeio import write_json


def build_figures(ctx: ReportContext) -> list[FigureSpec]:
    """Every figure of FIGURE_ORDER drawn from ``ctx`` (a figure without data states why)."""
    return [getattr(importlib.import_module(m), f)(ctx) for m, f in FIGURE_ORDER]


def write_figures(specs: list[FigureSpec], directory: Path) -> list[Path]:
    """Save every figure as PNG and SVG under ``directory`` plus figures/index.json; returns the paths."""
    paths: list[Path] = []
    for spec in specs:
        paths += save(spec, directory)
    index = [{"name": s.name, "title": s.title, "alt": s.alt, "empty_reason": s.empty_reason} for s in specs]
    path = directory / "index.json"
    write_json(path, index, sort_keys=False)
    return [*paths, path]


def figures_stage(ctx: ReportContext, out_dir: Path) -> tuple[list[Path], str]:
    """Draw every figure; write PNG and SVG under OUT/figures. Returns (paths, detail)."""
    paths = write_figures(build_figures(ctx), out_dir / "figures")
    return paths, f"{(len(paths) - 1) // 2} figures (PNG and SVG)"
