"""The lines a runner session ends with: what the package holds, recall by arm, pace, and its path.

Methods note: the summary reads the evidence package the session just wrote (verified by
``load_package``, so it describes exactly what was written, not the ledger), plus the session's
counters from the run manifest (``last_session``: attempts run this session). Recall per arm is
pooled over the arm's valid rows: the sum of checks passed over the sum of checks graded (the
share of graded facts the answers recalled); rows without an outcome are left out and counted
as invalid. The pace is this session's rows (every attempt leaves one row, an infrastructure
fault included) per minute of wall time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from analysis.evidence import load_package
from analysis.runner.sweep import duration


def recall_by_arm(rows: pl.DataFrame) -> dict[str, tuple[float | None, int]]:
    """arm -> (pooled recall of its valid rows or None when it has none graded, valid rows)."""
    out: dict[str, tuple[float | None, int]] = {}
    for arm in sorted(rows.get_column("arm").unique().to_list()):
        valid = rows.filter((pl.col("arm") == arm) & pl.col("valid") & pl.col("checks_passed").is_not_null())
        graded = int(valid.get_column("checks_total").sum() or 0)
        passed = int(valid.get_column("checks_passed").sum() or 0)
        out[arm] = (passed / graded if graded else None, valid.height)
    return out


def session_summary_lines(package: Path, manifest: Mapping[str, Any], elapsed_s: float) -> list[str]:
    """What a sweep session prints at its end (stdout), the package's path last."""
    rows = load_package(package).rows
    valid = int(rows.get_column("valid").sum() or 0)
    reasons = (rows.filter(~pl.col("valid")).group_by("invalid_reason").len().sort("invalid_reason")
               .iter_rows())
    invalid = ", ".join(f"{n} {reason}" for reason, n in reasons)
    lines = [f"trajectories: {manifest.get('slots_finished', '?')} of {manifest.get('slots_planned', '?')} planned "
             f"finished; rows: {rows.height}, valid {valid}" + (f" (invalid: {invalid})" if invalid else "")]
    recall = recall_by_arm(rows)
    if recall:
        lines.append("recall by arm (checks passed / graded, valid rows): " + ", ".join(
            f"{arm} {'-' if r is None else f'{r:.3f}'} ({n} rows)" for arm, (r, n) in recall.items()))
    session = manifest.get("last_session") or {}
    if session.get("package_only"):
        lines.append("this session: the package was rebuilt from the ledger (no request sent)")
    else:
        ran = int(session.get("ran", 0))
        pace = ran / (elapsed_s / 60) if elapsed_s > 0 else 0.0
        lines.append(f"this session: {ran} rows in {duration(elapsed_s)} ({pace:.1f} rows/min), "
                     f"{session.get('infra_failed', 0)} attempts failed on infrastructure")
    lines.append(f"evidence package: {package}")
    return lines
