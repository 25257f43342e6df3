"""Bad input gives a report that says "not estimable" with the reason, never a number, a dash or a
zero-width interval in its place (issue 30, "Bad input" and "Done when").

Each package is written by tests/not_estimable_support.py (the j/q contrast on S5, 14 checks per row) and
built in full. What is not estimable, by hand:

- one configuration (3 repeats): the dispersion interval, the bootstrap, the sign flip (1 configuration
  gives p = 1 whatever its effect) and the Hodges–Lehmann interval need at least 2;
- one row per arm (2 configurations, 1 pair each, 7 vs 10 and 3 vs 4 passed): the Hodges–Lehmann
  interval (2 configurations cannot reach 95%: P(W = 0) = 1/4 > 0.025); and one row per arm in all (one
  configuration, one repeat, 7 vs 10: both succeed at 0.5): every interval and McNemar;
- recall 0 on every row: every effect is 0, so no spread (dispersion, bootstrap), nothing to flip (sign
  flip), no discordant pair (McNemar);
- every row alike (7 of 14 on every row): the same as recall 0, at recall 0.5;
- no discordant pair (every row passes at least 7 of 14, the 0.5 threshold): McNemar.

The scripted-server run: one configuration, arms j and q, two repeats, a server whose one-field answers
forget 3 of the 14 values (effect 3/14 in both pairs, so the pair differences are constant).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from not_estimable_support import bad_package, placeholders_in_prose, zero_width_intervals

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build

CASES: dict[str, dict[str, list[tuple[int | None, int | None]]]] = {
    "one_configuration": {"m/a": [(7, 10), (5, 12), (9, 9)]},
    "one_row_per_arm": {"m/a": [(7, 10)], "m/b": [(3, 4)]},
    "one_row_in_all": {"m/a": [(7, 10)]},
    "recall_zero": {"m/a": [(0, 0), (0, 0)], "m/b": [(0, 0), (0, 0)]},
    "all_alike": {"m/a": [(7, 7), (7, 7)], "m/b": [(7, 7), (7, 7)]},
    "no_discordant": {"m/a": [(8, 14), (9, 12)], "m/b": [(10, 11), (13, 7)]},
}
"""Per case: configuration -> (j passed, q passed) per repeat."""

REASONS = {
    "one_configuration": ["its interval is not estimable: 1 configuration: it needs at least 2 configurations",
                          "the sign-flip randomisation test (1 configuration",
                          "the configuration-level bootstrap (one configuration"],
    "one_row_per_arm": ["its interval is not estimable: 2 configurations cannot reach a 95% exact interval"],
    "one_row_in_all": ["the dispersion interval is not estimable: fewer than two units",
                       "its interval is not estimable: 1 configuration: it needs at least 2 configurations",
                       "the McNemar test is not estimable: no discordant pair"],
    "recall_zero": ["the dispersion interval is not estimable: all 2 values are equal",
                    "the McNemar test is not estimable: no discordant pair",
                    "every one of the 2 configuration effects is 0"],
    "all_alike": ["the dispersion interval is not estimable: all 2 values are equal",
                  "the McNemar test is not estimable: no discordant pair"],
    "no_discordant": ["the McNemar test is not estimable: no discordant pair"],
}
"""Per case: sentences (or their starts) the report must contain, each naming what is not estimable and why."""


def _outputs(out: Path) -> tuple[str, str]:
    qmd = (out / "report" / "index.qmd").read_text(encoding="utf-8")
    tables = "\n".join(p.read_text(encoding="utf-8") for p in sorted((out / "tables").glob("*.md")))
    return qmd, tables


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    outs = {}
    for name, passes in CASES.items():
        pkg = bad_package(root / name / "evidence", passes)
        build(pkg, root / name / "out", DEFAULT_PARAMS, progress=None)
        outs[name] = root / name / "out"
    return outs


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_report_says_not_estimable_and_prints_no_placeholder(built: dict[str, Path], case: str) -> None:
    out = built[case]
    assert (out / "report" / "index.html").is_file()  # the report builds
    qmd, tables = _outputs(out)
    flat = _flat(qmd)
    for reason in REASONS[case]:
        assert reason in flat, (case, reason)
    assert placeholders_in_prose(qmd) == [], case
    assert zero_width_intervals(qmd) == [], case
    assert zero_width_intervals(tables) == [], case
    assert "—, —" not in tables  # an interval of dashes (t_beyond_cells without a design effect)
    if case == "one_configuration":  # the tables say why in the cell, not with a dash
        summary = (out / "tables" / "t3_summary.md").read_text(encoding="utf-8")
        assert "| dispersion interval, low | not estimable: fewer than two units" in summary
        inference = (out / "tables" / "t_beyond_inference.md").read_text(encoding="utf-8")
        assert "not estimable: 1 configuration: it needs at least 2 configurations" in inference
    if case in ("one_configuration", "recall_zero", "all_alike"):  # the forest figure says why it has no band
        assert "no dispersion band: the interval is not estimable" in flat
    if case in ("recall_zero", "all_alike"):  # every effect 0, no discordant pair: no test has anything to test
        assert "p = 1.0000" not in flat


def test_the_checks_find_what_they_look_for() -> None:
    """The two detectors catch the issue's examples and pass ordinary prose."""
    assert placeholders_in_prose("two-sided exact McNemar p = —.") != []
    assert placeholders_in_prose("an interval [—, —] here") != []
    assert placeholders_in_prose("a value — never captured — is lost\n| a | — |") == []
    assert zero_width_intervals("rows as clusters [0.00, 0.00] over 1 row; +0.00 [+0.00, +0.00]") == [
        "[0.00, 0.00]", "[+0.00, +0.00]"]
    assert zero_width_intervals("[−0.068, +0.390]") == []


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep of one configuration, arms j and q, two repeats, on the scripted server; built."""
    from analysis.runner.arguments import build_runner_parser
    from analysis.runner.cli import main
    from analysis.runner.named_fixtures import load_fixture_arg
    from support.scripted_server import MemorizingModel, ScriptedServer

    root = tmp_path_factory.mktemp("scripted")
    fixture = load_fixture_arg(build_runner_parser().parse_args(["sweep", "--out", "x"]).fixture)
    labels = [p.label for p in fixture.graded]
    forgetful, plain = MemorizingModel(fixture, forget=labels[:3]), MemorizingModel(fixture)

    def responder(body: dict, index: int):  # type: ignore[no-untyped-def]
        rf = body.get("response_format") or {}
        schema = rf.get("json_schema", {}).get("schema") or rf.get("schema") or {}
        return (forgetful if len(schema.get("properties", {})) == 1 else plain)(body, index)

    err = io.StringIO()
    with ScriptedServer(responder, model="m") as srv, contextlib.redirect_stderr(err):
        rc = main(["sweep", "--base-url", srv.base_url, "--model", "m", "--api-key-env", "", "--published",
                   "2026-03-01", "--family", "f", "--arms", "j,q", "--repeats", "2", "--concurrency", "2", "--quiet",
                   "--recency-cutoff", "2026-01-01", "--out", str(root / "run")])
    assert rc == 0, err.getvalue()[-2000:]
    build(root / "run" / "evidence", root / "out", DEFAULT_PARAMS, progress=None)
    return root / "out"


def test_scripted_run_of_one_configuration_and_two_repeats_has_no_placeholder(scripted_run: Path) -> None:
    qmd, tables = _outputs(scripted_run)
    flat = _flat(qmd)
    assert "+0.214 over 1 configuration" in flat  # 3/14 in both pairs: the effect itself is estimable
    assert "1 configurations" not in flat and "The primary panel holds the only configuration" in flat
    assert placeholders_in_prose(qmd) == []
    assert zero_width_intervals(qmd) == [] and zero_width_intervals(tables) == []
    assert "the dispersion interval is not estimable" in flat
    assert "the McNemar test is not estimable: no discordant pair" in flat  # j 11/14 and q 14/14: both succeed
    # q keeps every value it captured: no loss yet, so the rows interval is the exact no-loss bound over its 2
    # rows, [(0.025)^(1/2), 1] = [0.16, 1.00] (issue 35), never the zero-width [1.00, 1.00]
    assert "interval with rows as clusters [0.16, 1.00]" in flat
    assert "p = 1.0000" not in flat
