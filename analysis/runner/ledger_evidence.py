"""What a ledger's records say: per-slot state (the resume rule) and the evidence package's rows.

Methods note: see analysis.runner.ledger for the record format and the resume rule.  These are
pure folds over the records `read_records` returns, and the one writer of the package.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.runner.secrets import write_redacted_text
from analysis.safeio import read_text


class LedgerError(RuntimeError):
    """The ledger cannot be read or written (raised by analysis.runner.ledger and by evidence_rows)."""


@dataclass(slots=True)
class SlotState:
    """What the ledger says about one planned slot."""

    attempts: int = 0
    """Attempts that ended with an infrastructure fault reported by the endpoint (retry budget)."""
    started: int = 0
    """All attempts ever started, interrupted ones included (attempt numbering)."""
    final: dict[str, Any] | None = None
    """The attempt_end record that finished the slot, if any."""
    open_attempts: list[int] = field(default_factory=list)
    """Attempt numbers that started but never ended (runner killed)."""


def slot_states(records: list[dict[str, Any]], retryable: Any) -> dict[str, SlotState]:
    """Fold ledger records into per-slot state; `retryable(reason) -> bool` is the validity rule."""
    states: dict[str, SlotState] = {}
    for rec in records:
        kind = rec.get("kind")
        if kind not in ("attempt_start", "attempt_end"):
            continue
        st = states.setdefault(rec["slot"], SlotState())
        if kind == "attempt_start":
            st.started = max(st.started, int(rec["attempt"]))
            st.open_attempts.append(int(rec["attempt"]))
        else:
            att = int(rec["attempt"])
            if att in st.open_attempts:
                st.open_attempts.remove(att)
            if rec.get("interrupted"):
                continue
            if rec["valid"] or not retryable(rec.get("invalid_reason")):
                st.final = rec
            else:
                st.attempts += 1
    return states


def attempt_ends(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every attempt_end record in ledger order (valid, invalid and interrupted)."""
    return (r for r in records if r.get("kind") == "attempt_end")


# ---------------------------------------------------------------- evidence from the ledger
SLOT_FIELDS = ("scenario", "configuration", "execution_group", "repeat", "arm", "position")


@dataclass(slots=True)
class LedgerEvidence:
    """Package records assembled from a ledger (plain dicts, as analysis.runner.package writes them)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    """rows.csv records."""
    checks: list[dict[str, Any]] = field(default_factory=list)
    """checks.csv records."""
    folds: list[dict[str, Any]] = field(default_factory=list)
    """folds.jsonl records."""
    answers: list[dict[str, Any]] = field(default_factory=list)
    """answers.jsonl records."""


def evidence_rows(records: list[dict[str, Any]], slot_ids: set[str] | None = None) -> LedgerEvidence:
    """Package records of every ended attempt, in ledger order.

    The attempt that finished a slot (valid, or invalid by arm behaviour) carries the slot id as
    row_id; every other attempt (infrastructure faults, interrupted runs) is an invalid row with
    `#a<attempt>` appended, so a package assembled after any number of crashes has the same
    valid rows, with the same ids, as a fault-free run.  `slot_ids` restricts to planned slots.
    """
    starts: dict[tuple[str, int], dict[str, Any]] = {}
    served: dict[tuple[str, int], tuple[Any, Any]] = {}
    for rec in records:
        kind = rec.get("kind")
        if kind == "attempt_start":
            starts[(rec["slot"], int(rec["attempt"]))] = rec
        elif kind == "response" and rec.get("served_model") is not None:
            served.setdefault((rec["slot"], int(rec["attempt"])), (rec.get("served_model"), rec.get("served_provider")))
    out = LedgerEvidence()
    for rec in attempt_ends(records):
        sid, att = rec["slot"], int(rec["attempt"])
        if slot_ids is not None and sid not in slot_ids:
            continue
        start = starts.get((sid, att))
        if start is None:
            raise LedgerError(f"ledger has attempt_end for {sid} attempt {att} without its attempt_start; "
                              "the ledger was edited by hand: restore it or start a new --out")
        final = (rec.get("valid") or not str(rec.get("invalid_reason") or "").startswith("infrastructure")) \
            and not rec.get("interrupted")
        row_id = sid if final else f"{sid}#a{att}"
        row = {k: start[k] for k in SLOT_FIELDS}
        row.update({k: v for k, v in rec.get("row", {}).items() if k not in SLOT_FIELDS})
        row["row_id"] = row_id
        row["valid"] = bool(rec.get("valid"))
        row["invalid_reason"] = rec.get("invalid_reason") if not row["valid"] else None
        if row.get("served_models") is None and (sid, att) in served:
            sm, sp = served[(sid, att)]
            row["served_models"], row["providers"] = sm, sp
        out.rows.append(row)
        out.checks += [{**c, "row_id": row_id} for c in rec.get("checks", [])]
        arts = rec.get("artifacts") or {}
        out.folds += [{**f, "row_id": row_id} for f in arts.get("folds", [])]
        if arts.get("answer") is not None:
            out.answers.append({**arts["answer"], "row_id": row_id})
    return out


def write_evidence(out: Path, study: Any, ev: LedgerEvidence, *, extra_json: dict[str, Any] | None = None,
                   study_appendix: str = "") -> list[str]:
    """Write the package with analysis.runner.package.write_records (its invariants checked first).

    `study_appendix` (e.g. the runner's pin table) is appended to study.toml and the lock rewritten
    over the same files, so it is pinned like everything else.
    """
    from analysis.evidence import write_lock
    from analysis.runner.package import write_records

    names = write_records(out, study, ev.rows, ev.checks, folds=ev.folds, answers=ev.answers,
                          extra_json=extra_json)
    if study_appendix:
        path = Path(out) / "study.toml"
        write_redacted_text(path, read_text(path).rstrip("\n") + "\n\n" + study_appendix)
        write_lock(out, names)
    return names
