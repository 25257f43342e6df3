"""docs/EVIDENCE_FORMAT.md stays in step with the schema tables in analysis/evidence/schema.py."""
from __future__ import annotations

import re

import pytest

from analysis.evidence import schema
from evidence_support import REPO

DOC = (REPO / "docs" / "EVIDENCE_FORMAT.md").read_text(encoding="utf-8")


def _table_rows(heading: str) -> dict[str, list[str]]:
    """Cells of the markdown table under a '### heading', keyed by the first (backticked) cell."""
    section = DOC.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([^`]+)` \|(.*)\|$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


@pytest.mark.parametrize("heading, columns", [("rows.csv", schema.ROWS_COLUMNS),
                                              ("checks.csv", schema.CHECKS_COLUMNS)])
def test_every_schema_column_is_documented_with_its_type(heading, columns) -> None:
    documented = _table_rows(heading)
    assert list(documented) == [c.name for c in columns]
    for col in columns:
        kind, empty_ok = documented[col.name][0], documented[col.name][1]
        assert kind == col.kind
        assert empty_ok == ("no" if col.required else "yes")
        if col.minimum is not None:
            assert f"{col.minimum}" in documented[col.name][2]
        if col.maximum is not None:
            assert f"{col.maximum}" in documented[col.name][2]


def test_every_study_key_is_documented() -> None:
    for key in schema.STUDY_KEYS:
        assert f"`study.{key}`" in DOC
    for key in schema.CONFIGURATION_KEYS:
        assert f'`configurations."<key>".{key}`' in DOC
    for key in schema.PARTITION_RUN_KEYS:
        assert f"`partition_runs[].{key}`" in DOC
    for key in schema.LADDER_KEYS:
        assert f"`ladder.{key}`" in DOC
    for key in schema.LADDER_RUNG_KEYS:
        assert f'`ladder.rung."<name>".{key}`' in DOC


def test_every_row_rule_column_is_mentioned() -> None:
    for rule in schema.ROWS_RULES:
        for col in (*rule.left, rule.right):
            assert f"`{col}`" in DOC
