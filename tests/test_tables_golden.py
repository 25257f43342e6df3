"""Golden files of the rendered tables (Markdown and CSV) on the hand-made package.

The texts come from analysis.tables.golden.golden_texts, the function ``python generate.py regenerate``
writes them with. Refresh on purpose only: ``python generate.py regenerate`` (every generated file), or
``python -m pytest tests/test_tables_golden.py --update-golden`` (these files only).
"""

from __future__ import annotations

import pytest

from analysis.params import DEFAULT_PARAMS
from analysis.tables.golden import HTML_GOLDEN, PILOT_STAND_IN, golden_texts
from analysis.tables.pilot import v2_pilot
from analysis.tables.registry import TABLE_ORDER, build_tables
from report_support import GOLDEN, context, handmade

GOLDEN_TABLES = GOLDEN / "tables"
SPECS = {s.name: s for s in build_tables(context())}
TEXTS = golden_texts(*handmade(), DEFAULT_PARAMS)


def _compare(name: str, update: bool) -> None:
    path = GOLDEN_TABLES / name
    text = TEXTS[name]
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    if not path.is_file():
        pytest.fail(f"missing golden file {path}; create it with `python generate.py regenerate` or --update-golden")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from its golden file; if the change is intended, run `python generate.py regenerate`")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_markdown_and_csv_match_golden(name: str, update_golden: bool) -> None:
    _compare(f"{name}.md", update_golden)
    _compare(f"{name}.csv", update_golden)


def test_html_matches_golden(update_golden: bool) -> None:
    _compare(f"{HTML_GOLDEN}.html", update_golden)


def test_v2_pilot_table_matches_golden(update_golden: bool) -> None:
    # The hand-made package stands in for the pilot, so the golden file holds rows, not the empty-reason.
    from analysis.tables.context import PILOT_KEY

    assert not v2_pilot(context(extras={PILOT_KEY: handmade()[0]})).is_empty
    _compare(f"{PILOT_STAND_IN}.md", update_golden)
    _compare(f"{PILOT_STAND_IN}.csv", update_golden)


def test_every_builder_has_a_golden_entry() -> None:
    assert len(SPECS) == len(TABLE_ORDER)
    assert set(TEXTS) == ({f"{n}{ext}" for n in SPECS for ext in (".md", ".csv")}
                          | {f"{HTML_GOLDEN}.html", f"{PILOT_STAND_IN}.md", f"{PILOT_STAND_IN}.csv"})
