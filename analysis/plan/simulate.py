"""Power of a v2 study by simulation from the fitted variance components, vectorised in numpy.

Methods note. A simulated study has K configurations and R planned repeats. Parametric model
(fitted): configuration effects theta_k ~ N(delta, tau2); a paired repeat difference is
theta_k + e_kr, e_kr ~ N(0, sigma2_within), turned into the integer difference of passed checks
clip(round(T * d), -T, T) when the scenario grades T checks (so the estimator sees what rows.csv
would hold; sigma2_within already carries the check-level dependence, since it is the measured
variance of a paired difference of rows whose checks are correlated with ICC rho). Each arm's row
is missing or invalid independently with its measured rate; a repeat is a complete pair only
when both arms have an outcome, and a configuration with no complete pair leaves the panel, as in
the primary estimator. Resampling variant (no distributional assumption): configurations are
drawn with replacement from the observed panel and each repeat's difference with replacement from
that configuration's observed differences, shifted by delta - (observed equal-configuration mean)
so that the true mean is delta.

Each simulated study is analysed with the package's primary estimator and its tests, vectorised
over studies: the configuration effect is the mean of its complete-pair differences, the panel
mean weights present configurations equally, the t-style dispersion interval is
mean +/- t(1 - alpha/2, n - 1) sd / sqrt(n) (rejects when it excludes 0), and the sign-flip test
counts sign patterns with |sum| >= |observed sum| (exact over all 2^K patterns up to
PlanParams.signflip_exact_max, else a fixed set of random patterns shared by the cell's studies,
p = (1 + hits) / (1 + patterns)). Absent configurations contribute 0 to every signed sum, which
gives the same p as the package's test on the present ones. Common random numbers: the draws of a
(K, R) cell are shared by its effects. Closed form: Var(mean) = tau2/K + sigma2_within/(K R),
power = P(|T'| > t_crit) for a noncentral t(K - 1, delta / sqrt(Var)) (the normal limit where
scipy's noncentral t gives NaN, at thousands of configurations). With missing rows (the rates the
simulation draws, control m_c and treatment m_t kept apart) a repeat is a complete pair with
probability p = (1 - m_c)(1 - m_t), so a configuration's complete pairs are N ~ Binomial(R, p):
it stays in the panel with probability pi = 1 - (1 - p)^R, and its effect has variance
tau2 + sigma2_within E[1/N | N >= 1] (the exact binomial sum). The closed form then uses the
expected panel K pi: Var(mean) = (tau2 + sigma2_within E[1/N | N >= 1]) / (K pi) on K pi - 1
degrees of freedom. Without missing rows this is the formula above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

_TOL = 1e-9


@dataclass(frozen=True, slots=True)
class SimModel:
    """The fitted model a simulation draws from."""

    tau2: float
    """Between-configuration variance of true effects."""
    sigma2_within: float
    """Within-configuration variance of one paired repeat difference."""
    checks_total: int | None
    """T: differences are rounded to whole checks; None keeps them continuous."""
    missing_control: float = 0.0
    """Probability a control row is missing or invalid."""
    missing_treatment: float = 0.0
    """Probability a treatment row is missing or invalid."""


@dataclass(frozen=True, slots=True)
class StudyAnalysis:
    """The primary estimator's outputs for S simulated studies (arrays of length S)."""

    mean: np.ndarray
    """Equal-configuration mean (NaN when no configuration has a complete pair)."""
    configurations: np.ndarray
    """Configurations with >= 1 complete pair."""
    lo: np.ndarray
    """Dispersion interval lower end (NaN when fewer than two configurations)."""
    hi: np.ndarray
    """Dispersion interval upper end."""
    p_signflip: np.ndarray
    """Sign-flip p-value (NaN when no configuration)."""
    effects: np.ndarray
    """(S, K) configuration effects, 0 where absent."""
    present: np.ndarray
    """(S, K) whether the configuration is in the panel."""

    def reject_t(self) -> np.ndarray:
        """The dispersion interval excludes 0."""
        return (self.lo > 0.0) | (self.hi < 0.0)

    def halfwidth(self) -> np.ndarray:
        """Half-width of the dispersion interval."""
        return (self.hi - self.lo) / 2.0


def draw_parametric(model: SimModel, k: int, r: int, sims: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardised draws of a (K, R) cell: config normals (S,K,1), repeat normals (S,K,R), mask."""
    zc = rng.standard_normal((sims, k, 1))
    ze = rng.standard_normal((sims, k, r))
    return zc, ze, _mask(model, sims, k, r, rng)


def parametric_differences(model: SimModel, effect: float, zc: np.ndarray,
                           ze: np.ndarray) -> np.ndarray:
    """Paired differences (recall scale) for one effect from standardised draws."""
    d = effect + math.sqrt(max(model.tau2, 0.0)) * zc + math.sqrt(max(model.sigma2_within, 0.0)) * ze
    t = model.checks_total
    if t:
        d = np.clip(np.rint(d * t), -t, t) / t
    return d


def draw_resampled(groups: list[np.ndarray], k: int, r: int, sims: int, model: SimModel,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Centred resampled differences (S,K,R) (mean of configuration means 0) and the mask."""
    sizes = np.array([g.size for g in groups])
    pad = np.zeros((len(groups), int(sizes.max())))
    for i, g in enumerate(groups):
        pad[i, :g.size] = g
    centre = float(np.mean([g.mean() for g in groups]))
    cfg = rng.integers(0, len(groups), size=(sims, k))
    pick = np.floor(rng.random((sims, k, r)) * sizes[cfg][..., None]).astype(np.int64)
    d = pad[cfg[..., None], pick] - centre
    return d, _mask(model, sims, k, r, rng)


def _mask(model: SimModel, sims: int, k: int, r: int, rng: np.random.Generator) -> np.ndarray:
    present = np.ones((sims, k, r), dtype=bool)
    if model.missing_control > 0:
        present &= rng.random((sims, k, r)) >= model.missing_control
    if model.missing_treatment > 0:
        present &= rng.random((sims, k, r)) >= model.missing_treatment
    return present


def sign_patterns(k: int, exact_max: int, draws: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """(M, K) +/-1 patterns: all 2^K when K <= exact_max, else `draws` random ones."""
    if k <= exact_max:
        codes = np.arange(2 ** k, dtype=np.int64)[:, None]
        return 1.0 - 2.0 * ((codes >> np.arange(k, dtype=np.int64)[None, :]) & 1), True
    return 1.0 - 2.0 * rng.integers(0, 2, size=(draws, k)), False


def analyse_simulated(d: np.ndarray, present: np.ndarray, alpha: float, patterns: np.ndarray,
            exact: bool) -> StudyAnalysis:
    """The primary estimator and its two tests on S simulated studies at once (module note)."""
    cnt = present.sum(axis=-1)
    in_panel = cnt > 0
    eff = np.einsum("skr,skr->sk", d, present) / np.maximum(cnt, 1)   # 0 where absent
    return _tests(eff, in_panel, alpha, eff @ patterns.T, patterns.shape[0], exact)


def analyse_shifted(d0: np.ndarray, present: np.ndarray, alpha: float, patterns: np.ndarray, exact: bool,
                    effects: tuple[float, ...]) -> list[StudyAnalysis]:
    """`analyse_simulated(d0 + effect, ...)` for each effect, sharing the work (the resampling variant).

    A configuration effect is eff0 + effect where present, so every signed sum is
    eff0 @ P' + effect (present @ P'): two matrix products for all effects instead of one each.
    Equal to `analyse_simulated` up to floating rounding, far inside the sign-flip test's tie tolerance.
    """
    cnt = present.sum(axis=-1)
    in_panel = cnt > 0
    eff0 = np.einsum("skr,skr->sk", d0, present) / np.maximum(cnt, 1)
    proj0 = eff0 @ patterns.T
    proj_panel = in_panel.astype(float) @ patterns.T
    return [_tests(np.where(in_panel, eff0 + effect, 0.0), in_panel, alpha, proj0 + effect * proj_panel,
                   patterns.shape[0], exact) for effect in effects]


def _tests(eff: np.ndarray, in_panel: np.ndarray, alpha: float, signed: np.ndarray, m: int,
           exact: bool) -> StudyAnalysis:
    """Dispersion interval and sign-flip p from configuration effects and their signed sums (S, M)."""
    n = in_panel.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = eff.sum(axis=-1) / n
        dev = np.where(in_panel, eff - mean[:, None], 0.0)
        sd = np.sqrt(np.square(dev).sum(axis=-1) / (n - 1))
        ns, inverse = np.unique(np.where(n >= 2, n - 1, 1), return_inverse=True)
        tq = stats.t.ppf(1.0 - alpha / 2.0, ns)[inverse]   # one quantile per distinct df
        half = np.where(n >= 2, tq * sd / np.sqrt(n), np.nan)
    lo, hi = mean - half, mean + half
    obs = np.abs(eff.sum(axis=-1))
    tol = _TOL * np.maximum(1.0, np.abs(eff).sum(axis=-1))
    hits = (np.abs(signed) >= (obs - tol)[:, None]).sum(axis=-1)
    p = hits / m if exact else (1.0 + hits) / (1.0 + m)
    p = np.where(n >= 1, p, np.nan)
    return StudyAnalysis(mean=mean, configurations=n, lo=lo, hi=hi, p_signflip=p, effects=eff,
                         present=in_panel)


EXACT_R_MAX = 1000
"""Largest R whose E[1/N | N >= 1] is the exact binomial sum; above it the second-order expansion
1/(R p) (1 + (1 - p)/(R p)), whose relative error is O((R p)^-2) (below 1e-6 there)."""


def pair_completeness(r: np.ndarray | int, missing: tuple[float, float] = (0.0, 0.0)
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(pi, E[1/N | N >= 1]) for N ~ Binomial(R, (1 - m_c)(1 - m_t)) complete pairs (module note).

    pi is the probability that a configuration keeps at least one complete pair. Without missing
    rows (pi, E[1/N]) = (1, 1/R). Exact sum over n = 1..R (scipy's binomial pmf) up to EXACT_R_MAX.
    """
    r = np.asarray(r, dtype=float)
    p = (1.0 - min(max(missing[0], 0.0), 1.0)) * (1.0 - min(max(missing[1], 0.0), 1.0))
    if p >= 1.0:
        return np.ones_like(r), 1.0 / r
    if p <= 0.0:
        return np.zeros_like(r), np.full(r.shape, math.inf)
    values, inverse = np.unique(r, return_inverse=True)
    present = 1.0 - (1.0 - p) ** values
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = (1.0 + (1.0 - p) / (values * p)) / (values * p)
    small = values <= EXACT_R_MAX
    if small.any():
        vs = values[small]
        n = np.arange(1, int(vs.max()) + 1, dtype=float)
        pmf = stats.binom.pmf(n[None, :], vs[:, None], p)   # 0 where n > R
        with np.errstate(divide="ignore", invalid="ignore"):
            inv[small] = (pmf / n[None, :]).sum(axis=1) / present[small]
    return present[inverse].reshape(r.shape), inv[inverse].reshape(r.shape)


def closed_form(tau2: float, sigma2_within: float, k: np.ndarray | int, r: np.ndarray | int,
                effect: float, alpha: float, missing: tuple[float, float] = (0.0, 0.0),
                completeness: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(power, expected half-width t_crit * sqrt(Var)) of the t test with Var = tau2/K + s2/(K R).

    ``missing``: (control, treatment) missing-or-invalid rates; the variance and the degrees of
    freedom then count the expected complete pairs and panel configurations (module note).
    ``completeness``: ``pair_completeness(r, missing)`` when the caller has it (a search that keeps R).
    """
    k = np.asarray(k, dtype=float)
    r = np.asarray(r, dtype=float)
    present, inv_n = pair_completeness(r, missing) if completeness is None else completeness
    k_eff = k * present
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (tau2 + sigma2_within * inv_n) / k_eff
    se = np.sqrt(var)
    df = np.maximum(k_eff - 1.0, 1.0) if (missing[0] > 0 or missing[1] > 0) else k - 1.0
    tc = stats.t.ppf(1.0 - alpha / 2.0, df)
    with np.errstate(divide="ignore", invalid="ignore"):
        ncp = np.where(se > 0, effect / se, np.inf if effect else 0.0)
    power = stats.nct.sf(tc, df, ncp) + stats.nct.cdf(-tc, df, ncp)
    # scipy's noncentral t returns NaN at large df and noncentrality (thousands of configurations);
    # there the t is normal to well within 0.001, so use P(|Z + ncp| > t_crit).
    normal = stats.norm.sf(tc - ncp) + stats.norm.cdf(-tc - ncp)
    power = np.where(np.isfinite(power), power, normal)
    return np.asarray(power, dtype=float), np.asarray(tc * se, dtype=float)


def study_frames(diffs: np.ndarray, present: np.ndarray, checks_total: int
                 ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One simulated study (K, R) as rows/runs frames the package's estimators read.

    Used to check that `analyse_simulated` equals analysis.estimators.paired on the same study. A
    difference D = round(T d) is written as control passed max(0, -D), treatment that + D;
    a non-present repeat has an invalid treatment row.
    """
    k, r = diffs.shape
    t = checks_total
    records = []
    for i in range(k):
        for j in range(r):
            dd = round(float(diffs[i, j] * t))
            c = max(0, -dd)
            for arm, passed in (("j", c), ("q", c + dd)):
                ok = bool(present[i, j]) or arm == "j"
                records.append((f"c{i:03d}/{j + 1}/{arm}", "S5", f"c{i:03d}", f"g{i:03d}", j + 1, arm,
                                ok, t, passed if ok else None))
    rows = pl.DataFrame(records, orient="row", schema={
        "row_id": pl.String, "scenario": pl.String, "configuration": pl.String,
        "execution_group": pl.String, "repeat": pl.Int64, "arm": pl.String, "valid": pl.Boolean,
        "checks_total": pl.Int64, "checks_passed": pl.Int64})
    import datetime

    runs = pl.DataFrame({"configuration": [f"c{i:03d}" for i in range(k)],
                         "execution_group": [f"g{i:03d}" for i in range(k)],
                         "planned_repeats": [r] * k, "family": ["f"] * k,
                         "published": [datetime.date(2026, 1, 1)] * k})
    return rows, runs
