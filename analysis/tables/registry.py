"""Build every table and write its CSV, Markdown and HTML renderings, plus tables/index.json."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from analysis.tables import TABLE_ORDER
from analysis.tables.context import ReportContext
from analysis.tables.render import to_csv, to_html, to_markdown
from analysis.tables.spec import TableSpec


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
            path.write_text(text, encoding="utf-8", newline="\n")
            written.append(path)
    index = [{"name": s.name, "title": s.title, "note": s.note, "empty_reason": s.empty_reason,
              "rows": s.data.height} for s in specs]
    path = directory / "index.json"
    path.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8", newline="\n")
    written.append(path)
    return written
