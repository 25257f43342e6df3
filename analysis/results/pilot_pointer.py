"""The ``v2_pilot_pointer`` block of results.json: what a main report says of a pilot it does not analyse.

Methods note: the main report of data/v1 is about the paper (issue 30, option (b)); the runner's ladder
pilot gets one paragraph instead of a section. Its headline is counted here from the pilot's verified
rows (no estimator runs on it): rows and valid rows, the graded checks of its valid rows and how many
passed, the rungs of its declared ladder and its arms; and the command that builds its own report.

Registration: V2_PILOT_POINTER_REGISTRATION (below) is the ``v2_pilot_pointer`` block of results.json (build only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from analysis.estimators.registration import Block, Estimates, ResultsBlock
from analysis.evidence.describe import display_path


def pointer_value(package: Any, path: Path) -> dict[str, Any]:
    """The headline counts of the pilot ``package`` found at ``path`` and the command of its own report."""
    rows = package.rows
    valid = rows.filter(pl.col("valid").fill_null(False))
    shown = display_path(path).as_posix()
    ladder = getattr(package.study, "ladder", None) or ()
    return {"path": shown, "study_name": package.study.name, "rows": rows.height, "valid_rows": valid.height,
            "checks": int(valid.get_column("checks_total").fill_null(0).sum()),
            "checks_passed": int(valid.get_column("checks_passed").fill_null(0).sum()),
            "rungs": len(ladder), "arms": sorted(rows.get_column("arm").unique().to_list()),
            "command": f"python generate.py --evidence {shown} --out runs/pilot-report"}


def v2_pilot_pointer_block(e: Estimates) -> Block | None:
    """``v2_pilot_pointer``: a pilot the main report points to without analysing it (:func:`pointer_value`)."""
    if e.pointer is None or e.pointer_path is None:
        return None
    return Block(pointer_value(e.pointer, e.pointer_path))


V2_PILOT_POINTER_REGISTRATION = ResultsBlock(
    "v2_pilot_pointer", v2_pilot_pointer_block,
    "{path, study_name, rows, valid_rows, checks, checks_passed, rungs, arms, command}",
    "the v2 ladder pilot the main report of data/v1 points to without analysing it (python generate.py)",
    source="build")
"""results.json ``v2_pilot_pointer`` (analysis/results/registry.py lists it)."""
