"""Evidence output: a run directory in the evidence format (docs/EVIDENCE_FORMAT.md, version 1).

Methods note. A run writes ``rows.csv`` (the required columns plus runner
extras), ``checks.csv`` (required columns plus ``passed_presence``),
``study.toml`` and ``provenance.lock``, and as extra files the fold-by-fold
carriers (``folds.jsonl``), the full answers with their final carriers
(``answers.jsonl``) and the arms used (``arms.json``); every file is pinned
by the lock. Rows come from :class:`~analysis.runner.protocol.TrajectoryResult`
via :func:`row_record` / :func:`check_records` / :func:`fold_records`, which
return plain dicts, so a sweep can keep them in a ledger and write the package
later with :func:`write_records`. Empty fields are written as empty CSV fields,
never as 0 or a placeholder. The contract's row-level invariants are checked
before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.evidence import write_lock
from analysis.evidence.writer import csv_text
from analysis.runner.arms import arm_record
from analysis.runner.protocol import TrajectoryResult
from analysis.runner.secrets import write_redacted_text

__all__ = [
    "CHECK_COLUMNS",
    "ROW_COLUMNS",
    "PackageError",
    "RowMeta",
    "answer_record",
    "check_records",
    "fold_records",
    "row_record",
    "study_toml",
    "write_package",
    "write_records",
]

#: Required rows.csv columns, in the contract's order.
ROW_COLUMNS: tuple[str, ...] = (
    "row_id", "scenario", "configuration", "execution_group", "repeat", "arm", "position", "valid",
    "invalid_reason", "checks_total", "checks_passed", "parse_failures", "headings_carried",
    "carried_chars", "declared_chars", "folds", "folds_clipped", "finish_stop", "finish_length",
    "prompt_tokens_est", "answer",
)
#: Runner extras appended to rows.csv (the loader keeps them as strings).
ROW_EXTRAS: tuple[str, ...] = (
    "fixture", "fixture_digest", "prompt_sha256", "response_format_style", "temperature", "seed",
    "catchup_folds", "lost_folds", "refusals", "finish_other", "answer_finish_reason", "served_models",
    "providers", "infrastructure_fault", "rung",
)
CHECK_COLUMNS: tuple[str, ...] = ("row_id", "check", "expected", "passed", "in_carrier", "passed_presence")


class PackageError(ValueError):
    """Records that would make an evidence package the contract rejects."""


@dataclass(frozen=True, slots=True)
class RowMeta:
    """Where a trajectory sits in the study design."""

    row_id: str
    """Unique within the package."""
    configuration: str
    """Key of ``[configurations]`` in study.toml."""
    execution_group: str
    """The sweep the row ran in."""
    repeat: int
    """Planned repeat index (>= 1)."""
    position: int | None = None
    """Execution order of the arm inside its repeat block (1-based)."""


def row_record(result: TrajectoryResult, meta: RowMeta) -> dict[str, Any]:
    """The rows.csv record of one trajectory (required columns + extras)."""
    v = result.verdict
    folds = result.folds
    return {
        "row_id": meta.row_id,
        "scenario": result.scenario,
        "configuration": meta.configuration,
        "execution_group": meta.execution_group,
        "repeat": meta.repeat,
        "arm": result.arm.code,
        "position": meta.position,
        "valid": v.valid,
        "invalid_reason": v.reason,
        "checks_total": result.checks_total,
        "checks_passed": result.checks_passed,
        "parse_failures": result.parse_failures,
        "headings_carried": result.headings_carried if v.has_outcome else None,
        "carried_chars": result.carried_chars if v.has_outcome else None,
        "declared_chars": result.arm.declared_chars,
        "folds": len(folds),
        "folds_clipped": result.folds_clipped,
        "finish_stop": result.finish_count("stop"),
        "finish_length": result.finish_count("length"),
        "prompt_tokens_est": result.prompt_tokens_est,
        "answer": result.answer,
        "fixture": result.fixture_name,
        "fixture_digest": result.fixture_digest,
        "prompt_sha256": result.arm.prompt_sha256,
        "response_format_style": result.settings.response_format_style if result.arm.is_schema else None,
        "temperature": result.settings.temperature,
        "seed": result.settings.seed,
        "catchup_folds": result.catchup_folds,
        "lost_folds": sum(f.lost for f in folds),
        "refusals": sum(1 for f in folds if f.refusal),
        "finish_other": sum(1 for f in folds if f.finish_reason not in ("stop", "length")),
        "answer_finish_reason": result.answer_finish_reason,
        "served_models": ";".join(result.served_models) or None,
        "providers": ";".join(result.providers) or None,
        "infrastructure_fault": result.infrastructure_fault,
        **({"rung": result.rung} if result.rung else {}),  # load ladder only (docs/EVIDENCE_FORMAT.md)
    }


def check_records(result: TrajectoryResult, row_id: str) -> list[dict[str, Any]]:
    """checks.csv records of one trajectory (none when the row has no outcome)."""
    if not result.verdict.has_outcome:
        return []
    return [
        {"row_id": row_id, "check": c.label, "expected": c.expected, "passed": c.passed,
         "in_carrier": c.in_carrier, "passed_presence": c.passed_presence}
        for c in result.checks
    ]


def fold_records(result: TrajectoryResult, row_id: str) -> list[dict[str, Any]]:
    """folds.jsonl records: every fold's reply and carrier."""
    return [
        {"row_id": row_id, "fold": f.index, "chunks": list(f.chunks), "prompt_tokens_est": f.prompt_tokens_est,
         "finish_reason": f.finish_reason, "refusal": f.refusal, "parse_ok": f.parse_ok, "lost": f.lost,
         "clipped": f.clipped, "carrier_unclipped_chars": f.carrier_unclipped_chars,
         "served_model": f.served_model, "provider": f.provider, "usage": dict(f.usage) if f.usage else None,
         "reply_text": f.reply_text, "carrier": f.carrier}
        for f in result.folds
    ]


def answer_record(result: TrajectoryResult, row_id: str) -> dict[str, Any]:
    """answers.jsonl record: the full answer and the final carrier it was given."""
    return {"row_id": row_id, "arm": result.arm.code, "answer": result.answer,
            "finish_reason": result.answer_finish_reason, "final_carrier": result.final_carrier}


# ---------------------------------------------------------------- writing
def _csv(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    return csv_text(columns, records)


def _jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def study_toml(study: Any) -> str:
    """study.toml text from a Study-like object (attributes as in analysis.evidence.Study)."""
    def date(d: dt.date) -> str:
        return d.isoformat()

    out = ["[study]", f"name = {_toml_str(study.name)}", f"recency_cutoff = {date(study.recency_cutoff)}",
           f"control = {_toml_str(study.control)}", f"treatment = {_toml_str(study.treatment)}",
           f"scenario = {_toml_str(study.scenario)}",
           *([f"kind = {_toml_str(study.kind)}"] if getattr(study, "kind", None) else []), ""]
    for key, c in study.configurations.items():
        out += [f"[configurations.{_toml_str(key)}]", f"family = {_toml_str(c.family)}",
                f"published = {date(c.published)}"]
        if c.provider is not None:
            out.append(f"provider = {_toml_str(c.provider)}")
        if c.quantization is not None:
            out.append(f"quantization = {_toml_str(c.quantization)}")
        out.append("")
    for r in study.partition_runs:
        out += ["[[partition_runs]]", f"configuration = {_toml_str(r.configuration)}",
                f"execution_group = {_toml_str(r.execution_group)}", f"planned_repeats = {int(r.planned_repeats)}", ""]
    return "\n".join(out)


def _check_invariants(rows: Sequence[Mapping[str, Any]], checks: Sequence[Mapping[str, Any]], study: Any) -> None:
    ids = Counter(r["row_id"] for r in rows)
    dup = [k for k, n in ids.items() if n > 1]
    if dup:
        raise PackageError(f"duplicate row_id {dup[:3]}; give every attempt its own row_id")
    slots = Counter((r["scenario"], r["configuration"], r["execution_group"], r["repeat"], r["arm"])
                    for r in rows if r["valid"])
    two = [k for k, n in slots.items() if n > 1]
    if two:
        raise PackageError(f"more than one valid row for slot {two[0]}; a retry must leave the failed attempt invalid")
    unknown = {r["configuration"] for r in rows} - set(study.configurations)
    if unknown:
        raise PackageError(f"configurations {sorted(unknown)} missing from study.configurations; add them")
    per_row = Counter(c["row_id"] for c in checks)
    passed = Counter(c["row_id"] for c in checks if c["passed"])
    totals: dict[str, set[int]] = {}
    for r in rows:
        totals.setdefault(r["scenario"], set()).add(r["checks_total"])
        if r["checks_passed"] is not None and (
            per_row[r["row_id"]] != r["checks_total"] or passed[r["row_id"]] != r["checks_passed"]
        ):
            raise PackageError(f"row {r['row_id']}: checks.csv does not match checks_total/checks_passed")
    varying = {s: t for s, t in totals.items() if len(t) > 1}
    if varying:
        raise PackageError(f"checks_total varies within scenario {varying}; one scenario, one grader")


def write_records(
    root: str | Path,
    study: Any,
    rows: Sequence[Mapping[str, Any]],
    checks: Sequence[Mapping[str, Any]],
    *,
    folds: Sequence[Mapping[str, Any]] = (),
    answers: Sequence[Mapping[str, Any]] = (),
    extra_json: Mapping[str, Any] | None = None,
) -> list[str]:
    """Write a package from plain records; returns the locked file names."""
    _check_invariants(rows, checks, study)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    extras = [c for c in ROW_EXTRAS if any(c in r for r in rows)]
    files = {
        "rows.csv": _csv(rows, ROW_COLUMNS + tuple(extras)),
        "checks.csv": _csv(checks, CHECK_COLUMNS),
        "study.toml": study_toml(study),
        "folds.jsonl": _jsonl(folds),
        "answers.jsonl": _jsonl(answers),
    }
    for name, doc in (extra_json or {}).items():
        files[name] = json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    for name, text in files.items():
        write_redacted_text(root / name, text)  # every byte of the package passes the key redaction
    write_lock(root, sorted(files))
    return sorted(files)


def write_package(
    root: str | Path, study: Any, results: Sequence[tuple[TrajectoryResult, RowMeta]]
) -> list[str]:
    """Write the evidence package of finished trajectories (plus carriers, answers, arms)."""
    rows, checks, folds, answers = [], [], [], []
    arms: dict[str, Any] = {}
    for result, meta in results:
        rows.append(row_record(result, meta))
        checks += check_records(result, meta.row_id)
        folds += fold_records(result, meta.row_id)
        answers.append(answer_record(result, meta.row_id))
        arms[result.arm.code] = arm_record(result.arm)
    return write_records(root, study, rows, checks, folds=folds, answers=answers,
                         extra_json={"arms.json": arms})
