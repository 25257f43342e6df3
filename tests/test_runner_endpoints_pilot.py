"""The committed v2 pilot package: verifies, and its rows follow the declared Williams order."""

from __future__ import annotations

import json
import warnings

import polars as pl

from analysis.evidence import load_package
from analysis.runner.arm_order import arm_order
from support.paths import REPO

PILOT = REPO / "data" / "v2" / "pilot"


def test_pilot_package_verifies_and_keeps_the_planned_design() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the [runner] table is an unknown key for the loader
        pkg = load_package(PILOT)
    rows = pkg.rows
    assert rows.height == 12 and rows["valid"].all()
    assert [(r.configuration, r.planned_repeats) for r in pkg.study.partition_runs] == [("smollm2-135m-instruct", 4)]
    order = arm_order(["j", "q", "m"], 4, "williams")
    for rep in range(1, 5):
        block = rows.filter(pl.col("repeat") == rep).sort("position")
        assert tuple(block["arm"].to_list()) == order.sequence(rep)
    assert pkg.checks.height == 12 * 14
    manifest = json.loads((PILOT / "run_manifest.json").read_text())
    conf = manifest["configurations"]["smollm2-135m-instruct"]
    assert conf["probe"]["structured_mode"] == "json_object_schema"
    assert conf["probe"]["max_length_mode"] == "describe"
    assert manifest["slots_finished"] == manifest["slots_planned"] == 12
