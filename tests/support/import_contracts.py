"""Two import-linter contract types of this project (registered in pyproject.toml, ``contract_types``).

import-linter's own ``acyclic_siblings`` contract looks for cycles between the *children* of each
package, so a cycle that runs through a package's own ``__init__`` (``pkg`` -> ``pkg.a`` -> ``pkg``)
passes it, and no import-linter contract sees an import made through ``importlib`` or
``__import__``. These two close both holes:

- ``acyclic_modules``: no import cycle between any two modules under a container, package
  ``__init__`` modules and function-level imports included (grimp's graph, strongly connected
  components). ``ignore_imports`` names the imports a known cycle may use for now; an entry that
  matches no import breaks the contract, so an allowance is removed once its cycle is gone.
- ``static_imports``: every import under a container is an import statement, so the other
  contracts see it. It parses every module's source and refuses calls that import by name at run
  time (``importlib.import_module``, ``__import__``, ``importlib.reload``, spec loading,
  ``runpy``, ``exec``/``eval``) and ``find_spec`` of a container module named by a literal. ``allow`` lists
  ``"module: reason"``; an entry whose module makes no such call breaks the contract too.

Both run with ``lint-imports`` from the repository root (which puts the root on ``sys.path``);
tests/test_architecture.py plants violations in a copy of the package and checks they are caught.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import grimp
from importlinter.application import contract_utils, output
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck, InvalidContractOptions

DYNAMIC_IMPORT_CALLS = frozenset({
    "import_module", "reload", "exec_module", "load_module", "module_from_spec",
    "spec_from_file_location", "spec_from_loader", "run_module", "run_path",
})
"""Calls (a function or a method of that name) that import a module named only at run time."""

DYNAMIC_BUILTINS = frozenset({"__import__", "exec", "eval"})
"""Builtins that can import or run code the import graph cannot see."""


# --------------------------------------------------------------------------- acyclic_modules

def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def one_cycle(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the first module of ``component`` (breadth first), closed: [a, ..., a]."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(edges[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in previous:
                    previous[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise ValueError(f"{component} is not a cycle")  # unreachable for a strongly connected component


class AcyclicModulesContract(Contract):
    """No import cycle between any two modules under ``containers`` (see the module docstring)."""

    type_name = "acyclic_modules"

    containers = fields.ListField(subfield=fields.StringField())
    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph, ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=AlertLevel.ERROR)
        cycles = []
        for container in self.containers:  # type: ignore[attr-defined]
            modules = {m for m in graph.modules if m == container or m.startswith(container + ".")}
            edges = {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}
            cycles += [one_cycle(edges, c) for c in strongly_connected(edges)]
        return ContractCheck(kept=not cycles, warnings=list(removal.warnings),
                             ignored_import_count=removal.ignored_import_count,
                             metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(f"Import cycle: {' -> '.join(cycle)}")
            output.new_line()
        output.print("Break each cycle (move what both need into a lower module), or, for a known cycle "
                     "being broken, name one of its imports in ignore_imports with the issue.")


# --------------------------------------------------------------------------- static_imports

@dataclass(frozen=True)
class DynamicImport:
    """One call that imports by a name computed at run time.

    Attributes:
        module: the dotted module that makes the call.
        line: its line number.
        call: the called name (``import_module``, ``__import__``, ...).
    """

    module: str
    line: int
    call: str


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def dynamic_imports(source: str, module: str, container: str) -> list[DynamicImport]:
    """Every call in ``source`` that imports a module the import graph cannot see."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        hit = (name in DYNAMIC_IMPORT_CALLS
               or (name in DYNAMIC_BUILTINS and isinstance(node.func, ast.Name)))
        if name == "find_spec" and node.args:  # finding a container module imports its parents
            arg = node.args[0]
            hit = (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                   and (arg.value == container or arg.value.startswith(container + ".")))
        if hit and name is not None:
            found.append(DynamicImport(module, node.lineno, name))
    return found


def container_sources(container: str) -> dict[str, Path]:
    """Every module of the package ``container`` (found on sys.path, not imported) and its file."""
    spec = importlib.util.find_spec(container)  # a top-level name: nothing is executed
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{container} is not a package on sys.path; run lint-imports from the repository root")
    root = Path(next(iter(spec.submodule_search_locations)))
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


class StaticImportsContract(Contract):
    """Every import under ``containers`` is an import statement (see the module docstring)."""

    type_name = "static_imports"

    containers = fields.ListField(subfield=fields.StringField())
    allow = fields.ListField(subfield=fields.StringField(), required=False)

    def validate(self) -> None:
        bad = [entry for entry in self.allow or [] if ":" not in entry  # type: ignore[attr-defined]
               or not entry.split(":", 1)[1].strip()]
        if bad:
            raise InvalidContractOptions({"allow": f"{bad}: write each entry as 'module: the reason it may'"})

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        allowed = {e.split(":", 1)[0].strip(): e.split(":", 1)[1].strip()
                   for e in self.allow or []}  # type: ignore[attr-defined]
        calls: list[DynamicImport] = []
        for container in self.containers:  # type: ignore[attr-defined]
            for module, path in container_sources(container).items():
                calls += dynamic_imports(path.read_text(encoding="utf-8"), module, container)
        refused = [c for c in calls if c.module not in allowed]
        unused = sorted(set(allowed) - {c.module for c in calls})
        return ContractCheck(kept=not refused and not unused,
                             metadata={"refused": refused, "unused": unused})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for call in check.metadata["refused"]:
            output.print_error(f"{call.module}:{call.line}: {call.call}() imports by a run-time name; "
                               "the other contracts cannot see it. Write an import statement.")
        for module in check.metadata["unused"]:
            output.print_error(f"{module} is allowed a dynamic import but makes none; remove it from allow.")
        output.new_line()
