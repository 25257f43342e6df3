"""The ``v2_pilot`` block of results.json: a companion package through the same estimators.

Methods note: paired effect, planned-repeat bounds and exact McNemar come from the results blocks
of the companion package (each block of PILOT_READS computed once from its own estimates,
``Estimates.block_value``); the per-arm cells from
analysis.estimators.arm_cells.pilot_arms (the t_v2_pilot table's data); the endpoint
provenance from the [runner] table of its (locked) study.toml.

Registration: V2_PILOT_REGISTRATION (below) is the ``v2_pilot`` block of results.json (build only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.estimators.common import json_ready
from analysis.estimators.registration import Block, Estimates, ResultsBlock
from analysis.evidence.describe import display_path, runner_table
from analysis.evidence.schema import extra_column
from analysis.results import core, extras

PILOT_READS: tuple[ResultsBlock, ...] = (
    core.EVIDENCE_REGISTRATION, core.CONTRAST_REGISTRATION, core.PANEL_REGISTRATION, core.BOUNDS_REGISTRATION,
    core.MCNEMAR_REGISTRATION, extras.FACT_SURVIVAL_REGISTRATION, extras.DOSE_RESPONSE_REGISTRATION)
"""The companion's results.json blocks :func:`pilot_value` reads (the only ones assembled for it)."""


def pilot_value(pilot: Estimates, path: Path, res: dict[str, Any]) -> dict[str, Any]:
    """The ``v2_pilot`` block of the companion pilot found at ``path``: its own estimates ``pilot`` and
    its results.json blocks ``res`` (those of PILOT_READS, by key)."""
    pkg = pilot.package
    keep = ("configurations", "mean", "median", "min", "max", "positive", "negative", "zero", "effects")
    arms = pilot.pilot_arms
    served = None
    if extra_column("served_models") in pkg.rows.columns:  # a runner extra column of rows.csv
        served = sorted(pkg.rows.get_column(extra_column("served_models")).drop_nulls().unique().to_list())
    return {"path": display_path(path).as_posix(), "study_name": pkg.study.name,
            "evidence": res.get("evidence"), "contrast": res.get("contrast"),
            "rows": pkg.rows.height, "valid_rows": int(pkg.rows.get_column("valid").fill_null(False).sum()),
            "panel": {k: (res.get("panel") or {}).get(k) for k in keep},
            "bounds": res.get("bounds"),
            "mcnemar": (res.get("mcnemar") or {}).get("partial"),
            "arms": json_ready(arms),
            "identical_repeats": bool(arms.height) and bool(
                (arms.get_column("distinct_answers") == 1).all()
                and (arms.get_column("repeats") > 1).all()),
            "checks_passed": int(arms.get_column("checks_passed").sum()),
            "checks": int(arms.get_column("checks").sum()),
            "carrier_values": int(arms.get_column("carrier_values").sum()),
            "audited_checks": int(arms.get_column("audited_checks").sum()),
            "served_models": served, "runner": json_ready(runner_table(pkg)),
            "fact_survival": res.get("fact_survival"), "dose_response": res.get("dose_response")}


def v2_pilot_block(e: Estimates) -> Block | None:
    """``v2_pilot``: the companion pilot through the same estimators, when one is named: its blocks of
    PILOT_READS, each computed once from its own estimates, and :func:`pilot_value` of them."""
    pilot = e.pilot_inputs
    if pilot is None or e.pilot_path is None:
        return None
    return Block(pilot_value(pilot, e.pilot_path, {r.key: pilot.block_value(r) for r in PILOT_READS}))


V2_PILOT_REGISTRATION = ResultsBlock(
    "v2_pilot", v2_pilot_block, "{path, study_name, evidence, contrast, panel, bounds, mcnemar, arms, ...}",
    "a companion pilot through the same estimators (--companion)", source="build", serialises=("pilot_inputs",))
"""results.json ``v2_pilot`` (analysis/results/registry.py lists it)."""
