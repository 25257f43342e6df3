"""One public name, one thing (issue 21): no two modules of ``analysis/`` define the same public top-level
function or class, so that a name found by ``grep`` says which definition it is.

Two kinds of repetition are allowed, and nothing else:

* A statistic's own name, shared by its layers. The results, table and figure registries name their entries by
  function name (``ResultsBlock.tables``/``figures`` and the generated docs index print those names), so the
  block, table and figure of one statistic are all called after it. A name may therefore repeat when every
  definition but one is a registered builder (a results block's compute function, a table of ``TABLE_ORDER``,
  a figure of ``FIGURE_ORDER``) and the one left is the statistic's estimator in ``analysis.estimators``.
* :data:`ALLOWED` (``main`` and three public API functions): each entry names the exact modules that may share
  the name and why. An entry whose name no longer repeats in exactly those modules fails the test too, so the
  list cannot go stale.

The scan reads the source with :mod:`ast` (top-level ``def``, ``async def`` and ``class`` whose name does not
start with ``_``); the oracle of the scanner is the planted pair of modules in
``test_the_scan_finds_a_planted_duplicate``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from support.paths import REPO

PACKAGE = REPO / "analysis"

ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "main": (frozenset({"analysis.cli", "analysis.runner.cli", "analysis.audit.__main__",
                        "analysis.reconstruct.__main__"}),
             "the entry point of each of the four command lines (carriers, carriers-runner, python -m "
             "analysis.audit, python -m analysis.reconstruct); pyproject's [project.scripts] names `module:main`"),
    "family_weighted": (frozenset({"analysis.api.stats", "analysis.estimators.families"}),
                        "the public one-call function (issue 33) is the documented wrapper of the estimator it names"),
    "claims_audit": (frozenset({"analysis.api.studies", "analysis.tables.failures"}),
                     "the public one-call function (issue 33) returns the table of the same name"),
    "design_block": (frozenset({"analysis.plan.report_blocks", "analysis.results.extras"}),
                     "the results block function of the key `design` (`<key>_block`) and the plan's builder"),
    "preregistration_block": (frozenset({"analysis.plan.report_blocks", "analysis.results.extras"}),
                              "the results block function of the key `preregistration` (`<key>_block`) wraps the "
                              "plan's builder of the same name"),
    "sparse_block": (frozenset({"analysis.results.core", "analysis.tables.context"}),
                     "the results block function of the key `sparse` (`<key>_block`), and the report's reader of "
                     "that block from results.json"),
}
"""Names that may repeat: name -> (the modules that define it, why)."""


def public_definitions(package: Path) -> dict[str, set[str]]:
    """Public top-level function and class name -> the dotted modules under ``package`` that define it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
            if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and not node.name.startswith("_")):
                found[node.name].add(module)
    return dict(found)


def registered_builders() -> set[tuple[str, str]]:
    """(module, name) of every results block compute function, table builder and figure builder."""
    from analysis.figures.registry import FIGURE_ORDER
    from analysis.results.registry import RESULTS_BLOCKS
    from analysis.tables.registry import TABLE_ORDER

    functions = (*TABLE_ORDER, *FIGURE_ORDER, *(block.compute for block in RESULTS_BLOCKS))
    return {(f.__module__, f.__code__.co_name) for f in functions}


def unexplained_repeats(definitions: dict[str, set[str]], registered: set[tuple[str, str]],
                        allowed: dict[str, tuple[frozenset[str], str]]) -> dict[str, list[str]]:
    """Names defined in more than one module that neither rule of the module note allows -> their modules."""
    out: dict[str, list[str]] = {}
    for name, modules in sorted(definitions.items()):
        if len(modules) < 2 or (name in allowed and modules == allowed[name][0]):
            continue
        rest = [m for m in modules if (m, name) not in registered]
        if len(rest) <= 1 and all(m.startswith("analysis.estimators.") for m in rest):
            continue  # one statistic: its estimator and its registered block, table and figure
        out[name] = sorted(modules)
    return out


def test_no_two_modules_define_the_same_public_name() -> None:
    repeats = unexplained_repeats(public_definitions(PACKAGE), registered_builders(), ALLOWED)
    assert repeats == {}, (
        "these public names are defined in more than one module of analysis/: "
        + "; ".join(f"{name} in {', '.join(mods)}" for name, mods in repeats.items())
        + ". Rename one so the name says what it holds, make it private (_name), or, if the repetition is meant, "
        "add it to ALLOWED in tests/test_unique_names.py with the reason")


def test_every_allowance_is_still_needed() -> None:
    definitions = public_definitions(PACKAGE)
    stale = {name: sorted(definitions.get(name, ())) for name, (modules, _why) in ALLOWED.items()
             if definitions.get(name, set()) != modules}
    assert stale == {}, (f"ALLOWED in tests/test_unique_names.py no longer matches the code: {stale} "
                         "(name -> the modules that define it now); update or drop those entries")
    assert all(why for _modules, why in ALLOWED.values())


def test_the_scan_finds_a_planted_duplicate(tmp_path: Path) -> None:
    # Hand-built package: `Verdict` twice (one a class, one a function), `_private` twice (ignored), `nested`
    # only inside a function (ignored), `shared` in a registered table and in an estimator (allowed).
    pkg = tmp_path / "analysis"
    (pkg / "estimators").mkdir(parents=True)
    (pkg / "tables").mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "a.py").write_text("class Verdict:\n    pass\ndef _private(): ...\n", encoding="utf-8")
    (pkg / "b.py").write_text("def Verdict(): ...\ndef _private(): ...\ndef f():\n    def nested(): ...\n",
                              encoding="utf-8")
    (pkg / "c.py").write_text("def nested(): ...\n", encoding="utf-8")
    (pkg / "estimators" / "s.py").write_text("def shared(): ...\n", encoding="utf-8")
    (pkg / "tables" / "s.py").write_text("async def shared(): ...\n", encoding="utf-8")
    definitions = public_definitions(pkg)
    assert definitions == {"Verdict": {"analysis.a", "analysis.b"}, "f": {"analysis.b"}, "nested": {"analysis.c"},
                           "shared": {"analysis.estimators.s", "analysis.tables.s"}}
    registered = {("analysis.tables.s", "shared")}
    assert unexplained_repeats(definitions, registered, {}) == {"Verdict": ["analysis.a", "analysis.b"]}
    # the same name unregistered is a duplicate; an allowance with the exact modules lets it pass, any other not
    assert "shared" in unexplained_repeats(definitions, set(), {})
    both = {"Verdict": (frozenset({"analysis.a", "analysis.b"}), "x")}
    assert unexplained_repeats(definitions, registered, both) == {}
    assert "Verdict" in unexplained_repeats(definitions, registered, {"Verdict": (frozenset({"analysis.a"}), "x")})
