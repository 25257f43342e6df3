"""The one registry of results.json blocks: key, computing function, JSON shape, documentation row,
and the tables and figures that read each block. Results assembly, the null-reason lookup, the
generated index of docs/RESULTS_KEYS.md and its test all read :data:`RESULTS_BLOCKS`.

Adding a statistic (docs/ADDING_A_STATISTIC.md): write the pure estimator and its test, and add one
entry here, in the place its key takes in results.json, with its compute function, JSON shape, docs row,
the tables and figures that read it, its report ``sentence`` and, for an inference on the panel effect,
its ``inference_row``; then ``python -m analysis.results.registry --write-docs && python generate.py``.

Methods note: blocks are computed in registry order, which is results.json's key order (docs/RESULTS_CONTRACT.md
fixes the contract keys; the extras follow). Every block carries its own null reasons (Block.reasons);
for the blocks of :data:`REASONS_FROM` they are also written, prefixed with the block key, to the
top-level ``reasons`` key that docs/RESULTS_CONTRACT.md defines (summary fields first, in REASONS_FROM order, then
per-configuration fields). Other blocks keep a sibling ``reason`` field inside their value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from analysis.estimators import hodges_lehmann as hl
from analysis.estimators import secondary_results as secondary
from analysis.estimators.common import json_ready
from analysis.results import core, extras
from analysis.results.block import Block, InferenceRow, ResultsBlock
from analysis.results.inputs import ResultsInputs
from analysis.results.pilot import pilot_block

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


def _named(fn: Any, compute: Any) -> Any:
    """``compute`` under the name of the block function ``fn`` it serialises (the docs index names it)."""
    compute.__name__ = compute.__qualname__ = fn.__name__
    compute.__module__, compute.__doc__ = fn.__module__, fn.__doc__
    return compute


def _fill(i: ResultsInputs) -> Block:
    return Block(secondary.fill_json(i.fill))


def _headings_detail(i: ResultsInputs) -> Block:
    return Block(secondary.headings_detail_json(i.headings, i.params))


def _carrier_audit(i: ResultsInputs) -> Block:
    return Block(secondary.carrier_json(i.carrier, i.study.scenario))


def _failure_modes(i: ResultsInputs) -> Block:
    return Block(secondary.failures_json(i.failures))


def _beyond_paper(i: ResultsInputs) -> Block:
    return Block(secondary.beyond_paper_block(i.package, i.params, i.panel, i.dependence))


def _hodges_lehmann(i: ResultsInputs) -> Block:
    return Block(hl.hodges_lehmann(i.panel.frame.get_column("effect").to_numpy(), i.params.alpha))


def _hodges_lehmann_row(v: Mapping[str, Any]) -> InferenceRow:
    return InferenceRow("hodges_lehmann", "Hodges–Lehmann (median of Walsh averages), exact signed-rank interval",
                        v.get("estimate"), v.get("lo"), v.get("hi"), None, v.get("n"), "configurations")


def _v2_pilot(i: ResultsInputs) -> Block | None:
    """``v2_pilot``: the companion pilot through the same estimators, when one is named."""
    if i.pilot_inputs is None or i.pilot_path is None:
        return None
    return Block(pilot_block(i.pilot_inputs, i.pilot_path, assemble(i.pilot_inputs)))


def _reasons_placeholder(_i: ResultsInputs) -> Block:  # filled by assemble() from the blocks before it
    return Block({})


RESULTS_BLOCKS: tuple[ResultsBlock, ...] = (
    ResultsBlock("evidence", core.evidence, "{sha256: {file: hex}}",
                 "SHA-256 of every file named in the provenance lock", contract=True),
    ResultsBlock("panel", core.panel, "{configurations, mean, median, q1, q3, min, max, positive, negative, zero, "
                 "loo_min, loo_max, dispersion_lo, dispersion_hi, effects: {configuration: {...}}}",
                 "equal-configuration summary of the primary contrast over the panel, plus effects per configuration",
                 contract=True, tables=("table3", "panel_summary", "sparse_cells", "threshold_classes", "borderline"),
                 figures=("forest", "sensitivity")),
    ResultsBlock("sparse", core.sparse, "{min_pairs_4: {configurations, mean, median}, equal_counts: {...}}",
                 "the panel restricted to configurations with >= 4 complete pairs, and to equal valid counts",
                 contract=True, tables=("sparse_cells",), figures=("sensitivity",)),
    ResultsBlock("bounds", core.bounds, "{lo, hi}", "planned-repeat bounds (missing outcomes over [0, 1])",
                 contract=True, tables=("sensitivity",), figures=("sensitivity",)),
    ResultsBlock("families", core.families, "{families, mean, lofo_min, lofo_max, dispersion_lo, dispersion_hi}",
                 "family-weighted mean, leave-one-family-out range, dispersion interval over family means",
                 contract=True, tables=("sensitivity",), figures=("sensitivity",)),
    ResultsBlock("dependence", core.dependence,
                 "{scenario, rows, checks_per_row, icc, design_effect, effective_per_row}",
                 "ICC(1) of the binary checks (rows as groups), design effect, effective observations per row",
                 contract=True),
    ResultsBlock("headings", core.headings, "{pooled_r, rows, within_cell: {cells, rows, slope, r}}",
                 "pooled r and within-cell slope/r of headings carried against recall", contract=True),
    ResultsBlock("provenance", core.provenance_block,
                 "{results_version, package, version, code_sha256, python, libraries, params}",
                 "what computed the results: package version, code digest, library versions, params"),
    ResultsBlock("contrast", core.contrast, "{control, treatment, scenario, recency_cutoff, checks_total}",
                 "the primary contrast and the checks per row of its scenario"),
    ResultsBlock("panel_detail", core.panel_detail,
                 "{effects_exact, execution_groups, out_of_window, no_complete_pair}",
                 "exact rational effects, execution groups, configurations left out of the panel"),
    ResultsBlock("sensitivity", core.sensitivity,
                 "{min_pairs_<K>, equal_counts, excluded?, each_excluded: {configuration: {...}}}",
                 "full summaries of the Params subsets and of the panel without each configuration",
                 figures=("sensitivity",)),
    ResultsBlock("bounds_detail", core.bounds_detail,
                 "{configurations, planned_repeats, missing_*, per_configuration: {...}}",
                 "the planned slots and missing outcomes behind the bounds", figures=("forest",)),
    ResultsBlock("families_detail", core.families_detail, "{family: {configurations, mean}}",
                 "configurations and mean effect per family"),
    ResultsBlock("dependence_detail", core.dependence_detail, "{msb, msw}",
                 "the between- and within-row mean squares behind the ICC"),
    ResultsBlock("mcnemar", core.mcnemar, "{partial: {...}, full: {...}}",
                 "exact paired McNemar of control against treatment within the panel's runs"),
    ResultsBlock("mcnemar_pairing", core.mcnemar_pairing,
                 "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
                 "the pooled partial McNemar when rows are re-paired inside each run (ours: the range over pairings)"),
    ResultsBlock("mcnemar_pairing_full", core.mcnemar_pairing_full,
                 "{runs, pairs, shipped, sorted, reversed, random_*, p_lo, p_hi, draws, reason}",
                 "the pooled full-recall McNemar when rows are re-paired inside each run (ours: the range over "
                 "pairings)"),
    ResultsBlock("mcnemar_secondary", core.mcnemar_secondary, "{<first>_vs_<second>: {runs, partial, full}}",
                 "exact paired McNemar of each Params.secondary_pairs comparison over runs planning both arms"),
    ResultsBlock("cells", core.cells, "{by, threshold_partial, rows: [{...}]}",
                 "recall summaries per (scenario, configuration, execution_group, arm) cell"),
    ResultsBlock("reasons", _reasons_placeholder, "{\"<key>.<field>\": why}",
                 "why each null statistic of panel, bounds, families, dependence and sparse is null"),
    ResultsBlock("fill", _named(secondary.fill_block, _fill),
                 "{definition, per_configuration, missing_fill, cutoff, borderline, correlations, rescue, ...}",
                 "control-arm fill per configuration against the paired effect: correlations, rescue, sweep, gains",
                 tables=("threshold_classes", "borderline")),
    ResultsBlock("headings_detail", _named(secondary.headings_detail_block, _headings_detail),
                 "{threshold, table_all_arms, table_single_field_arms, pooled_reason, within_*}",
                 "headings tables and within-cell fits (all arms, single-field arms, control arm)",
                 tables=("headings", "headings_within"), figures=("headings",)),
    ResultsBlock("carrier_audit", _named(secondary.carrier_audit_block, _carrier_audit),
                 "{scenario, audited_rows, agree_rows, ..., per_arm, ceiling_adherence}",
                 "carrier-vs-answer agreement and discrepancy directions, ceiling adherence", tables=("carrier",)),
    ResultsBlock("failure_modes", _named(secondary.failure_modes_block, _failure_modes),
                 "{parse_failures, invalid, fabrication, graders}",
                 "parse failures, invalid rows, fabrication versus abstention, grader agreement",
                 tables=("fabrication", "parse_failure_summary", "invalid_summary")),
    ResultsBlock("beyond_paper", _named(secondary.beyond_paper_block, _beyond_paper),
                 "{label, bootstrap, sign_flip, gee, design_effect_intervals}",
                 "ours, not the paper's: bootstrap, sign-flip test, GEE, design-effect-adjusted cell intervals",
                 tables=("panel_inference", "cell_intervals")),
    ResultsBlock("hodges_lehmann", _named(hl.hodges_lehmann, _hodges_lehmann),
                 "{label, n, estimate, lo, hi, nominal, achieved, reason}",
                 "Hodges–Lehmann estimate of the panel effect (median of the Walsh averages of the configuration "
                 "effects) with its exact signed-rank interval (ours)",
                 tables=("panel_inference",), inference_row=_hodges_lehmann_row,
                 sentence="**Hodges–Lehmann** (ours): {{ s.estimate|signed }} over {{ s.n|plural('configuration') }}"
                          "{% if s.lo is number %}, exact signed-rank {{ s.achieved|pct }} interval "
                          "[{{ s.lo|signed }}, {{ s.hi|signed }}]{% endif %}{{ see('t_beyond_inference') }}."),
    ResultsBlock("fact_survival", extras.fact_survival, "{available, reason?, label, ...}",
                 "fold-by-fold capture and survival of graded values (ours, not the paper's)",
                 tables=("fact_survival", "fact_survival_curves", "fact_survival_cuts")),
    ResultsBlock("dose_response", extras.dose_response,
                 "{available, reason?, label, interval, control, treatment, min_pairs, rungs: [{rung, order, "
                 "scenario, graded_per_chunk, distractors, chunk_tokens, folds, axis, arms, paired, survival}], "
                 "missing, reasons}",
                 "recall with interval, paired treatment − control and fact survival per load-ladder rung (ours)",
                 tables=("dose_response",), figures=("dose_response",)),
    ResultsBlock("claims_audit", extras.claims_audit,
                 "{headline, derived, reproduced, printed_cells, row_level, status_counts, claims, ...}",
                 "the claims audit's headline (the v1 reconstruction only)", source="build"),
    ResultsBlock("v2_pilot", _named(pilot_block, _v2_pilot),
                 "{path, study_name, evidence, contrast, panel, bounds, mcnemar, arms, ...}",
                 "a companion pilot through the same estimators (--companion)", source="build",
                 tables=("fact_survival", "fact_survival_curves", "fact_survival_cuts", "v2_pilot_folds",
                         "dose_response", "v2_pilot"), figures=("dose_response",)),
    ResultsBlock("preregistration", extras.preregistration, "{present, intact, statement, limits, deviations, ...}",
                 "the sealed plan, its seal and every deviation from it", source="build"),
    ResultsBlock("design", extras.design, "design.json", "OUT/design.json, when the build's OUT holds one",
                 source="build"),
)
"""Every top-level key of results.json, in its order."""


def entry(key: str) -> ResultsBlock:
    """The registry entry of ``key``."""
    for block in RESULTS_BLOCKS:
        if block.key == key:
            return block
    raise ResultsRegistryError(f"no results block {key!r}; add it to analysis/results/registry.py")


def assemble(inputs: ResultsInputs, sources: Iterable[str] = ("evidence",)) -> dict[str, Any]:
    """results.json as a dict: every block of ``sources`` in registry order, JSON-ready.

    Each block is computed once per ``inputs`` (kept in ``inputs.blocks``): assembling the evidence
    blocks for the audit and then every block for results.json computes the evidence blocks once."""
    wanted = set(sources)
    computed: dict[str, Block] = {}
    out: dict[str, Any] = {}
    for spec in RESULTS_BLOCKS:
        if spec.source not in wanted:
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


def check_registry(table_names: Iterable[str], figure_names: Iterable[str]) -> list[str]:
    """Problems of the registry: duplicate keys, readers that are no table or figure builder."""
    problems = []
    keys = [b.key for b in RESULTS_BLOCKS]
    problems += [f"key {k!r} registered twice" for k in sorted({k for k in keys if keys.count(k) > 1})]
    tables, figures = set(table_names), set(figure_names)
    for b in RESULTS_BLOCKS:
        problems += [f"{b.key}: no table builder {t!r}" for t in b.tables if t not in tables]
        problems += [f"{b.key}: no figure builder {f!r}" for f in b.figures if f not in figures]
    return problems


def docs_index() -> str:
    """The generated index of docs/RESULTS_KEYS.md (between its BEGIN/END markers)."""
    lines = ["| key | computed by | shape | meaning | tables | figures |", "|---|---|---|---|---|---|"]
    for b in RESULTS_BLOCKS:
        fn = b.compute
        where = "assemble (from the blocks before it)" if b.key == "reasons" else (
            f"`{fn.__module__}.{fn.__qualname__}`")
        meaning = b.doc + (" (contract)" if b.contract else "") + (" (build only)" if b.source == "build" else "")
        lines.append(f"| `{b.key}` | {where} | `{b.shape}` | {meaning} | "
                     f"{', '.join(b.tables) or '—'} | {', '.join(b.figures) or '—'} |")
    return "\n".join(lines) + "\n"


DOCS_PATH = "docs/RESULTS_KEYS.md"
INDEX_BEGIN = "<!-- BEGIN generated by `python -m analysis.results.registry --write-docs` -->"
INDEX_END = "<!-- END generated -->"


def with_docs_index(text: str) -> str:
    """``text`` (docs/RESULTS_KEYS.md) with the generated index between its markers replaced."""
    head, sep, rest = text.partition(INDEX_BEGIN)
    _old, sep2, tail = rest.partition(INDEX_END)
    if not sep or not sep2:
        raise ResultsRegistryError(f"{DOCS_PATH} lacks the markers {INDEX_BEGIN!r} ... {INDEX_END!r}; add them")
    return f"{head}{INDEX_BEGIN}\n{docs_index()}{INDEX_END}{tail}"


if __name__ == "__main__":  # python -m analysis.results.registry [--write-docs]
    import sys

    from analysis.locations import checkout_root

    if sys.argv[1:] == ["--write-docs"]:
        repo = checkout_root()
        if repo is None:
            raise SystemExit(f"--write-docs rewrites the repository's {DOCS_PATH}; run it from a checkout")
        doc = repo / DOCS_PATH
        from analysis.safeio import read_text, write_text

        write_text(doc, with_docs_index(read_text(doc)))
        print(f"wrote the index of {doc}")
    else:
        print(docs_index(), end="")
