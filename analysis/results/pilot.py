"""The ``v2_pilot`` block of results.json: a companion package through the same estimators.

Methods note: paired effect, planned-repeat bounds and exact McNemar come from the results blocks
of the companion package (analysis.results.registry.assemble of its own ResultsInputs, reached through
``ResultsInputs.assembler``: the registry lists this module's REGISTRATION, so this module cannot import it);
the per-arm cells from
analysis.estimators.arm_cells.pilot_arms (the t_v2_pilot table's data); the endpoint
provenance from the [runner] table of its (locked) study.toml.

Registration: REGISTRATION (below) is the ``v2_pilot`` block of results.json (build only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.estimators.common import json_ready
from analysis.evidence.describe import display_path, runner_table
from analysis.evidence.schema import extra_column
from analysis.results.block import Block, ResultsBlock, indexed_as
from analysis.results.inputs import ResultsInputs


class PilotAssemblyError(RuntimeError):
    """The v2_pilot block was computed outside analysis.results.registry.assemble; assemble it from there."""


PILOT_READS = ("evidence", "contrast", "panel", "bounds", "mcnemar", "fact_survival", "dose_response")
"""The companion's results.json blocks :func:`pilot_block` reads (the only ones assembled for it)."""


def pilot_block(pilot: ResultsInputs, path: Path, res: dict[str, Any]) -> dict[str, Any]:
    """The ``v2_pilot`` block of the companion pilot found at ``path``: its own estimates ``pilot`` and
    its results.json blocks ``res`` (analysis.results.registry.assemble of ``pilot``)."""
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


@indexed_as(pilot_block)
def _v2_pilot(i: ResultsInputs) -> Block | None:
    """``v2_pilot``: the companion pilot through the same estimators, when one is named."""
    if i.pilot_inputs is None or i.pilot_path is None:
        return None
    if i.assembler is None:
        raise PilotAssemblyError("the v2_pilot block needs ResultsInputs.assembler; compute it through "
                                 "analysis.results.registry.assemble, which sets it")
    return Block(pilot_block(i.pilot_inputs, i.pilot_path, i.assembler(i.pilot_inputs, keys=PILOT_READS)))


REGISTRATION = ResultsBlock(
    "v2_pilot", _v2_pilot, "{path, study_name, evidence, contrast, panel, bounds, mcnemar, arms, ...}",
    "a companion pilot through the same estimators (--companion)", source="build",
    tables=("fact_survival", "fact_survival_curves", "fact_survival_cuts", "v2_pilot_folds",
            "dose_response", "v2_pilot"), figures=("dose_response",))
"""results.json ``v2_pilot`` (analysis/results/registry.py lists it)."""
