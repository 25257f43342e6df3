"""Every table in report order (TABLE_ORDER); build them and write their CSV, Markdown and HTML renderings
plus tables/index.json (the tables stage of the build)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from analysis.tables.context import ReportContext
from analysis.tables.render import to_csv, to_html, to_markdown
from analysis.tables.spec import TableSpec
from analysis.safeio import write_json, write_text

TABLE_ORDER: tuple[tuple[str, str], ...] = (
    ("analysis.tables.arm_means", "supporting_arms"),
    ("analysis.tables.arm_means", "ladder"),
    ("analysis.tables.arm_means", "scenario_comparison"),
    ("analysis.tables.arm_means", "reduced_ceiling"),
    ("analysis.tables.arm_means", "reduced_ceiling_by_model"),
    ("analysis.tables.arm_means", "fill_examples"),
    ("analysis.tables.panel", "table3"),
    ("analysis.tables.panel", "out_of_window"),
    ("analysis.tables.panel", "panel_summary"),
    ("analysis.tables.panel", "sparse_cells"),
    ("analysis.tables.panel", "sensitivity"),
    ("analysis.tables.fill", "threshold_classes"),
    ("analysis.tables.fill", "borderline"),
    ("analysis.tables.cells", "deeper_repeats"),
    ("analysis.tables.headings", "headings"),
    ("analysis.tables.headings", "headings_within"),
    ("analysis.tables.carrier", "carrier"),
    ("analysis.tables.failures", "fabrication"),
    ("analysis.tables.failures", "parse_failure_summary"),
    ("analysis.tables.failures", "invalid_summary"),
    ("analysis.tables.cells", "validity"),
    ("analysis.tables.cells", "recall_cells"),
    ("analysis.tables.panel_inference", "panel_inference"),
    ("analysis.tables.cells", "cell_intervals"),
    ("analysis.tables.failures", "claims_summary"),
    ("analysis.tables.failures", "claims_audit"),
    ("analysis.tables.survival", "fact_survival"),
    ("analysis.tables.survival", "fact_survival_curves"),
    ("analysis.tables.survival", "fact_survival_cuts"),
    ("analysis.tables.pilot", "v2_pilot_folds"),
    ("analysis.tables.dose_response", "dose_response"),
    ("analysis.tables.pilot", "v2_pilot"),
)
"""Every table builder, in report order, as (module, function)."""



def build_tables(ctx: ReportContext) -> list[TableSpec]:
    """Every table of TABLE_ORDER built from ``ctx`` (empty tables included, with their reason)."""
    specs = []
    for module, name in TABLE_ORDER:
        builder = getattr(importlib.import_module(module), name)
        specs.append(builder(ctx))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"two table builders share a file name: {sorted(names)}; rename one")
    return specs


def write_tables(specs: list[TableSpec], directory: Path) -> list[Path]:
    """Write ``<name>.csv``, ``<name>.md`` and ``<name>.html`` per table; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        for suffix, text in ((".csv", to_csv(spec)), (".md", to_markdown(spec)), (".html", to_html(spec))):
            path = directory / f"{spec.name}{suffix}"
            write_text(path, text)
            written.append(path)
    index = [{"name": s.name, "title": s.title, "note": s.note, "empty_reason": s.empty_reason,
              "rows": s.data.height} for s in specs]
    path = directory / "index.json"
    write_json(path, index, sort_keys=False)
    written.append(path)
    return written


def tables_stage(ctx: ReportContext, out_dir: Path) -> tuple[list[Path], str]:
    """Build every table; write CSV, Markdown and HTML under OUT/tables. Returns (paths, detail)."""
    specs = build_tables(ctx)
    paths = write_tables(specs, out_dir / "tables")
    empty = sum(1 for t in specs if t.is_empty)
    return paths, f"{len(specs)} tables ({empty} not in this evidence)"
