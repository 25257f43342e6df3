"""Golden files of the rendered tables (Markdown and CSV) on the hand-made package.

Refresh on purpose only: ``python -m pytest tests/test_tables_golden.py --update-golden``.
"""

from __future__ import annotations

import pytest

from analysis.tables.registry import TABLE_ORDER, build_tables
from analysis.tables.render import to_csv, to_html, to_markdown
from report_support import GOLDEN, context

GOLDEN_TABLES = GOLDEN / "tables"
SPECS = {s.name: s for s in build_tables(context())}


def _compare(name: str, text: str, update: bool) -> None:
    path = GOLDEN_TABLES / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    if not path.is_file():
        pytest.fail(f"missing golden file {path}; create it with --update-golden")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from its golden file; if the change is intended, rerun with --update-golden")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_markdown_and_csv_match_golden(name: str, update_golden: bool) -> None:
    spec = SPECS[name]
    _compare(f"{name}.md", to_markdown(spec), update_golden)
    _compare(f"{name}.csv", to_csv(spec), update_golden)


def test_html_matches_golden(update_golden: bool) -> None:
    _compare("t3_panel.html", to_html(SPECS["t3_panel"]), update_golden)


def test_v2_pilot_table_matches_golden(update_golden: bool) -> None:
    # The hand-made package stands in for the pilot, so the golden file holds rows, not the empty-reason.
    from analysis.tables.pilot import PILOT_KEY, v2_pilot
    from report_support import handmade

    spec = v2_pilot(context(extras={PILOT_KEY: handmade()[0]}))
    assert not spec.is_empty
    _compare("t_v2_pilot_stand_in.md", to_markdown(spec), update_golden)
    _compare("t_v2_pilot_stand_in.csv", to_csv(spec), update_golden)


def test_every_builder_has_a_golden_entry() -> None:
    assert len(SPECS) == len(TABLE_ORDER)
