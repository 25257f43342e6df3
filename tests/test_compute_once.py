"""Compute once (issue 21): one build verifies and loads each package once, computes each estimate
once per package, and the tables, figures and report render those estimates.

Oracle: the call counts are counted, not derived: a profile hook (``sys.setprofile``) sees every
call of the estimators' code objects, however a module imported them. The estimators are found, not listed:
every public function of analysis.estimators whose return annotation is a frozen dataclass. Each runs at most
once per package (twice in a build with a companion pilot), unless CALLS_PER_PACKAGE
(analysis/estimators/__init__.py) declares otherwise with its reason; the companion computes only the results
blocks its ``v2_pilot`` block reads (PILOT_READS).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import sys
import types
import typing
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import analysis.estimators as estimators_pkg
from analysis.estimators import CALLS_PER_PACKAGE, arm_cells
from analysis.evidence import folds, package, provenance
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from analysis.results import registry
from analysis.results.pilot import PILOT_READS
from evidence_support import HANDMADE, REPO

PILOT = REPO / "data" / "v2" / "pilot"
LADDER = REPO / "data" / "v2" / "ladder-pilot"
V1 = REPO / "data" / "v1"

LOADERS: tuple[Callable[..., Any], ...] = (package.parse_verified, provenance.verify_files, folds.graded_facts)
"""The loader: each package is verified, parsed and its folds graded once (never load_package again)."""


def _frozen(t: Any) -> bool:
    return isinstance(t, type) and dataclasses.is_dataclass(t) and t.__dataclass_params__.frozen  # type: ignore[attr-defined]


def estimators_of(modules: list[types.ModuleType]) -> list[Callable[..., Any]]:
    """Every public function of ``modules`` whose return annotation is a frozen dataclass (or a union with one)."""
    found = []
    for mod in modules:
        for name, fn in vars(mod).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != mod.__name__:
                continue
            ann = fn.__annotations__.get("return")
            ret = eval(ann, vars(mod)) if isinstance(ann, str) else ann
            if any(_frozen(a) for a in (typing.get_args(ret) or (ret,))):
                found.append(fn)
    return found


def all_estimators() -> list[Callable[..., Any]]:
    """The estimators of every module of analysis.estimators (module note of analysis/estimators/__init__.py)."""
    return estimators_of([importlib.import_module(f"analysis.estimators.{m.name}")
                          for m in pkgutil.iter_modules(estimators_pkg.__path__)])


def over_budget(counts: Counter[str], estimators: list[Callable[..., Any]], packages: int) -> list[str]:
    """Estimators that ran more often than CALLS_PER_PACKAGE allows (default once) for ``packages`` packages."""
    out = []
    for fn in estimators:
        per, _why = CALLS_PER_PACKAGE.get(_name(fn), (1, ""))
        if per is not None and counts[_name(fn)] > per * packages:
            out.append(f"{_name(fn)} ran {counts[_name(fn)]} times for {packages} package(s); compute it once "
                       "(a cached property of ResultsInputs) or declare why in CALLS_PER_PACKAGE "
                       "(analysis/estimators/__init__.py)")
    return out


def _companion_blocks(key: str) -> int:
    """Calls of results block ``key`` in a build with a companion: the evidence's, plus the companion's
    when its v2_pilot block reads it."""
    return 2 if registry.entry(key).source == "evidence" and key in {r.key for r in PILOT_READS} else 1


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


@contextmanager
def counting(functions: list[Callable[..., Any]]) -> Iterator[Counter[str]]:
    """Count the calls of ``functions`` (by code object) while the block runs."""
    codes = {fn.__code__: _name(fn) for fn in functions}
    counts: Counter[str] = Counter()

    def hook(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            counts[codes[frame.f_code]] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


def _block_computes() -> dict[str, Callable[..., Any]]:
    return {b.key: b.compute for b in registry.RESULTS_BLOCKS if b.key != "reasons"}


def test_every_declared_exception_is_an_estimator() -> None:
    assert set(CALLS_PER_PACKAGE) <= {_name(fn) for fn in all_estimators()}


def test_one_build_calls_each_estimator_once_per_package(tmp_path: Path) -> None:
    blocks = _block_computes()
    estimators = all_estimators()
    watched = [*estimators, *LOADERS, arm_cells.pilot_arms, *blocks.values()]
    with counting(watched) as alone:
        build(HANDMADE, tmp_path / "alone", DEFAULT_PARAMS, progress=None)
    with counting(watched) as counts:
        build(HANDMADE, tmp_path / "out", DEFAULT_PARAMS, progress=None, companions=[PILOT])
    assert over_budget(alone, estimators, 1) == []
    assert over_budget(counts, estimators, 2) == []  # the hand-made evidence, and the pilot beside it
    assert all(alone[_name(fn)] == 1 and counts[_name(fn)] == 2 for fn in LOADERS)
    assert counts[_name(arm_cells.pilot_arms)] == 1  # the pilot's cells: its results block and two tables
    for key, compute in blocks.items():  # build-only blocks: the evidence's results only
        assert counts[_name(compute)] == _companion_blocks(key), (key, counts[_name(compute)])


def test_a_new_estimator_called_twice_fails_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The estimator list is found, not kept: a new module's estimator is counted without any edit here."""
    probe = types.ModuleType("analysis.estimators.probe_new")
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    exec(
        "from dataclasses import dataclass\n"
        "@dataclass(frozen=True)\nclass Share:\n    value: float\n"
        "def share(x: float) -> Share:\n    return Share(x)\n", vars(probe))
    found = estimators_of([probe])
    assert [fn.__name__ for fn in found] == ["share"]
    with counting(found) as once:
        probe.share(0.5)
    assert over_budget(once, found, 1) == []
    with counting(found) as twice:
        probe.share(0.5)
        probe.share(0.5)
    assert over_budget(twice, found, 1) == [
        "analysis.estimators.probe_new.share ran 2 times for 1 package(s); compute it once (a cached property of "
        "ResultsInputs) or declare why in CALLS_PER_PACKAGE (analysis/estimators/__init__.py)"]


def test_a_pilot_the_report_only_points_to_runs_no_estimator(tmp_path: Path) -> None:
    """The default build of data/v1 points to the ladder pilot (``pointers``) instead of
    analysing it. The pilot is verified and parsed once for its headline counts; no estimator, no results
    block and no pilot table runs on it: every count is the evidence's alone."""
    blocks = _block_computes()
    estimators = all_estimators()
    watched = [*estimators, *LOADERS, arm_cells.pilot_arms, *blocks.values()]
    with counting(watched) as alone:
        build(HANDMADE, tmp_path / "alone", DEFAULT_PARAMS, progress=None)
    with counting(watched) as counts:
        build(HANDMADE, tmp_path / "out", DEFAULT_PARAMS, progress=None, pointers=[LADDER])
    for once in (package.parse_verified, provenance.verify_files):
        assert counts[_name(once)] == alone[_name(once)] + 1 == 2, _name(once)
    for fn in [*estimators, arm_cells.pilot_arms]:
        assert counts[_name(fn)] == alone[_name(fn)], (_name(fn), counts[_name(fn)])
    assert counts[_name(arm_cells.pilot_arms)] == 0
    for key, compute in blocks.items():   # the pointer block runs once; every other block as without it
        want = 1 if key == "v2_pilot_pointer" else alone[_name(compute)]
        assert counts[_name(compute)] == want, (key, counts[_name(compute)])


@pytest.mark.slow
def test_v1_build_runs_the_audit_on_the_assembled_blocks(tmp_path: Path) -> None:
    """On data/v1 the claims audit reads the evidence blocks results.json is assembled from: no block,
    no load and no estimator runs twice for the audit."""
    from analysis import results as results_pkg
    from analysis.estimators import fill, headings, survival_results

    blocks = _block_computes()
    watched = [package.parse_verified, results_pkg.build_results, fill.fill_analysis,
               headings.headings_analysis, survival_results.package_survival, *blocks.values()]
    with counting(watched) as counts:
        build(V1, tmp_path / "out", DEFAULT_PARAMS, progress=None, companions=[PILOT])
    assert counts[_name(package.parse_verified)] == 2
    assert counts[_name(results_pkg.build_results)] == 0  # the audit is handed the assembled blocks
    assert counts[_name(headings.headings_analysis)] == 1  # the pilot's blocks and outputs show no headings
    assert counts[_name(survival_results.package_survival)] == 2
    assert counts[_name(fill.fill_analysis)] == 2  # v1 + the audit's fill search on the printed cells
    for key, compute in blocks.items():
        assert counts[_name(compute)] == _companion_blocks(key), (key, counts[_name(compute)])


def test_entry_folds_read_the_library_they_are_given_not_the_directories() -> None:
    """The committed fixtures are loaded once, by the evidence layer, and handed to the estimator."""
    from analysis.evidence import load_package

    pkg = load_package(PILOT)  # its fixture is committed under analysis/runner/fixture_files, not locked in the package
    loaded = folds.load_fixture_library()
    facts, reasons = folds.graded_facts(pkg, search=(), library=loaded)
    assert facts.height > 0 and reasons == {}
    empty, why = folds.graded_facts(pkg, library=folds.FixtureLibrary({}))  # directories not searched
    assert empty.height == 0 and any("not found" in v for v in why.values())


def test_the_committed_fixtures_are_in_the_results_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.pipeline import stage_keys

    fixture = tmp_path / "fixture.json"
    fixture.write_text('{"graded": []}\n', encoding="utf-8")
    monkeypatch.setattr(folds, "FIXTURE_DIRS", (tmp_path,))
    before = stage_keys(HANDMADE, DEFAULT_PARAMS)
    fixture.write_text('{"graded": [], "edited": true}\n', encoding="utf-8")
    after = stage_keys(HANDMADE, DEFAULT_PARAMS)
    assert before is not None and after is not None
    assert before["verify"] == after["verify"]
    assert all(before[s] != after[s] for s in ("results", "tables", "figures", "report"))


def test_the_panel_tables_and_figures_render_the_typed_estimates_not_the_results_mapping() -> None:
    # The panel family (Table 3, panel summary, sparse cells, sensitivity, panel inference with the registered
    # inference rows, design-effect cell intervals; forest and sensitivity figures) reads
    # ctx.estimates: handed an empty results mapping, they render exactly what they render beside results.json.

    from analysis.figures import panel as panel_figures
    from analysis.figures.common import png_bytes, style
    from analysis.tables import cells as cell_tables
    from analysis.tables import panel as panel_tables
    from analysis.tables import panel_inference
    from analysis.tables.render import to_csv, to_markdown
    from report_support import context, handmade

    _, results = handmade()
    with_results, without = context(results=results), context(results={})
    for builder in (panel_tables.table3, panel_tables.panel_summary, panel_tables.sparse_cells,
                    panel_tables.sensitivity, panel_inference.panel_inference, cell_tables.cell_intervals):
        a, b = builder(with_results), builder(without)
        assert not a.is_empty, a.name
        assert (to_csv(a), to_markdown(a)) == (to_csv(b), to_markdown(b)), a.name
    # Oracle: results.json's own values (json_ready: NaN and inf are null), key by key.
    summary = dict(panel_tables.panel_summary(without).data.iter_rows())
    assert summary == {k: None if results["panel"][k] is None else float(results["panel"][k]) for k in summary}
    sens = dict(panel_tables.sensitivity(without).data.iter_rows())
    assert sens == {k: None if results[b][f] is None else float(results[b][f])
                    for k in sens for b, f in [k.split(".")]}
    effects = {r["configuration"]: r for r in panel_tables.table3(without).data.iter_rows(named=True)}
    assert set(effects) == set(results["panel"]["effects"])
    for conf, want in results["panel"]["effects"].items():
        assert {k: effects[conf][k] for k in want} == want, conf
    with style():
        for fig in (panel_figures.forest, panel_figures.sensitivity):
            a, b = fig(with_results), fig(without)
            assert not a.empty_reason, a.name
            assert png_bytes(a.figure) == png_bytes(b.figure), a.name


def test_the_dose_response_table_and_figure_render_the_computed_block_not_the_results_mapping() -> None:
    # The ladder pilot has a load ladder: handed an empty results mapping, the table and the figure still show
    # its rungs (they read the dose_response block, computed once), and the table's numbers are the block's.
    from analysis.evidence import load_package
    from analysis.figures import dose_response as dose_figure
    from analysis.results.extras import DOSE_RESPONSE_REGISTRATION
    from analysis.tables import dose_response as dose_table
    from report_support import context

    ladder = load_package(REPO / "data" / "v2" / "ladder-pilot")
    ctx = context(package=ladder, results={})
    table = dose_table.dose_response(ctx)
    assert not table.is_empty
    block = ctx.estimates.block_value(DOSE_RESPONSE_REGISTRATION)
    assert sorted(set(table.data["rung"])) == sorted(r["rung"] for r in block["rungs"])
    assert not dose_figure.dose_response(ctx).empty_reason


def test_no_table_or_figure_builder_reads_the_results_mapping() -> None:
    # Builders render ctx.estimates; a read of ctx.results (or a section(...) of it) is a second path to the same
    # numbers that can drift from the objects. Found by reading the source of every builder module.
    import re

    offenders = []
    for folder in ("tables", "figures"):
        for path in sorted((REPO / "analysis" / folder).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            offenders += [f"{folder}/{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
                          for m in re.finditer(r"\bctx\.results\b|section\(ctx\b", text)]
    assert offenders == []


def test_block_value_computes_evidence_blocks_once_and_refuses_the_ones_only_assembly_makes() -> None:
    from analysis.evidence import load_package
    from analysis.results.inputs import BlockValueError, ResultsInputs

    inputs = ResultsInputs(load_package(HANDMADE), DEFAULT_PARAMS)
    hl = registry.entry("hodges_lehmann")
    first = inputs.block_value(hl)
    assert first == inputs.block_value(hl) and inputs.blocks["hodges_lehmann"] is not None
    assert registry.assemble(inputs)["hodges_lehmann"] == first  # assembly reuses the block computed for a table
    for key in ("reasons", "claims_audit", "v2_pilot", "design"):
        with pytest.raises(BlockValueError, match="assembled"):
            inputs.block_value(registry.entry(key))
