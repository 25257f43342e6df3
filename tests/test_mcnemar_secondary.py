"""Secondary McNemar comparisons: missing-partner variants only over runs where both arms were planned."""
from __future__ import annotations

import polars as pl
import pytest

from analysis.estimators import exact
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from support.paths import REPO as ROOT


def _rows(spec):
    return pl.DataFrame([{"row_id": f"{g}/{a}/{r}", "configuration": c, "execution_group": g, "repeat": r,
                          "arm": a, "scenario": "S5", "valid": v, "checks_total": 14, "checks_passed": p}
                         for c, g, r, a, v, p in spec],
                        schema={"row_id": pl.String, "configuration": pl.String, "execution_group": pl.String,
                                "repeat": pl.Int64, "arm": pl.String, "scenario": pl.String, "valid": pl.Boolean,
                                "checks_total": pl.Int64, "checks_passed": pl.Int64})


def test_a_run_that_never_planned_one_arm_adds_no_missing_partner_pairs():
    # Run A plans j and t: repeat 1 both valid (j 14, t 0 -> b), repeat 2 t valid (0) and j invalid (catch-up).
    # Run B plans only j: four valid j rows at 14. Unrestricted, missing-as-failure would add 4 + 1 blocks
    # (b = 5 + 0); restricted to run A it adds only repeat 2: b = 1, neither = 1; as success b = 2.
    rows = _rows([("m/x", "A", 1, "j", True, 14), ("m/x", "A", 1, "t", True, 0),
                  ("m/x", "A", 2, "j", False, None), ("m/x", "A", 2, "t", True, 0)]
                 + [("m/x", "B", r, "j", True, 14) for r in range(1, 5)])
    runs = exact.runs_planning_both(rows, "j", "t", scenario="S5")
    assert runs.rows() == [("m/x", "A")]
    r = exact.paired_mcnemar(rows, "j", "t", scenario="S5", threshold=0.5, runs=runs)
    assert (r.missing_as_failure.b, r.missing_as_failure.neither, r.missing_as_failure.pairs) == (1, 1, 2)
    assert (r.missing_as_success.b, r.missing_as_success.pairs) == (2, 2)
    loose = exact.paired_mcnemar(rows, "j", "t", scenario="S5", threshold=0.5)
    assert loose.missing_as_failure.b == 5  # what the unrestricted variant used to report


def test_results_secondary_j_vs_t_is_the_papers_45_comparison():
    from analysis.results import build_results
    res = build_results(load_package(ROOT / "data" / "v1"), DEFAULT_PARAMS)["mcnemar_secondary"]
    jt = res["j_vs_t"]
    assert jt["runs"] == ["qwen/qwen3.6-35b-a3b ceiling-anchor-a", "qwen/qwen3.6-35b-a3b ceiling-anchor-b",
                          "z-ai/glm-5.2 ceiling-glm"]
    # 4.5: 15 complete pairs, 5 j-only / 1 t-only -> 2 * 7/64 = 0.21875; the unpartnered t row (below half)
    # is concordant as a failure (p stays 0.21875) and j-only as a success (6/1 -> 2 * 8/128 = 0.125).
    p = jt["partial"]
    assert p["complete"]["pairs"] == 15 and p["complete"]["p_value"] == pytest.approx(0.21875, abs=0)
    assert p["missing_as_failure"]["pairs"] == 16 and round(p["missing_as_failure"]["p_value"], 4) == 0.2188
    assert p["missing_as_success"]["pairs"] == 16 and p["missing_as_success"]["p_value"] == 0.125
    assert res["q_vs_m"]["runs"] == ["qwen/qwen3.6-35b-a3b anchor-a", "qwen/qwen3.6-35b-a3b anchor-b"]
