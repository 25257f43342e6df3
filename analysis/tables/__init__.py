"""Report tables: builders (ReportContext -> TableSpec) and renderers (CSV, Markdown, HTML).

Importing this package is cheap; builders and renderers live in submodules and are imported
by ``analysis.tables.registry`` only when a table is built.
"""

from __future__ import annotations
