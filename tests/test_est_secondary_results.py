"""The secondary-analysis blocks (analysis/estimators/secondary_results.py, computed per key through
analysis.results.registry) and the registered headings block on the hand-made package."""

from __future__ import annotations

import json
import math

import pytest

from analysis.params import DEFAULT_PARAMS
from analysis.results.inputs import ResultsInputs
from analysis.results.registry import entry
from est_handmade_support import handmade

KEYS = {"fill", "headings_detail", "carrier_audit", "failure_modes", "beyond_paper"}


def headings_block(package, params):
    """The registered ``headings`` block (analysis.results.core.headings_block) of ``package``."""
    return entry("headings").compute(ResultsInputs(package, params)).value


def secondary_results(package, params):
    """The secondary-analysis blocks of ``package``, each computed by its registry entry."""
    inputs = ResultsInputs(package, params)
    return {key: entry(key).compute(inputs).value for key in sorted(KEYS)}


@pytest.fixture(scope="module")
def pkg():
    return handmade()


@pytest.fixture(scope="module")
def out(pkg):
    return secondary_results(pkg, DEFAULT_PARAMS)


def test_headings_block_is_the_results_contract(pkg):
    # docs/RESULTS_CONTRACT.md shape exactly; values from the hand derivation in test_est_headings.py:
    # 16 rows, 3 informative cells, 7 rows, slope 3.75 / 22.5, r 3.75 / sqrt(22.5 * 0.75).
    h = headings_block(pkg, DEFAULT_PARAMS)
    assert set(h) == {"pooled_r", "rows", "within_cell"}
    assert set(h["within_cell"]) == {"cells", "rows", "slope", "r"}
    assert (h["rows"], h["within_cell"]["cells"], h["within_cell"]["rows"]) == (16, 3, 7)
    assert h["within_cell"]["slope"] == pytest.approx(3.75 / 22.5)
    assert h["within_cell"]["r"] == pytest.approx(3.75 / math.sqrt(22.5 * 0.75))
    assert isinstance(h["rows"], int) and isinstance(h["pooled_r"], float)


def test_secondary_results_is_json_ready_with_null_for_undefined(out):
    assert set(out) == KEYS
    text = json.dumps(out, allow_nan=False)          # no NaN tokens anywhere
    assert json.loads(text) == out
    failing = out["fill"]["correlations"]["failing"]
    # one failing configuration (beta-1): undefined -> null with a reason, never 0
    assert failing["pearson"] is None and failing["spearman"] is None and failing["reason"]
    assert out["failure_modes"]["graders"]["share_rows"] is None


def test_secondary_results_values(out):
    fill = out["fill"]
    assert fill["per_configuration"]["acme/alpha-2"] == {"fill": 0.75, "fill_rows": 2}
    assert fill["correlations"]["all"]["pearson"] == pytest.approx(-0.491125, abs=1e-6)
    assert fill["borderline"] == ["acme/alpha-1"]
    assert len(fill["sweep"]) == 21
    ca = out["carrier_audit"]
    assert (ca["audited_rows"], ca["agree_rows"], ca["carrier_higher_rows"]) == (9, 7, 2)
    fab = out["failure_modes"]["fabrication"]
    assert (fab["failing_rows"], fab["fabricates"], fab["abstains"]) == (3, 1, 2)
    b = out["beyond_paper"]
    assert b["label"] == "ours, not the paper's"
    assert b["bootstrap"]["seed"] == DEFAULT_PARAMS.bootstrap_seed
    assert b["bootstrap"]["estimate"] == pytest.approx(0.25)
    # sign flip of (0.5, -0.5, 0.75): 6 of 8 patterns -> 0.75 (hand count in test_est_randomization.py)
    assert b["sign_flip"]["p_value"] == 0.75 and b["sign_flip"]["exact"] is True
    # GEE rows: valid S5 j/q rows with an outcome inside the three partition runs: 3+2, 2+2, 2+3 = 14
    assert (b["gee"]["rows"], b["gee"]["clusters"], b["gee"]["df"]) == (14, 3, 2)
    cells = b["design_effect_intervals"]["cells"]
    assert all(c["lo"] is None or c["lo"] <= c["mean"] <= c["hi"] for c in cells)


def test_no_clash_with_build_results(pkg):
    # build_results merges these keys and raises on a collision.
    from analysis.results import build_results

    res = build_results(pkg, DEFAULT_PARAMS)
    assert set(res) >= KEYS
    assert res["headings"] == headings_block(pkg, DEFAULT_PARAMS)


def _with_out_of_window(pkg):
    """The hand-made package plus a configuration published before the cutoff, with a full run."""
    import dataclasses
    import datetime

    import polars as pl

    from est_handmade_support import ROWS_SCHEMA

    study = pkg.study
    old_cfg = dataclasses.replace(next(iter(study.configurations.values())), key="old/model",
                                  family="old", published=datetime.date(2025, 1, 1))
    old_run = dataclasses.replace(study.partition_runs[0], configuration="old/model", execution_group="g9")
    new_study = dataclasses.replace(study, configurations={**study.configurations, "old/model": old_cfg},
                                    partition_runs=(*study.partition_runs, old_run))
    extra = []
    for rep, (pj, pq) in enumerate(((0, 14), (0, 14), (3, 14)), start=1):
        for arm, p in (("j", pj), ("q", pq)):
            extra.append({"row_id": f"old-{rep}-{arm}", "scenario": "S5", "configuration": "old/model",
                          "execution_group": "g9", "repeat": rep, "arm": arm, "valid": True, "checks_total": 14,
                          "checks_passed": p, "parse_failures": 0, "carried_chars": 9000, "declared_chars": 9600})
    rows = pl.concat([pkg.rows, pl.DataFrame(extra, schema={k: v for k, v in ROWS_SCHEMA.items()
                                                            if k in pkg.rows.columns})], how="diagonal_relaxed")
    labels = pkg.checks.filter(pl.col("row_id") == "a1-j").select("check", "expected")
    checks = pl.concat([pkg.checks.select("row_id", "check", "expected", "passed", "in_carrier")] + [
        labels.with_columns(pl.lit(e["row_id"]).alias("row_id"),
                            (pl.int_range(pl.len()) < e["checks_passed"]).alias("passed"),
                            pl.lit(None, pl.Boolean).alias("in_carrier"))
        .select("row_id", "check", "expected", "passed", "in_carrier") for e in extra])
    return dataclasses.replace(pkg, study=new_study, rows=rows.select(pkg.rows.columns), checks=checks)


def test_out_of_window_configuration_changes_no_panel_based_key(pkg, out):
    # Property from the issue: a configuration outside the recency window enters no panel statistic.
    # (headings, carrier and failure modes read every valid row by their definitions, so only the
    # panel-based keys are compared.)
    other = secondary_results(_with_out_of_window(pkg), DEFAULT_PARAMS)
    for key in ("correlations", "rescue", "sweep", "gains", "per_configuration", "borderline"):
        assert other["fill"][key] == out["fill"][key]
    for key in ("bootstrap", "sign_flip", "gee"):
        assert other["beyond_paper"][key] == out["beyond_paper"][key]
    # ... while the out-of-window rows do reach the all-configuration fill-recall association.
    assert other["fill"]["fill_vs_recall_control_arm"]["correlation"]["n"] == 4
