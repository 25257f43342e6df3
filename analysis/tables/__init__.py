"""Report tables: builders (ReportContext -> TableSpec) and renderers (CSV, Markdown, HTML).

Importing this package is cheap; builders and renderers live in submodules and are imported
by ``analysis.tables.registry`` only when a table is built.
"""

from __future__ import annotations

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
    ("analysis.tables.survival", "fact_survival_cuts"),
    ("analysis.tables.pilot", "v2_pilot"),
)
"""Every table builder, in report order, as (module, function)."""
