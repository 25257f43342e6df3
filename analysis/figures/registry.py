"""Build every figure and write its PNG and SVG."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from analysis.figures import arm_recall, dose_response, fill, headings, panel, recall, survival
from analysis.figures.common import FigureSpec, save
from analysis.safeio import write_json
from analysis.tables.context import ReportContext
from analysis.tables.declare import declaration
from analysis.tables.registry import TABLE_ORDER, report_sections

FigureBuilder = Callable[[ReportContext], FigureSpec]
"""A figure builder: the report context in, one figure out."""

FIGURE_ORDER: tuple[FigureBuilder, ...] = (
    panel.forest,
    panel.ladder,
    fill.fill_vs_effect,
    headings.headings,
    recall.recall_distribution,
    panel.sensitivity,
    arm_recall.arm_recall,
    survival.fact_survival,
    dose_response.dose_response,
)
"""Every figure builder, in report order."""


def block_readers() -> dict[str, tuple[list[str], list[str]]]:
    """Results block key -> (table builders, figure builders) that declare they read it (@table(reads=...),
    @figure(reads=...)), in report order: the docs index's reader columns. Here because this layer sees both
    the tables and the figures."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for kind, order in ((0, TABLE_ORDER), (1, FIGURE_ORDER)):
        for builder in order:
            for key in declaration(builder).keys:
                out.setdefault(key, ([], []))[kind].append(builder.__name__)
    return out


def build_figures(ctx: ReportContext) -> list[FigureSpec]:
    """Every figure of FIGURE_ORDER drawn from ``ctx`` (a figure without data states why)."""
    return [builder(ctx) for builder in FIGURE_ORDER]


def write_figures(specs: list[FigureSpec], directory: Path,
                  sections: Mapping[str, str | None] | None = None) -> list[Path]:
    """Save every figure as PNG and SVG under ``directory`` plus figures/index.json (each figure's report
    ``section`` from ``sections``; None when not given); returns the paths."""
    paths: list[Path] = []
    for spec in specs:
        paths += save(spec, directory)
    index = [{"name": s.name, "title": s.title, "alt": s.alt, "empty_reason": s.empty_reason,
              "section": (sections or {}).get(s.name)} for s in specs]
    path = directory / "index.json"
    write_json(path, index, sort_keys=False)
    return [*paths, path]


def figures_stage(ctx: ReportContext, out_dir: Path) -> tuple[list[Path], str]:
    """Draw every figure; write PNG and SVG under OUT/figures. Returns (paths, detail)."""
    specs = build_figures(ctx)
    paths = write_figures(specs, out_dir / "figures", report_sections(FIGURE_ORDER, [s.name for s in specs]))
    return paths, f"{(len(paths) - 1) // 2} figures (PNG and SVG)"
