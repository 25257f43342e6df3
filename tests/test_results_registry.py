"""The registry of results blocks (analysis/results/registry.py) is what results.json, the docs and the
table and figure builders agree on (issue 16 item 6)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from analysis.evidence import load_package
from analysis.figures.registry import FIGURE_ORDER
from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results, core
from analysis.results.block import Block, RegistrationError, ResultsBlock, indexed_as
from analysis.results.inputs import ResultsInputs
from analysis.results.pilot import PilotAssemblyError
from analysis.results.registry import (
    DOCS_PATH,
    REASONS_FROM,
    RESULTS_BLOCKS,
    ResultsRegistryError,
    assemble,
    block_reasons,
    check_registry,
    collect_reasons,
    docs_index,
    entry,
    with_docs_index,
)
from analysis.tables.registry import TABLE_ORDER

REPO = Path(__file__).resolve().parents[1]
HANDMADE = REPO / "tests" / "fixtures" / "handmade"
CONTRACT = ("evidence", "panel", "sparse", "bounds", "families", "dependence", "headings")
"""The top-level keys of the results contract docs/RESULTS_CONTRACT.md (version 1), in its order."""


@pytest.fixture(scope="module")
def package():
    return load_package(HANDMADE)


@pytest.fixture(scope="module")
def results(package):
    return build_results(package, DEFAULT_PARAMS)


def test_results_json_has_exactly_the_registry_keys_in_order(results) -> None:
    assert list(results) == [b.key for b in RESULTS_BLOCKS if b.source == "evidence"]
    assert [b.key for b in RESULTS_BLOCKS if b.contract] == list(CONTRACT)
    assert list(results)[:len(CONTRACT)] == list(CONTRACT)


def test_the_registry_is_consistent() -> None:
    assert check_registry((f.__name__ for f in TABLE_ORDER), (f.__name__ for f in FIGURE_ORDER)) == []
    assert check_registry(["t"], []) != []  # a reader that is no builder is reported
    with pytest.raises(ResultsRegistryError, match=r"registry\.py"):
        entry("no_such_block")


def test_the_docs_index_is_generated_from_the_registry() -> None:
    text = (REPO / DOCS_PATH).read_text(encoding="utf-8")
    assert with_docs_index(text) == text, (
        f"{DOCS_PATH} is stale; run `python -m analysis.results.registry --write-docs`")
    for block in RESULTS_BLOCKS:
        assert f"| `{block.key}` |" in docs_index()


_HELPERS = {"sparse_block": "sparse", "pilot_dose_block": "v2_pilot"}
"""Table helpers (analysis.tables.context, .dose_response) that read one block for their caller."""
_ESTIMATES = {"panel": "panel", "fill": "fill", "headings": "headings_detail", "carrier": "carrier_audit",
              "failures": "failure_modes", "survival": "fact_survival", "pilot_inputs": "v2_pilot",
              "sparse_contract": "sparse", "equal_counts": "sparse", "bounds": "bounds", "families": "families",
              "each_excluded": "sensitivity", "dose_block": "dose_response", "beyond_paper": "beyond_paper"}
"""``ctx.estimates.<attribute>`` (analysis.results.inputs.ResultsInputs) -> the block that serialises it."""
_ESTIMATE_PARTS = {("bounds", "per_configuration"): "bounds_detail"}
"""``ctx.estimates.<attribute>.<field>`` serialised by another block than the attribute's own."""


def _blocks_read(module: str, name: str) -> set[str]:
    """Top-level results keys a builder reads: section(ctx.results, "<key>", ...), the helpers and the
    typed estimates (``ctx.estimates.<attribute>``), followed through the module's own functions it calls."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    keys: set[str] = set()
    seen: set[str] = set()
    todo = [name]
    while todo:
        fn = todo.pop()
        if fn in seen or fn not in functions:
            continue
        seen.add(fn)
        parts: set[int] = set()  # ctx.estimates.<attribute> nodes read only for a field another block serialises
        for node in ast.walk(functions[fn]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and isinstance(node.value.value, ast.Attribute) and node.value.value.attr == "estimates"
                    and (node.value.attr, node.attr) in _ESTIMATE_PARTS):
                keys.add(_ESTIMATE_PARTS[(node.value.attr, node.attr)])
                parts.add(id(node.value))
        for node in ast.walk(functions[fn]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and id(node) not in parts
                    and node.value.attr == "estimates" and node.attr in _ESTIMATES):
                keys.add(_ESTIMATES[node.attr])  # a typed estimate the block serialises
            if isinstance(node, ast.Attribute) and node.attr == "inference_row":  # rows of registered statistics
                keys |= {b.key for b in RESULTS_BLOCKS if b.inference_row is not None}
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if called == "section" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                keys.add(node.args[1].value)
            keys |= {_HELPERS[called]} if called in _HELPERS else set()
            if isinstance(f, ast.Name) and f.id in functions:
                todo.append(f.id)
    return keys


@pytest.mark.parametrize("kind", ["tables", "figures"])
def test_the_registry_names_every_reader(kind: str) -> None:
    order = TABLE_ORDER if kind == "tables" else FIGURE_ORDER
    found = {(key, f.__name__) for f in order for key in _blocks_read(f.__module__, f.__name__)}
    declared = {(b.key, name) for b in RESULTS_BLOCKS for name in getattr(b, kind)}
    assert found == declared


def test_each_block_carries_its_own_null_reasons(package, results) -> None:
    inputs = ResultsInputs(package, DEFAULT_PARAMS)
    sparse = entry("sparse").compute(inputs)
    assert sparse is not None and dict(sparse.reasons) == {
        "min_pairs_4.mean": "no configurations in this population",
        "min_pairs_4.median": "no configurations in this population"}
    # results.json keeps docs/RESULTS_CONTRACT.md's top-level `reasons`, assembled from the blocks' own reasons ...
    assert results["reasons"] == {f"sparse.{k}": v for k, v in sparse.reasons.items()}
    # ... and a reader gets a block's reasons back without knowing where results.json keeps them.
    assert block_reasons(results, "sparse") == dict(sparse.reasons)
    assert block_reasons(results, "bounds") == {}
    assert block_reasons({"fact_survival": {"reason": "no folds"}}, "fact_survival") == {"*": "no folds"}


def test_summary_reasons_come_before_per_configuration_reasons() -> None:
    computed = {"panel": Block({}, {"mean": "a", "effects.c.control_mean": "b"}), "bounds": Block({}, {"lo": "c"})}
    assert list(collect_reasons(computed)) == ["panel.mean", "bounds.lo", "panel.effects.c.control_mean"]
    assert set(REASONS_FROM) <= {b.key for b in RESULTS_BLOCKS}


def test_no_import_cycle_inside_results_counting_function_level_imports() -> None:
    """The cycle results/__init__ -> registry -> extras -> pilot -> results/__init__ (issue 21) is gone:
    every import of analysis.results modules, at any depth of a function, read from the source."""
    pkg = REPO / "analysis" / "results"
    names = {f.stem for f in pkg.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for f in pkg.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "analysis.results":
                deps |= {a.name if a.name in names else "__init__" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analysis.results."):
                deps.add(str(node.module).split(".")[2])
        graph[f.stem] = deps - {f.stem}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(d == goal or (d not in seen and reaches(d, goal, seen | {d})) for d in graph.get(start, ()))

    assert [m for m in sorted(graph) if reaches(m, m, {m})] == []


def _registrations_declared() -> dict[str, list[str]]:
    """Module of analysis -> the top-level names its source assigns a ``ResultsBlock(...)`` call to (read with
    ast, not imported: a module that only imports or references a registration does not declare it)."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "analysis").rglob("*.py")):
        names = []
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "ResultsBlock"):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        if names:
            found[".".join(path.relative_to(REPO).with_suffix("").parts)] = names
    return found


def _declaring_modules(block: ResultsBlock, declared: dict[str, list[str]]) -> list[str]:
    """The modules whose declared registration constant is ``block`` itself."""
    return [module for module, names in declared.items()
            if any(getattr(importlib.import_module(module), n, None) is block for n in names)]


def _source_files(compute: Callable[..., Any]) -> set[str]:
    """Where the code of a block's ``compute`` is: the function itself after any ``__wrapped__``, and the
    function its name claims (an adapter renamed by ``indexed_as`` for the docs index's "computed by")."""
    fn = inspect.unwrap(compute)
    claimed = getattr(importlib.import_module(compute.__module__), compute.__qualname__, None)
    assert callable(claimed), f"{compute.__module__}.{compute.__qualname__} (the docs index's name) does not exist"
    return {str(Path(f.__code__.co_filename).resolve()) for f in (fn, inspect.unwrap(claimed))}


def test_every_registration_is_declared_beside_the_function_that_computes_its_block() -> None:
    """One registration per block, declared in the module that defines its compute function (and the adapter's
    block function); only ``reasons`` is declared in the registry, which computes it (issue 21)."""
    declared = _registrations_declared()
    for block in RESULTS_BLOCKS:
        modules = _declaring_modules(block, declared)
        assert len(modules) == 1, f"{block.key}: declared in {modules or 'no module'}, want exactly one"
        if block.key == "reasons":
            assert modules == ["analysis.results.registry"]
            continue
        here = str(Path(inspect.getfile(importlib.import_module(modules[0]))).resolve())
        assert _source_files(block.compute) == {here}, (
            f"{block.key} is registered in {modules[0]} but computed in {sorted(_source_files(block.compute))}; "
            "declare its ResultsBlock beside its block function and list that constant in RESULTS_BLOCKS")


def test_an_adapter_indexed_as_another_modules_function_is_refused() -> None:
    def adapter(_i: Any) -> Block:  # defined here, in tests, not beside core.evidence
        return Block({})

    with pytest.raises(RegistrationError, match=r"define it in analysis\.results\.core"):
        indexed_as(core.evidence)(adapter)


def test_every_registration_next_to_its_statistic_is_listed_once() -> None:
    """Every ResultsBlock(...) a module of analysis declares is in RESULTS_BLOCKS, once."""
    declared = _registrations_declared()
    assert "REGISTRATION" in declared["analysis.estimators.hodges_lehmann"]
    for module, names in declared.items():
        for name in names:
            registration = getattr(importlib.import_module(module), name)
            assert sum(b is registration for b in RESULTS_BLOCKS) == 1, (
                f"{module}.{name} is not in RESULTS_BLOCKS; list it in analysis/results/registry.py")


def test_the_pilot_block_assembles_its_companion_only_through_the_registry(package) -> None:
    """v2_pilot reaches the registry's assemble through ResultsInputs.assembler (it cannot import the registry
    that lists it): outside assemble it is a named error, through assemble it carries the companion's blocks."""
    inputs = ResultsInputs(package, DEFAULT_PARAMS, pilot=package, pilot_path=HANDMADE)
    with pytest.raises(PilotAssemblyError, match=r"registry\.assemble"):
        entry("v2_pilot").compute(inputs)
    block = assemble(inputs, ("evidence", "build"))["v2_pilot"]
    companion = inputs.pilot_inputs
    assert companion is not None and companion.blocks["panel"] is not None
    assert block["evidence"] == assemble(companion)["evidence"]


def test_the_pilot_block_assembles_only_the_companion_blocks_it_reads(package) -> None:
    """The companion's blocks are assembled for the v2_pilot block alone, so only the ones pilot_block reads
    (PILOT_READS) are computed; the block is the same as from every block of the companion."""
    from analysis.results.pilot import PILOT_READS, pilot_block

    inputs = ResultsInputs(package, DEFAULT_PARAMS, pilot=package, pilot_path=HANDMADE)
    block = assemble(inputs, ("evidence", "build"))["v2_pilot"]
    companion = inputs.pilot_inputs
    assert companion is not None
    assert set(companion.blocks) == set(PILOT_READS)

    seen: set[str] = set()

    class Reads(dict):
        def get(self, key, default=None):  # type: ignore[override]
            seen.add(key)
            return super().get(key, default)

    full = Reads(assemble(ResultsInputs(package, DEFAULT_PARAMS)))
    assert json.loads(json.dumps(pilot_block(companion, HANDMADE, full))) == json.loads(json.dumps(block))
    assert seen == set(PILOT_READS)


@pytest.mark.parametrize("keys", [("panel", "reasons"), ("panel", "no_such_block")])
def test_assemble_refuses_keys_it_cannot_compute_alone(package, keys) -> None:
    """``reasons`` gathers every block before it, so it cannot be assembled from a subset (a partial one would
    be cached for the full results.json); a key the registry lacks is a typo, never silently skipped."""
    from analysis.results.registry import ResultsRegistryError

    inputs = ResultsInputs(package, DEFAULT_PARAMS)
    with pytest.raises(ResultsRegistryError, match=r"assemble\(keys=\.\.\.\)"):
        assemble(inputs, keys=keys)
    assert "reasons" not in inputs.blocks
