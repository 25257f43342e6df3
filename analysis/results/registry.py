"""The one registry of results.json blocks: which blocks results.json has, in its key order. Results
assembly, the null-reason lookup, the generated index of docs/RESULTS_KEYS.md and its test all read
:data:`RESULTS_BLOCKS`.

Every block is registered where it is computed: a block function ``<key>_block(e: Estimates) -> Block`` and
beside it ``<KEY>_REGISTRATION = ResultsBlock(...)`` (key, block function, JSON shape, docs row, the estimates
it serialises, its report ``sentence`` and, for an inference on the panel effect, its ``inference_row``).
:data:`RESULTS_BLOCKS` lists them by plain reference, in results.json order. The one registration declared
here is :data:`REASONS_REGISTRATION`, the top-level ``reasons`` key, which :func:`assemble` computes from the
blocks before it. Tables and figures declare the registrations they read (``@table(reads=...)``,
``@figure(reads=...)``); the docs index's reader columns come from those declarations
(analysis.figures.registry.block_readers).

Adding a statistic: docs/ADDING_A_STATISTIC.md.

Methods note: blocks are computed in registry order, which is results.json's key order (docs/RESULTS_CONTRACT.md
fixes the contract keys; the extras follow). Every block carries its own null reasons (Block.reasons);
for the blocks of :data:`REASONS_FROM` they are also written, prefixed with the block key, to the
top-level ``reasons`` key that docs/RESULTS_CONTRACT.md defines (summary fields first, in REASONS_FROM order, then
per-configuration fields). Other blocks keep a sibling ``reason`` field inside their value.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from analysis.estimators import arm_recall, hodges_lehmann
from analysis.estimators import secondary_results as secondary
from analysis.estimators.common import json_ready
from analysis.estimators.registration import Block, Estimates, ResultsBlock, check_serialises
from analysis.results import core, extras, pilot, pilot_pointer

REASONS_FROM: tuple[str, ...] = ("panel", "bounds", "families", "dependence", "sparse")
"""Blocks whose null reasons results.json lists under the top-level ``reasons`` key, in its order."""
_PER_CONFIGURATION = "effects."


class ResultsRegistryError(ValueError):
    """The registry is inconsistent (a key twice, a reader that does not exist); fix the entry."""


def collect_reasons(computed: Mapping[str, Block]) -> dict[str, str]:
    """The top-level ``reasons`` of results.json from the blocks of REASONS_FROM."""
    out: dict[str, str] = {}
    for per_configuration in (False, True):
        for key in REASONS_FROM:
            block = computed.get(key)
            for field, why in (block.reasons if block is not None else {}).items():
                if field.startswith(_PER_CONFIGURATION) == per_configuration:
                    out[f"{key}.{field}"] = why
    return out


def reasons_block(_e: Estimates) -> Block:
    """``reasons``: a placeholder never called; :func:`assemble` fills the key with :func:`collect_reasons`
    of the blocks before it."""
    return Block({})


REASONS_REGISTRATION = ResultsBlock(
    "reasons", reasons_block, "{\"<key>.<field>\": why}",
    "why each null statistic of panel, bounds, families, dependence and sparse is null")
"""The top-level ``reasons`` key: the one registration declared here, since :func:`assemble` computes it
(:func:`collect_reasons` of the blocks before it); its compute is a placeholder never called."""

RESULTS_BLOCKS: tuple[ResultsBlock, ...] = (
    core.EVIDENCE_REGISTRATION,
    core.PANEL_REGISTRATION,
    core.SPARSE_REGISTRATION,
    core.BOUNDS_REGISTRATION,
    core.FAMILIES_REGISTRATION,
    core.DEPENDENCE_REGISTRATION,
    core.HEADINGS_REGISTRATION,
    core.PROVENANCE_REGISTRATION,
    core.CONTRAST_REGISTRATION,
    core.PANEL_DETAIL_REGISTRATION,
    core.SENSITIVITY_REGISTRATION,
    core.BOUNDS_DETAIL_REGISTRATION,
    core.FAMILIES_DETAIL_REGISTRATION,
    core.DEPENDENCE_DETAIL_REGISTRATION,
    core.MCNEMAR_REGISTRATION,
    core.MCNEMAR_PAIRING_REGISTRATION,
    core.MCNEMAR_PAIRING_FULL_REGISTRATION,
    core.MCNEMAR_SECONDARY_REGISTRATION,
    core.CELLS_REGISTRATION,
    REASONS_REGISTRATION,
    secondary.FILL_REGISTRATION,
    secondary.HEADINGS_DETAIL_REGISTRATION,
    secondary.CARRIER_AUDIT_REGISTRATION,
    secondary.FAILURE_MODES_REGISTRATION,
    secondary.BEYOND_PAPER_REGISTRATION,
    hodges_lehmann.HODGES_LEHMANN_REGISTRATION,
    arm_recall.ARM_RECALL_REGISTRATION,
    extras.FACT_SURVIVAL_REGISTRATION,
    extras.DOSE_RESPONSE_REGISTRATION,
    extras.CLAIMS_AUDIT_REGISTRATION,
    pilot.V2_PILOT_REGISTRATION,
    pilot_pointer.V2_PILOT_POINTER_REGISTRATION,
    extras.PREREGISTRATION_REGISTRATION,
    extras.DESIGN_REGISTRATION,
)
"""Every top-level key of results.json, in its order."""
INFERENCE_ROWS: tuple[ResultsBlock, ...] = tuple(b for b in RESULTS_BLOCKS if b.inference_row is not None)
"""The registered statistics that feed a row of the panel-inference table t_beyond_inference (its reads)."""
SERIALISED_BY: dict[str, str] = check_serialises(RESULTS_BLOCKS)
"""Estimates attribute (or ``attribute.field``) -> the key of the block that serialises it (checked on import:
an unknown attribute or one claimed twice raises RegistrationError)."""


def entry(key: str) -> ResultsBlock:
    """The registry entry of ``key``."""
    for block in RESULTS_BLOCKS:
        if block.key == key:
            return block
    raise ResultsRegistryError(f"no results block {key!r}; add it to analysis/results/registry.py")


def assemble(inputs: Estimates, sources: Iterable[str] = ("evidence",),
             keys: Collection[str] | None = None) -> dict[str, Any]:
    """results.json as a dict: every block of ``sources`` in registry order, JSON-ready; only the blocks named
    in ``keys`` when given (a reader of a few blocks, such as v2_pilot, computes no others; ``reasons``, which
    gathers every block's, and keys the registry lacks are refused with ResultsRegistryError).

    Each block is computed once per ``inputs`` (kept in ``inputs.blocks``): assembling the evidence
    blocks for the audit and then every block for results.json computes the evidence blocks once."""
    wanted = set(sources)
    if keys is not None:
        bad = sorted(set(keys) - {b.key for b in RESULTS_BLOCKS if b.key != "reasons"})
        if bad:
            raise ResultsRegistryError(f"assemble(keys=...) names {', '.join(map(repr, bad))}: name results blocks "
                                       "other than 'reasons' (which needs every block before it)")
    computed: dict[str, Block] = {}
    out: dict[str, Any] = {}
    for spec in RESULTS_BLOCKS:
        if spec.source not in wanted or (keys is not None and spec.key not in keys):
            continue
        if spec.key in inputs.blocks:
            block = inputs.blocks[spec.key]
        else:
            block = Block(collect_reasons(computed)) if spec.key == "reasons" else spec.compute(inputs)
            inputs.blocks[spec.key] = block
        if block is None:
            continue
        computed[spec.key] = block
        out[spec.key] = json_ready(block.value) if spec.source == "evidence" else block.value
    return out


def block_reasons(results: Mapping[str, Any], key: str) -> dict[str, str]:
    """The null reasons of block ``key`` as results.json records them (field -> why).

    Readers (table builders, the report) ask here instead of reaching into results["reasons"]:
    for the REASONS_FROM blocks they come from the top-level ``reasons`` key, for the others from
    the block's own ``reasons`` mapping and ``reason`` field (under ``"*"``).
    """
    entry(key)
    if key in REASONS_FROM:
        prefix = f"{key}."
        return {k[len(prefix):]: v for k, v in (results.get("reasons") or {}).items() if k.startswith(prefix)}
    block = results.get(key)
    if not isinstance(block, Mapping):
        return {}
    own = dict(block["reasons"]) if isinstance(block.get("reasons"), Mapping) else {}
    if isinstance(block.get("reason"), str):
        own.setdefault("*", block["reason"])  # the block's one reason
    return own


def check_registry(readers: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> list[str]:
    """Problems of the registry: duplicate keys, readers declared for a key the registry lacks.
    ``readers``: block key -> (table builders, figure builders) that declare they read it."""
    keys = [b.key for b in RESULTS_BLOCKS]
    problems = [f"key {k!r} registered twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
    problems += [f"{k!r} is read by {', '.join([*t, *f])} but no registration of RESULTS_BLOCKS has that key; "
                 "list its registration in analysis/results/registry.py"
                 for k, (t, f) in sorted(readers.items()) if k not in keys]
    return problems


def docs_index(readers: Mapping[str, tuple[Iterable[str], Iterable[str]]] | None = None) -> str:
    """The generated index of docs/RESULTS_KEYS.md (between its BEGIN/END markers); ``readers``: block key ->
    (table builders, figure builders) that read it (analysis.figures.registry.block_readers)."""
    lines = ["| key | computed by | shape | meaning | tables | figures |", "|---|---|---|---|---|---|"]
    for b in RESULTS_BLOCKS:
        fn = b.compute
        where = "assemble (from the blocks before it)" if b.key == "reasons" else (
            f"`{fn.__module__}.{fn.__qualname__}`")
        meaning = b.doc + (" (contract)" if b.contract else "") + (" (build only)" if b.source == "build" else "")
        tables, figures = (readers or {}).get(b.key, ((), ()))
        lines.append(f"| `{b.key}` | {where} | `{b.shape}` | {meaning} | "
                     f"{', '.join(tables) or '—'} | {', '.join(figures) or '—'} |")
    return "\n".join(lines) + "\n"


DOCS_PATH = "docs/RESULTS_KEYS.md"
INDEX_BEGIN = "<!-- BEGIN generated by `python generate.py regenerate` -->"
INDEX_END = "<!-- END generated -->"


def with_docs_index(text: str, readers: Mapping[str, tuple[Iterable[str], Iterable[str]]] | None = None) -> str:
    """``text`` (docs/RESULTS_KEYS.md) with the generated index between its markers replaced."""
    head, sep, rest = text.partition(INDEX_BEGIN)
    _old, sep2, tail = rest.partition(INDEX_END)
    if not sep or not sep2:
        raise ResultsRegistryError(f"{DOCS_PATH} lacks the markers {INDEX_BEGIN!r} ... {INDEX_END!r}; add them")
    return f"{head}{INDEX_BEGIN}\n{docs_index(readers)}{INDEX_END}{tail}"


def write_docs_index(repo: Path, readers: Mapping[str, tuple[Iterable[str], Iterable[str]]]) -> Path:
    """Rewrite the generated index of ``repo``'s docs/RESULTS_KEYS.md from the registry and the builders'
    ``readers`` (analysis.figures.registry.block_readers); returns its path."""
    from analysis.safeio import read_text, write_text

    doc = repo / DOCS_PATH
    write_text(doc, with_docs_index(read_text(doc), readers))
    return doc
