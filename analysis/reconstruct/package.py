"""Write the reconstructed evidence package (rows.csv, checks.csv, study.toml, notes, lock).

Methods note. Output is byte-deterministic: rows in build order, fixed column order,
LF line ends, RFC 4180 minimal quoting, booleans as true/false, missing as empty.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.evidence.writer import csv_text
from analysis.reconstruct.claims import Claims
from analysis.reconstruct.layout import (
    ANCHOR,
    CUTOFF,
    LOCAL_REFERENCE,
    OUT_OF_WINDOW,
    PANEL,
    S1_CHECKS,
    S5_CHECKS,
    SUPPORT,
    family_of,
    published_of,
)
from analysis.reconstruct.populations import Builder
from analysis.safeio import write_bytes

ROW_COLUMNS = ("row_id", "scenario", "configuration", "execution_group", "repeat", "arm", "position", "valid",
               "invalid_reason", "checks_total", "checks_passed", "parse_failures", "headings_carried",
               "carried_chars", "declared_chars", "folds", "folds_clipped", "finish_stop", "finish_length",
               "prompt_tokens_est", "answer", "cell")
CHECK_COLUMNS = ("row_id", "check", "expected", "passed", "in_carrier", "passed_presence")


def _csv(header: tuple[str, ...], records: list[tuple[Any, ...]]) -> bytes:
    return csv_text(header, (dict(zip(header, rec, strict=True)) for rec in records)).encode("utf-8")


def positions(b: Builder) -> None:
    """R23: rotating Latin square: arm i of a group's arm list runs at position ((i + repeat - 1) mod A) + 1."""
    for r in b.rows:
        arms = b.groups[r["execution_group"]]
        arms_s = arms if r["arm"] in arms else (*arms, r["arm"])
        r["position"] = (arms_s.index(r["arm"]) + r["repeat"] - 1) % len(arms_s) + 1


def rows_csv(b: Builder) -> bytes:
    return _csv(ROW_COLUMNS, [tuple(r.get(c) for c in ROW_COLUMNS) for r in b.rows])


def checks_csv(b: Builder, agreement_row: str | None) -> bytes:
    """R24: a row with c passed passes its first c labels; in_carrier only on audited rows."""
    recs = []
    for r in b.rows:
        if r["checks_passed"] is None:
            continue
        labels = S5_CHECKS if r["scenario"] == "S5" else S1_CHECKS
        first_missed = True
        for i, (label, expected) in enumerate(labels):
            passed = i < r["checks_passed"]
            inc = None
            if r.get("_audited"):
                inc = passed or (r.get("_discrepant") and first_missed)
                if not passed:
                    first_missed = False
            presence = passed
            if r["row_id"] == agreement_row and i == r["checks_passed"]:
                presence = True  # the one row where the presence grader credits an unbound value (fitted)
            recs.append((r["row_id"], label, expected, passed, inc, presence))
    return _csv(CHECK_COLUMNS, recs)


def reconstructed_study_toml(b: Builder) -> bytes:
    out = ['# RECONSTRUCTION of the v1 study configuration (see RECONSTRUCTION.md). Publication dates',
           '# are placeholders on the correct side of the recency cutoff; nothing here is the released package.',
           "[study]", 'name = "capacity-matched partition study (v1 reconstruction)"',
           f"recency_cutoff = {CUTOFF.isoformat()}", 'control = "j"', 'treatment = "q"', 'scenario = "S5"',
           'kind = "reconstruction"', ""]
    configs: dict[str, bool] = {}
    for _, cfg in PANEL:
        configs[cfg] = True
    for cfg in OUT_OF_WINDOW:
        configs[cfg] = False
    for _, cfg in SUPPORT:
        configs.setdefault(cfg, True)
    configs.setdefault(ANCHOR, True)
    for cfg in sorted(configs):
        out.append(f'[configurations."{cfg}"]')
        out.append(f'family = "{family_of(cfg)}"')
        out.append(f"published = {published_of(cfg, configs[cfg]).isoformat()}")
        if cfg == LOCAL_REFERENCE:
            out.append('provider = "local"')
        out.append("")
    for cfg, group, planned in b.runs:
        out += ["[[partition_runs]]", f'configuration = "{cfg}"', f'execution_group = "{group}"',
                f"planned_repeats = {planned}", ""]
    return ("\n".join(out)).encode("utf-8")


def grader_disagreement_row(b: Builder, c: Claims) -> str | None:
    """R25 (fitted to the derived 619 of 620): the first valid S5 row with a failed check gets one presence credit."""
    for r in b.rows:
        if (r["valid"] and r["scenario"] == "S5" and r["checks_passed"] is not None
                and r["checks_passed"] < r["checks_total"]):
            return r["row_id"]
    return None


def write_reconstruction(b: Builder, c: Claims, out: Path, notes: str, findings_csv: bytes) -> dict:
    """Write every file and the provenance lock; returns the lock document."""
    out.mkdir(parents=True, exist_ok=True)
    positions(b)
    files = {
        "rows.csv": rows_csv(b),
        "checks.csv": checks_csv(b, grader_disagreement_row(b, c)),
        "study.toml": reconstructed_study_toml(b),
        "RECONSTRUCTION.md": notes.encode("utf-8"),
        "findings.csv": findings_csv,
    }
    for name, data in files.items():
        write_bytes(out / name, data)
    return _write_lock(out, sorted(files))


def _write_lock(out: Path, names: list[str]) -> dict:
    try:
        from analysis.evidence import write_lock
    except ImportError:  # package __init__ not landed yet: the module itself
        from analysis.evidence.provenance import write_lock
    return write_lock(out, files=names)
