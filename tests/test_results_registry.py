"""The registry of results blocks (analysis/results/registry.py) is what results.json, the docs and the
table and figure builders agree on (issue 16 item 6)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from analysis.evidence import load_package
from analysis.figures.registry import FIGURE_ORDER
from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results
from analysis.results.block import Block
from analysis.results.inputs import ResultsInputs
from analysis.results.registry import (
    DOCS_PATH,
    REASONS_FROM,
    RESULTS_BLOCKS,
    ResultsRegistryError,
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


_HELPERS = {"sparse_block": "sparse"}
"""Table helpers (analysis.tables.context) that read one results block for their caller."""
_ESTIMATES = {"panel": "panel", "fill": "fill", "headings": "headings_detail", "carrier": "carrier_audit",
              "failures": "failure_modes", "survival": "fact_survival", "pilot_inputs": "v2_pilot",
              "sparse_contract": "sparse", "equal_counts": "sparse", "bounds": "bounds", "families": "families",
              "each_excluded": "sensitivity"}
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


def _modules_declaring_a_registration() -> list[str]:
    """Modules of analysis whose top level assigns ``REGISTRATION`` (read from the source, not imported)."""
    found = []
    for path in sorted((REPO / "analysis").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Name) and t.id == "REGISTRATION"
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])) for node in tree.body):
            found.append(".".join(path.relative_to(REPO).with_suffix("").parts))
    return found


def test_every_registration_next_to_its_statistic_is_listed_once() -> None:
    """A statistic's module declares REGISTRATION = ResultsBlock(...); the registry lists it, once."""
    modules = _modules_declaring_a_registration()
    assert "analysis.estimators.hodges_lehmann" in modules
    for module in modules:
        registration = importlib.import_module(module).REGISTRATION
        assert sum(b is registration for b in RESULTS_BLOCKS) == 1, (
            f"{module}.REGISTRATION is not in RESULTS_BLOCKS; list it in analysis/results/registry.py")
