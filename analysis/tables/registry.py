"""Every table in report order (TABLE_ORDER); build them and write their CSV, Markdown and HTML renderings
plus tables/index.json (the tables stage of the build)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from analysis.safeio import write_json, write_text
from analysis.tables import (
    arm_means,
    arm_recall,
    carrier,
    cells,
    dose_response,
    failures,
    fill,
    headings,
    panel,
    panel_inference,
    pilot,
    survival,
)
from analysis.tables.context import ReportContext
from analysis.tables.declare import declaration
from analysis.tables.render import to_csv, to_html, to_markdown
from analysis.tables.spec import TableSpec

TableBuilder = Callable[[ReportContext], TableSpec]
"""A table builder: the report context in, one table out."""

TABLE_ORDER: tuple[TableBuilder, ...] = (
    arm_means.supporting_arms,
    arm_means.ladder,
    arm_means.scenario_comparison,
    arm_means.reduced_ceiling,
    arm_means.reduced_ceiling_by_model,
    arm_means.fill_examples,
    panel.table3,
    panel.out_of_window,
    panel.panel_summary,
    panel.sparse_cells,
    panel.sensitivity,
    fill.threshold_classes,
    fill.borderline,
    cells.deeper_repeats,
    headings.headings,
    headings.headings_within,
    carrier.carrier,
    failures.fabrication,
    failures.parse_failure_summary,
    failures.invalid_summary,
    cells.validity,
    cells.recall_cells,
    panel_inference.panel_inference,
    cells.cell_intervals,
    arm_recall.arm_recall,
    failures.claims_summary,
    failures.claims_audit,
    survival.fact_survival,
    survival.fact_survival_curves,
    survival.fact_survival_cuts,
    pilot.v2_pilot_folds,
    dose_response.dose_response,
    pilot.v2_pilot,
)
"""Every table builder, in report order (each declares the results blocks it reads: @table(reads=...))."""


def build_tables(ctx: ReportContext) -> list[TableSpec]:
    """Every table of TABLE_ORDER built from ``ctx`` (empty tables included, with their reason)."""
    specs = [builder(ctx) for builder in TABLE_ORDER]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"two table builders share a file name: {sorted(names)}; rename one")
    return specs


def report_sections(builders: Sequence[Callable[..., object]], names: Sequence[str]) -> dict[str, str | None]:
    """Table or figure name -> the report section its builder declares (@table/@figure(section=...))."""
    return {name: declaration(builder).section for builder, name in zip(builders, names, strict=True)}


def write_tables(specs: list[TableSpec], directory: Path,
                 sections: Mapping[str, str | None] | None = None) -> list[Path]:
    """Write ``<name>.csv``, ``<name>.md`` and ``<name>.html`` per table, and tables/index.json with each
    table's report ``section`` (from ``sections``; None when not given); returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        for suffix, text in ((".csv", to_csv(spec)), (".md", to_markdown(spec)), (".html", to_html(spec))):
            path = directory / f"{spec.name}{suffix}"
            write_text(path, text)
            written.append(path)
    index = [{"name": s.name, "title": s.title, "note": s.note, "empty_reason": s.empty_reason,
              "rows": s.data.height, "section": (sections or {}).get(s.name)} for s in specs]
    path = directory / "index.json"
    write_json(path, index, sort_keys=False)
    written.append(path)
    return written


def tables_stage(ctx: ReportContext, out_dir: Path) -> tuple[list[Path], str]:
    """Build every table; write CSV, Markdown and HTML under OUT/tables. Returns (paths, detail)."""
    specs = build_tables(ctx)
    paths = write_tables(specs, out_dir / "tables", report_sections(TABLE_ORDER, [s.name for s in specs]))
    empty = sum(1 for t in specs if t.is_empty)
    return paths, f"{len(specs)} tables ({empty} not in this evidence)"
