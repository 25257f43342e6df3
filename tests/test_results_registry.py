"""The registry of results blocks (analysis/results/registry.py) is what results.json, the docs and the
table and figure builders agree on (issue 16 item 6)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from analysis.estimators.registration import (
    ESTIMATE_NAMES,
    Block,
    Estimates,
    RegistrationError,
    ResultsBlock,
    check_serialises,
)
from analysis.evidence import load_package
from analysis.figures.registry import FIGURE_ORDER, block_readers
from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results, core
from analysis.results.inputs import ResultsInputs
from analysis.results.registry import (
    DOCS_PATH,
    REASONS_FROM,
    RESULTS_BLOCKS,
    SERIALISED_BY,
    ResultsRegistryError,
    assemble,
    block_reasons,
    check_registry,
    collect_reasons,
    docs_index,
    entry,
    with_docs_index,
)
from analysis.tables.declare import DeclarationError, declaration
from analysis.tables.registry import TABLE_ORDER
from support.paths import HANDMADE, REPO

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
    assert check_registry(block_readers()) == []
    assert check_registry({"no_such_block": (["t"], [])}) != []  # a reader of a key the registry lacks is reported
    with pytest.raises(ResultsRegistryError, match=r"registry\.py"):
        entry("no_such_block")


def test_the_docs_index_is_generated_from_the_registry() -> None:
    text = (REPO / DOCS_PATH).read_text(encoding="utf-8")
    assert with_docs_index(text, block_readers()) == text, (
        f"{DOCS_PATH} is stale; run `python generate.py regenerate --only docs`")
    for block in RESULTS_BLOCKS:
        assert f"| `{block.key}` |" in docs_index()


def test_every_serialised_estimate_is_an_attribute_of_estimates_claimed_once() -> None:
    """The attribute -> block map the reader check uses is the registrations' ``serialises``, validated against
    the Estimates Protocol: an unknown attribute and one claimed by two blocks are refused with the fix."""
    assert {name.split(".")[0] for name in SERIALISED_BY} <= ESTIMATE_NAMES
    assert SERIALISED_BY["panel"] == "panel" and SERIALISED_BY["bounds.per_configuration"] == "bounds_detail"
    typo = ResultsBlock("x", core.panel_block, "{}", "", serialises=("panle",))
    with pytest.raises(RegistrationError, match=r"add a property 'panle' to analysis\.estimators\.registration"):
        check_serialises((typo,))
    twice = ResultsBlock("y", core.panel_block, "{}", "", serialises=("panel",))
    with pytest.raises(RegistrationError, match=r"'panel' is serialised by both 'panel' and 'y'"):
        check_serialises((*RESULTS_BLOCKS, twice))


def blocks_read(builder: Callable[..., Any]) -> set[str]:
    """Keys of the results blocks a builder reads, found in its source (analysis.tables.declare's module note):
    ``ctx.estimates.<attribute>[.<field>]`` mapped through the registrations' ``serialises`` (SERIALISED_BY),
    ``.block_value(<REGISTRATION>)``, and ``inference_row`` (every registration that has one); followed into
    the functions of analysis.tables and analysis.figures it calls."""
    def estimate_key(node: ast.AST) -> str | None:
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)):
            return None
        if node.value.attr == "estimates":
            return SERIALISED_BY.get(node.attr)
        if isinstance(node.value.value, ast.Attribute) and node.value.value.attr == "estimates":
            return SERIALISED_BY.get(f"{node.value.attr}.{node.attr}")
        return None

    keys: set[str] = set()
    seen: set[Callable[..., Any]] = set()
    todo = [builder]
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        module = importlib.import_module(fn.__module__)
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        fields: set[int] = set()  # ctx.estimates.<attribute> nodes read only for a field another block serialises
        for node in ast.walk(tree):
            key = estimate_key(node)
            if key is not None and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and node.value.attr != "estimates":
                keys.add(key)
                fields.add(id(node.value))
        for node in ast.walk(tree):
            key = estimate_key(node)
            if key is not None and id(node) not in fields and isinstance(node, ast.Attribute) \
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "estimates":
                keys.add(key)
            if isinstance(node, ast.Attribute) and node.attr == "inference_row":
                keys |= {b.key for b in RESULTS_BLOCKS if b.inference_row is not None}
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "block_value":
                keys |= {getattr(module, a.id).key for a in node.args
                         if isinstance(a, ast.Name) and isinstance(getattr(module, a.id, None), ResultsBlock)}
            if isinstance(f, ast.Name):
                target = getattr(module, f.id, None)
                if inspect.isfunction(target) and target.__module__.startswith(("analysis.tables.",
                                                                                 "analysis.figures.")):
                    todo.append(target)
    return keys


def reader_mismatches(builders: tuple[Callable[..., Any], ...]) -> list[str]:
    """One sentence per difference between what a builder reads and what it declares, saying the fix."""
    where = {b.key: f"{b.compute.__module__}.{b.key.upper()}_REGISTRATION" for b in RESULTS_BLOCKS}
    problems = []
    for builder in builders:
        name = f"{builder.__module__}.{builder.__name__}"
        read, declared = blocks_read(builder), set(declaration(builder).keys)
        problems += [f"{name} reads results block {k!r}; add {where[k]} to its @{declaration(builder).kind}(reads=...)"
                     for k in sorted(read - declared)]
        problems += [f"{name} declares it reads {k!r} but does not; remove {where[k]} from its "
                     f"@{declaration(builder).kind}(reads=...)" for k in sorted(declared - read)]
    return problems


@pytest.mark.parametrize("kind", ["tables", "figures"])
def test_every_builder_declares_exactly_the_blocks_it_reads(kind: str) -> None:
    problems = reader_mismatches(TABLE_ORDER if kind == "tables" else FIGURE_ORDER)
    assert problems == [], "\n".join(problems)


def test_a_builder_that_reads_an_undeclared_block_fails_with_the_fix() -> None:
    from analysis.tables.declare import table
    from analysis.tables.spec import empty_table

    @table(section=None, reads=())
    def undeclared(ctx: Any) -> Any:
        return empty_table("t_x", str(ctx.estimates.families.mean), [], "")

    undeclared.__module__ = "analysis.tables.panel"  # resolved against a builder module's names
    assert reader_mismatches((undeclared,)) == [
        "analysis.tables.panel.undeclared reads results block 'families'; add "
        "analysis.results.core.FAMILIES_REGISTRATION to its @table(reads=...)"]
    with pytest.raises(DeclarationError, match=r"decorate it with @table"):
        declaration(lambda ctx: None)


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
    """Where the code of a block's ``compute`` is (the docs index's "computed by" names it)."""
    claimed = getattr(importlib.import_module(compute.__module__), compute.__qualname__, None)
    assert claimed is compute, f"{compute.__module__}.{compute.__qualname__} (the docs index's name) is not it"
    return {str(Path(compute.__code__.co_filename).resolve())}


def test_every_registration_is_declared_beside_the_function_that_computes_its_block() -> None:
    """One convention: block function ``<key>_block`` and beside it ``<KEY>_REGISTRATION``, one per block."""
    declared = _registrations_declared()
    for block in RESULTS_BLOCKS:
        modules = _declaring_modules(block, declared)
        assert len(modules) == 1, f"{block.key}: declared in {modules or 'no module'}, want exactly one"
        assert block.compute.__name__ == f"{block.key}_block", (
            f"{block.key}: name its block function {block.key}_block (not {block.compute.__name__})")
        assert any(getattr(importlib.import_module(modules[0]), n) is block for n in declared[modules[0]]
                   if n == f"{block.key.upper()}_REGISTRATION"), (
            f"{block.key}: name its registration {block.key.upper()}_REGISTRATION in {modules[0]}")
        hints = typing.get_type_hints(block.compute)
        assert next(iter(hints.values())) is Estimates, f"{block.key}_block: type its parameter as Estimates"
        here = str(Path(inspect.getfile(importlib.import_module(modules[0]))).resolve())
        assert _source_files(block.compute) == {here}, (
            f"{block.key} is registered in {modules[0]} but computed in {sorted(_source_files(block.compute))}; "
            "declare its ResultsBlock beside its block function and list that constant in RESULTS_BLOCKS")


def test_every_registration_next_to_its_statistic_is_listed_once() -> None:
    """Every ResultsBlock(...) a module of analysis declares is in RESULTS_BLOCKS, once."""
    declared = _registrations_declared()
    assert "HODGES_LEHMANN_REGISTRATION" in declared["analysis.estimators.hodges_lehmann"]
    for module, names in declared.items():
        for name in names:
            registration = getattr(importlib.import_module(module), name)
            assert sum(b is registration for b in RESULTS_BLOCKS) == 1, (
                f"{module}.{name} is not in RESULTS_BLOCKS; list it in analysis/results/registry.py")


def test_the_pilot_block_computes_only_the_companion_blocks_it_reads(package) -> None:
    """The companion's blocks are computed for the v2_pilot block alone, so only the ones pilot_value reads
    (PILOT_READS) are computed; the block is the same as from every block of the companion."""
    from analysis.results.pilot import PILOT_READS, pilot_value

    inputs = ResultsInputs(package, DEFAULT_PARAMS, pilot=package, pilot_path=HANDMADE)
    block = assemble(inputs, ("evidence", "build"))["v2_pilot"]
    companion = inputs.pilot_inputs
    assert companion is not None
    assert set(companion.blocks) == {r.key for r in PILOT_READS}

    seen: set[str] = set()

    class Reads(dict):
        def get(self, key, default=None):  # type: ignore[override]
            seen.add(key)
            return super().get(key, default)

    full = Reads(assemble(ResultsInputs(package, DEFAULT_PARAMS)))
    assert json.loads(json.dumps(pilot_value(companion, HANDMADE, full))) == json.loads(json.dumps(block))
    assert seen == {r.key for r in PILOT_READS}


@pytest.mark.parametrize("keys", [("panel", "reasons"), ("panel", "no_such_block")])
def test_assemble_refuses_keys_it_cannot_compute_alone(package, keys) -> None:
    """``reasons`` gathers every block before it, so it cannot be assembled from a subset (a partial one would
    be cached for the full results.json); a key the registry lacks is a typo, never silently skipped."""
    from analysis.results.registry import ResultsRegistryError

    inputs = ResultsInputs(package, DEFAULT_PARAMS)
    with pytest.raises(ResultsRegistryError, match=r"assemble\(keys=\.\.\.\)"):
        assemble(inputs, keys=keys)
    assert "reasons" not in inputs.blocks
