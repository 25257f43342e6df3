"""explore_results / headings_block (analysis/estimators/explore_results.py) on the hand-made package."""

from __future__ import annotations

import json
import math

import pytest

from analysis.estimators.explore_results import explore_results, headings_block
from analysis.params import DEFAULT_PARAMS
from est_explore_support import handmade

KEYS = {"fill", "headings_detail", "carrier_audit", "failure_modes", "beyond_paper"}


@pytest.fixture(scope="module")
def pkg():
    return handmade()


@pytest.fixture(scope="module")
def out(pkg):
    return explore_results(pkg, DEFAULT_PARAMS)


def test_headings_block_is_the_results_contract(pkg):
    # RESULTS.md shape exactly; values from the hand derivation in test_est_explore_headings.py:
    # 16 rows, 3 informative cells, 7 rows, slope 3.75 / 22.5, r 3.75 / sqrt(22.5 * 0.75).
    h = headings_block(pkg, DEFAULT_PARAMS)
    assert set(h) == {"pooled_r", "rows", "within_cell"}
    assert set(h["within_cell"]) == {"cells", "rows", "slope", "r"}
    assert (h["rows"], h["within_cell"]["cells"], h["within_cell"]["rows"]) == (16, 3, 7)
    assert h["within_cell"]["slope"] == pytest.approx(3.75 / 22.5)
    assert h["within_cell"]["r"] == pytest.approx(3.75 / math.sqrt(22.5 * 0.75))
    assert isinstance(h["rows"], int) and isinstance(h["pooled_r"], float)


def test_explore_results_is_json_ready_with_null_for_undefined(out):
    assert set(out) == KEYS
    text = json.dumps(out, allow_nan=False)          # no NaN tokens anywhere
    assert json.loads(text) == out
    failing = out["fill"]["correlations"]["failing"]
    # one failing configuration (beta-1): undefined -> null with a reason, never 0
    assert failing["pearson"] is None and failing["spearman"] is None and failing["reason"]
    assert out["failure_modes"]["graders"]["share_rows"] is None


def test_explore_results_values(out):
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
    # sign flip of (0.5, -0.5, 0.75): 6 of 8 patterns -> 0.75 (hand count in test_est_explore_beyond.py)
    assert b["sign_flip"]["p_value"] == 0.75 and b["sign_flip"]["exact"] is True
    # GEE rows: valid S5 j/q rows with an outcome inside the three partition runs: 3+2, 2+2, 2+3 = 14
    assert (b["gee"]["rows"], b["gee"]["clusters"], b["gee"]["df"]) == (14, 3, 2)
    cells = b["design_effect_intervals"]["cells"]
    assert all(c["lo"] is None or c["lo"] <= c["mean"] <= c["hi"] for c in cells)


def test_no_clash_with_build_results(pkg):
    # build_results (estimators-core) merges these keys and raises on a collision.
    from analysis.results import build_results

    res = build_results(pkg, DEFAULT_PARAMS)
    assert KEYS <= set(res)
    assert res["headings"] == headings_block(pkg, DEFAULT_PARAMS)
