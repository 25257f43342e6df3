"""Row-level GEE of recall on arm (ours, not the paper's; a model-based sensitivity).

Model: recall ~ 1 + treatment, Gaussian family, identity link, exchangeable working
correlation within configuration clusters; covariance Mancl-DeRouen bias-reduced sandwich
(statsmodels GEE cov_type='bias_reduced') by default, with a t reference on G - 1 degrees of
freedom (G clusters), because ~20 clusters make z tests anti-conservative.

A thin wrapper over statsmodels.genmod GEE (one fit, cov_type = the requested covariance, iterated
to ctol = 1e-12 within 200 iterations; its plain and naive covariances come from the same fit). The
checks before it say what the data cannot support (fewer than two clusters, one arm, no variance in
recall); after it, a working correlation on or outside the exchangeable bounds
(-1/(n_max - 1), 1), where the working covariance is singular, or a singular bias-reduced covariance
(a cluster of leverage 1) is "undefined" with a reason. The tests' oracle is the GEE fixed point
written out with cluster sums (tests/test_est_gee.py), not statsmodels.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from analysis.estimators.common import OURS_LABEL, EstimatorInputError

_COV_TYPES = ("bias_reduced", "robust", "naive")

_RHO_TOL = 1e-9
"""How close to a bound of the exchangeable correlation counts as on it (singular working covariance)."""


@dataclass(frozen=True, slots=True)
class GeeArmEffect:
    """Row-level GEE of recall on the treatment indicator (ours, not the paper's)."""

    coefficient: float
    """Treatment-minus-control difference in mean recall (identity link)."""
    se: float
    """Standard error of `cov_type` (default Mancl-DeRouen bias-reduced sandwich)."""
    df: int
    """t reference degrees of freedom: clusters - 1."""
    lo: float
    """coefficient - t(1 - alpha/2, df) * se."""
    hi: float
    """coefficient + t(1 - alpha/2, df) * se."""
    p_value: float
    """Two-sided p from the t(df) reference."""
    se_robust: float
    """Plain (uncorrected) sandwich standard error, for comparison."""
    working_correlation: float
    """Estimated exchangeable within-configuration correlation."""
    rows: int
    """Rows in the fit."""
    clusters: int
    """Configuration clusters."""
    converged: bool
    """Whether the GEE iterations converged."""
    method: str
    """Model statement."""
    reason: str | None
    """Why the fit (or its interval) is undefined, else None."""
    engine: str = "statsmodels"
    """The engine that fitted it: statsmodels.genmod GEE."""
    label: str = OURS_LABEL
    """Provenance label: ours, not the paper's."""


_GEE_METHOD = ("GEE Gaussian/identity, recall ~ 1 + treatment, exchangeable within configuration, "
               "Mancl-DeRouen bias-reduced sandwich, t(G-1) reference")


def gee_method(cov_type: str) -> str:
    """The model statement for a covariance type."""
    names = {"bias_reduced": "Mancl-DeRouen bias-reduced sandwich", "robust": "plain sandwich",
             "naive": "model-based (naive) covariance"}
    return _GEE_METHOD.replace("Mancl-DeRouen bias-reduced sandwich", names.get(cov_type, cov_type))


@dataclass(frozen=True, slots=True)
class _Fit:
    params: np.ndarray
    cov: dict[str, np.ndarray | None]
    rho: float
    converged: bool
    reason: str | None


def _fit_statsmodels(y: np.ndarray, t: np.ndarray, groups: np.ndarray, cov_type: str, nmax: int,
                     maxiter: int = 200, ctol: float = 1e-12) -> _Fit:
    from statsmodels.genmod import families
    from statsmodels.genmod.cov_struct import Exchangeable
    from statsmodels.genmod.generalized_estimating_equations import GEE
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, IterationLimitWarning

    x = np.column_stack([np.ones_like(t), t])
    model = GEE(y, x, groups=groups, family=families.Gaussian(), cov_struct=Exchangeable())
    reason = None
    with warnings.catch_warnings():
        # Non-convergence is reported in `converged`, not as a warning.
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        warnings.simplefilter("ignore", category=IterationLimitWarning)
        warnings.simplefilter("ignore", category=RuntimeWarning)
        try:
            res = model.fit(maxiter=maxiter, ctol=ctol, cov_type=cov_type)
        except np.linalg.LinAlgError:
            if cov_type != "bias_reduced":
                raise
            reason = "bias_reduced covariance singular (a cluster has leverage 1)"
            res = model.fit(maxiter=maxiter, ctol=ctol, cov_type="robust")
    if res is None:
        return _Fit(np.full(2, math.nan), {}, math.nan, False, "GEE estimate undefined")
    rho = float(model.cov_struct.dep_params)
    # At either bound the working covariance is singular; the tolerance makes a value that lands on the
    # bound up to rounding (which differs between the two arm codings) count as on it.
    if not (-1.0 / max(nmax - 1, 1) + _RHO_TOL < rho < 1.0 - _RHO_TOL):
        return _Fit(np.asarray(res.params), {}, rho, False, "working correlation outside its valid range")
    cov: dict[str, np.ndarray | None] = {"robust": res.cov_robust, "naive": res.cov_naive, "bias_reduced": None}
    if cov_type == "bias_reduced" and reason is None:
        cov["bias_reduced"] = res.cov_params()
    return _Fit(np.asarray(res.params), cov, rho, bool(res.converged), reason)


def gee_arm_effect(
    rows: pl.DataFrame,
    *,
    control: str,
    treatment: str,
    alpha: float = 0.05,
    cov_type: str = "bias_reduced",
) -> GeeArmEffect:
    """GEE of recall on arm == treatment over the rows given (columns configuration, arm, recall).

    Pass the rows to model: e.g. valid primary-scenario rows with an outcome of the panel's
    partition runs. Rows of other arms are dropped.
    """
    if cov_type not in _COV_TYPES:
        raise EstimatorInputError(f"GEE cov_type {cov_type!r} is unknown; use one of {', '.join(_COV_TYPES)}.")
    method = gee_method(cov_type)
    df = rows.filter(pl.col("arm").is_in([control, treatment]) & pl.col("recall").is_not_null())
    df = df.sort("configuration", maintain_order=True)
    g = df["configuration"].n_unique()
    nan = math.nan

    def undefined(reason: str, rho: float = nan, converged: bool = False) -> GeeArmEffect:
        return GeeArmEffect(nan, nan, max(g - 1, 0), nan, nan, nan, nan, rho, df.height, g, converged, method, reason)

    if g < 2:
        return undefined("fewer than 2 configuration clusters")
    if df["arm"].n_unique() < 2:
        return undefined("only one arm present")
    y = df["recall"].to_numpy().astype(float)
    if np.all(y == y[0]):
        return undefined("zero variance in recall")
    t = (df["arm"] == treatment).to_numpy().astype(float)
    groups = df["configuration"].to_numpy()
    nmax = int(df.group_by("configuration").len()["len"].max())  # type: ignore[arg-type]
    fit = _fit_statsmodels(y, t, groups, cov_type, nmax)
    coef = float(fit.params[1])
    if not math.isfinite(coef) or (fit.reason and not fit.cov):
        return undefined(fit.reason or "GEE estimate undefined", fit.rho, fit.converged)

    def _se(cov: np.ndarray | None) -> float:
        if cov is None:
            return nan
        v = float(cov[1, 1])
        return math.sqrt(v) if math.isfinite(v) and v > 0 else nan

    se, se_rb = _se(fit.cov.get(cov_type)), _se(fit.cov.get("robust"))
    dof = g - 1
    if not math.isfinite(se):
        return GeeArmEffect(coef, se, dof, nan, nan, nan, se_rb, fit.rho, df.height, g, fit.converged, method,
                            fit.reason or "standard error zero or undefined")
    q = float(stats.t.ppf(1 - alpha / 2, dof))
    pval = float(2 * stats.t.sf(abs(coef / se), dof))
    return GeeArmEffect(coef, se, dof, coef - q * se, coef + q * se, pval, se_rb, fit.rho, df.height, g,
                        fit.converged, method, None)
