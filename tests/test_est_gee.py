"""Row-level GEE of recall on arm (ours, not the paper's).

Oracles: hand derivations on a balanced design (coefficient = difference of arm means) and
statsmodels GEE itself (fitted here, in the test: the estimator's engine is the vectorised fixed point).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.estimators.common import OURS_LABEL
from analysis.estimators.gee import gee_arm_effect


# ----------------------------------------------------------------------------- GEE
def _balanced_rows() -> pl.DataFrame:
    # 4 configurations x 3 repeats x 2 arms; control recall c_i + noise, treatment + 0.25.
    rng = np.random.default_rng(0)
    recs = []
    for c in range(4):
        base = rng.uniform(0.1, 0.6)
        for _ in range(3):
            recs.append((f"c{c}", "j", float(np.round(base + rng.normal(0, 0.05), 3))))
            recs.append((f"c{c}", "q", float(np.round(base + 0.25 + rng.normal(0, 0.05), 3))))
    return pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")


def test_gee_balanced_design_coefficient_is_mean_difference():
    # With equal arm counts in every cluster the exchangeable GEE estimate of the treatment
    # coefficient equals mean(treatment) - mean(control) (the design is orthogonal to clusters).
    rows = _balanced_rows()
    g = gee_arm_effect(rows, control="j", treatment="q")
    diff = rows.filter(pl.col("arm") == "q")["recall"].mean() - rows.filter(pl.col("arm") == "j")["recall"].mean()
    assert g.coefficient == pytest.approx(diff, abs=1e-8)
    assert (g.clusters, g.rows, g.df) == (4, 24, 3)
    # t(3) reference: p and interval consistent with coefficient / se.
    assert g.p_value == pytest.approx(2 * stats.t.sf(abs(g.coefficient / g.se), 3))
    assert g.hi - g.coefficient == pytest.approx(stats.t.ppf(0.975, 3) * g.se)
    # Mancl-DeRouen inflates the plain sandwich SE with few clusters.
    assert g.se >= g.se_robust and g.converged
    assert "Mancl-DeRouen" in g.method and g.label == OURS_LABEL


def test_gee_swapping_arms_negates_coefficient():
    # Unbalanced: drop two control rows of c0 and one treatment row of c3.
    rows = _balanced_rows().with_row_index("i").filter(~pl.col("i").is_in([0, 2, 23])).drop("i")
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = gee_arm_effect(rows, control="q", treatment="j")
    assert b.coefficient == pytest.approx(-a.coefficient, abs=1e-8)
    assert b.se == pytest.approx(a.se, rel=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 14), min_size=1, max_size=4),
                          st.lists(st.integers(0, 14), min_size=1, max_size=4)), min_size=2, max_size=5))
@example(
    clusters=[([0, 0], [0]), ([0], [0, 1])],
).via('discovered failure')
def test_gee_swap_property_on_unbalanced_data(clusters):
    # Every configuration has both arms (as in a panel); arm counts may differ.
    recs = [(f"c{i}", arm, p / 14) for i, (cs, ts) in enumerate(clusters)
            for arm, vals in (("j", cs), ("q", ts)) for p in vals]
    rows = pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = gee_arm_effect(rows, control="q", treatment="j")
    assert math.isfinite(a.coefficient) == math.isfinite(b.coefficient)
    if math.isfinite(a.coefficient):
        assert b.coefficient == pytest.approx(-a.coefficient, abs=1e-6)
    if a.reason is None:
        assert a.lo <= a.coefficient <= a.hi and 0 <= a.p_value <= 1


def test_gee_undefined_cases():
    one = pl.DataFrame({"configuration": ["c"] * 4, "arm": ["j", "q"] * 2, "recall": [0.0, 1.0, 0.5, 1.0]})
    assert "fewer than 2" in gee_arm_effect(one, control="j", treatment="q").reason
    flat = pl.DataFrame({"configuration": ["a", "a", "b", "b"], "arm": ["j", "q"] * 2, "recall": [1.0] * 4})
    r = gee_arm_effect(flat, control="j", treatment="q")
    assert math.isnan(r.coefficient) and "zero variance" in r.reason


def _statsmodels_gee(rows: pl.DataFrame, cov_type: str = "bias_reduced") -> dict[str, float | bool | None]:
    """The oracle: statsmodels.genmod GEE (Gaussian, exchangeable), coefficient, working correlation,
    plain and `cov_type` standard errors, t(G-1) p-value, convergence."""
    from statsmodels.genmod import families
    from statsmodels.genmod.cov_struct import Exchangeable
    from statsmodels.genmod.generalized_estimating_equations import GEE
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, IterationLimitWarning

    df = rows.sort("configuration", maintain_order=True)
    t = (df["arm"] == "q").to_numpy().astype(float)
    model = GEE(df["recall"].to_numpy().astype(float), np.column_stack([np.ones_like(t), t]),
                groups=df["configuration"].to_numpy(), family=families.Gaussian(), cov_struct=Exchangeable())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        warnings.simplefilter("ignore", category=IterationLimitWarning)
        res = model.fit(cov_type="robust")
        out: dict[str, float | bool | None] = {
            "coefficient": float(res.params[1]), "rho": float(model.cov_struct.dep_params),
            "se_robust": math.sqrt(res.cov_robust[1, 1]), "converged": bool(getattr(res, "converged", True)),
            "se": None, "p_value": None}
        try:
            se = math.sqrt(model.fit(cov_type=cov_type).cov_params()[1, 1])
        except (np.linalg.LinAlgError, ValueError):
            return out
    dof = df["configuration"].n_unique() - 1
    out.update(se=se, p_value=float(2 * stats.t.sf(abs(float(res.params[1]) / se), dof)))
    return out


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 14), min_size=1, max_size=5),
                          st.lists(st.integers(0, 14), min_size=1, max_size=5)), min_size=3, max_size=8))
def test_gee_equals_statsmodels_gee(clusters):
    # Oracle: statsmodels.genmod GEE (Gaussian, exchangeable, cov_type='bias_reduced').
    recs = [(f"c{i}", arm, p / 14) for i, (cs, ts) in enumerate(clusters)
            for arm, vals in (("j", cs), ("q", ts)) for p in vals]
    rows = pl.DataFrame(recs, schema={"configuration": pl.String, "arm": pl.String, "recall": pl.Float64}, orient="row")
    if rows["recall"].n_unique() < 2:
        return  # zero variance: ours is undefined by design, statsmodels divides by zero
    ours = gee_arm_effect(rows, control="j", treatment="q")
    ref = _statsmodels_gee(rows)
    if not (ref["converged"] and ours.converged):
        return  # statsmodels stops at 60 iterations; only converged fits are comparable
    if math.isfinite(ours.coefficient):
        assert ours.coefficient == pytest.approx(ref["coefficient"], abs=1e-6)
        assert ours.working_correlation == pytest.approx(ref["rho"], abs=1e-5)
        assert ours.se_robust == pytest.approx(ref["se_robust"], rel=1e-4, abs=1e-9)
    if ours.reason is None and ref["se"] is not None:
        assert ours.se == pytest.approx(ref["se"], rel=1e-4, abs=1e-9)
        assert ours.p_value == pytest.approx(ref["p_value"], abs=1e-4)


def test_gee_equals_statsmodels_gee_on_the_balanced_design():
    rows = _balanced_rows()
    a = gee_arm_effect(rows, control="j", treatment="q")
    b = _statsmodels_gee(rows)
    assert a.engine == "vectorised"
    assert a.coefficient == pytest.approx(b["coefficient"], abs=1e-8)
    assert a.se == pytest.approx(b["se"], rel=1e-6)
    assert a.se_robust == pytest.approx(b["se_robust"], rel=1e-6)


