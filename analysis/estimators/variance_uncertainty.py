"""How sure the variance components are (issue 19): REML beside ANOVA, a tau2 interval, pairings.

Methods note. The model is the one of analysis.estimators.variance_components: paired repeat
differences d_ij = mu + a_i + e_ij, Var(a_i) = tau2, Var(e_ij) = sigma2_within, configuration i
with n_i pairs, N pairs, K configurations.

REML. With v_i = n_i / (sigma2 + n_i tau2), the restricted log-likelihood is, up to a constant,
  l_R(tau2, sigma2) = -1/2 [ sum_i ((n_i - 1) log sigma2 + log(sigma2 + n_i tau2))
                            + log sum_i v_i + SSW / sigma2 + sum_i v_i (dbar_i - mu_hat)^2 ],
mu_hat = sum v_i dbar_i / sum v_i, SSW = sum_ij (d_ij - dbar_i)^2. For lambda = tau2 / sigma2
the maximising sigma2 is Q(lambda) / (N - 1), Q = SSW + sum w_i (dbar_i - mu_hat)^2 with
w_i = n_i / (1 + lambda n_i), so l_R is maximised over lambda >= 0 alone (a log grid, then a
bounded Brent refinement). The tests check it against statsmodels MixedLM (reml=True).
Interval for tau2: the profile REML likelihood interval, {tau2 : 2 (l_max - max_sigma2 l_R) <=
chi2_1(level)}, ends found by Brent's root finder (the lower end is 0 when tau2 = 0 is inside).

Pairings. Inside a configuration the paper prints how many rows of each arm passed, never which
j row went with which q row. A reconstruction has to choose; the choice moves sigma2_within (and
through MSW, tau2), never the configuration means, MSB or the panel mean. For each
configuration's complete pairs, keeping the multiset of j and of q outcomes fixed:
`shipped` is the pairing in rows.csv (by repeat), `sorted` pairs the i-th smallest j with the
i-th smallest q (the smallest within sum of squares: rearrangement inequality), `reversed` pairs
the i-th smallest j with the i-th largest q (the largest), `random` permutes the q outcomes
uniformly (draws from an explicit numpy Generator). Under a uniform permutation the cross term
has expectation 0, so E[SSW_i] = SS_j,i + SS_q,i exactly: `random_expected` is that value.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import optimize, stats

from analysis.estimators.common import (
    NAN,
    RUN_COLUMNS,
    Contrast,
    frozen_reasons,
    require_columns,
    scenario_total,
)
from analysis.estimators.paired import complete_pairs, run_outcomes
from analysis.estimators.variance_components import anova_components

REML_METHOD = "REML of the one-way random-intercept model (profile over lambda = tau2 / sigma2)"
INTERVAL_METHOD = "profile REML likelihood interval (chi-square 1 df cutoff)"
PAIRINGS = ("shipped", "sorted", "random", "reversed")
RANDOM_RANGE_LEVEL = 0.95
"""Share of the random pairings' sigma2_within that sigma2_within_lo..hi holds (central percentiles)."""


@dataclass(frozen=True, slots=True)
class Tau2Uncertainty:
    """REML estimates of the components and the profile interval of tau2."""

    tau2_reml: float
    """REML estimate of tau2 (>= 0; NaN when undefined)."""
    sigma2_within_reml: float
    """REML estimate of sigma2_within."""
    loglik_reml: float
    """Maximised restricted log-likelihood (without its constant)."""
    tau2_lo: float
    """Lower end of the profile interval of tau2 (0 when 0 is inside)."""
    tau2_hi: float
    """Upper end of the profile interval of tau2."""
    level: float
    """Coverage the interval is built for."""
    method: str
    """Estimator and interval in words."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""


@dataclass(frozen=True, slots=True)
class PairingComponents:
    """sigma2_within and tau2 (ANOVA) under one pairing of j and q rows inside configurations."""

    pairing: str
    """shipped | sorted | random | reversed."""
    sigma2_within: float
    """Within-configuration variance (random: mean over draws)."""
    tau2: float
    """ANOVA tau2, truncated at 0 (random: from the mean sigma2_within)."""
    sigma2_within_lo: float
    """random: lower central percentile over draws (RANDOM_RANGE_LEVEL); else equal to sigma2_within."""
    sigma2_within_hi: float
    """random: upper central percentile over draws; otherwise equal to sigma2_within."""


@dataclass(frozen=True, slots=True)
class VariancePairingRange:
    """The components under each pairing (module note)."""

    rows: tuple[PairingComponents, ...]
    """One per name in PAIRINGS (empty when undefined)."""
    random_expected: float
    """Exact E[sigma2_within] under a uniform random pairing."""
    draws: int
    """Random pairings drawn."""
    reasons: Mapping[str, str]
    """Why the range is undefined (e.g. no configuration with two pairs)."""


def _stats(groups: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, float]:
    n = np.array([g.size for g in groups], dtype=float)
    means = np.array([g.mean() for g in groups])
    ssw = float(sum(np.square(g - g.mean()).sum() for g in groups))
    return n, means, ssw


def restricted_loglik(groups: Sequence[np.ndarray], tau2: float, sigma2: float) -> float:
    """l_R(tau2, sigma2) of the module note (without its constant)."""
    n, means, ssw = _stats(groups)
    v = n / (sigma2 + n * tau2)
    mu = float((v * means).sum() / v.sum())
    return -0.5 * float(((n - 1.0) * math.log(sigma2)).sum() + np.log(sigma2 + n * tau2).sum()
                        + math.log(v.sum()) + ssw / sigma2 + (v * np.square(means - mu)).sum())


def _profile_lambda(n: np.ndarray, means: np.ndarray, ssw: float, lam: float) -> tuple[float, float]:
    """(l_R maximised over sigma2 at tau2 = lam sigma2, that sigma2)."""
    total = n.sum()
    w = n / (1.0 + lam * n)
    mu = float((w * means).sum() / w.sum())
    q = ssw + float((w * np.square(means - mu)).sum())
    s2 = q / (total - 1.0)
    ll = -0.5 * ((total - 1.0) * math.log(s2) + float(np.log1p(lam * n).sum()) + math.log(w.sum())
                 + (total - 1.0))
    return ll, s2


def _reml(groups: Sequence[np.ndarray]) -> tuple[float, float, float]:
    n, means, ssw = _stats(groups)
    grid = np.concatenate([[0.0], np.logspace(-6, 6, 121)])
    lls = [_profile_lambda(n, means, ssw, lam)[0] for lam in grid]
    i = int(np.argmax(lls))
    lam = float(grid[i])
    if 0 < i < grid.size - 1:
        res = optimize.minimize_scalar(lambda x: -_profile_lambda(n, means, ssw, math.exp(x))[0],
                                       bounds=(math.log(grid[i - 1] or 1e-7), math.log(grid[i + 1])),
                                       method="bounded", options={"xatol": 1e-10})
        if -float(res.fun) >= lls[i]:
            lam = math.exp(float(res.x))
    elif i == 0:
        res = optimize.minimize_scalar(lambda x: -_profile_lambda(n, means, ssw, x)[0],
                                       bounds=(0.0, float(grid[1])), method="bounded", options={"xatol": 1e-12})
        if -float(res.fun) > lls[0]:
            lam = float(res.x)
    _, s2 = _profile_lambda(n, means, ssw, lam)
    return lam * s2, s2, restricted_loglik(groups, lam * s2, s2)


def _profile_tau2(groups: Sequence[np.ndarray], tau2: float, s2_hint: float) -> float:
    """max over sigma2 of l_R(tau2, sigma2)."""
    centre = math.log(s2_hint)
    res = optimize.minimize_scalar(lambda x: -restricted_loglik(groups, tau2, math.exp(x)),
                                   bounds=(centre - 12.0, centre + 12.0), method="bounded",
                                   options={"xatol": 1e-10})
    return -float(res.fun)


def tau2_uncertainty_groups(groups: Sequence[np.ndarray], level: float = 0.95) -> Tau2Uncertainty:
    """REML and the profile interval of tau2 from per-configuration difference arrays."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    k = len(groups)
    n = sum(g.size for g in groups)
    reasons: dict[str, str] = {}
    if k < 2 or n - k < 1:
        why = ("fewer than two configurations: between-configuration variance is undefined" if k < 2 else
               "no configuration has two complete pairs: within-configuration variance is undefined")
        for f in ("tau2_reml", "sigma2_within_reml", "loglik_reml", "tau2_lo", "tau2_hi"):
            reasons[f] = why
        return Tau2Uncertainty(NAN, NAN, NAN, NAN, NAN, level, f"{REML_METHOD}; {INTERVAL_METHOD}",
                               frozen_reasons(reasons))
    if float(np.ptp(np.concatenate(groups))) == 0.0:
        why = "every paired difference is equal: zero variance, no likelihood"
        for f in ("tau2_reml", "sigma2_within_reml", "loglik_reml", "tau2_lo", "tau2_hi"):
            reasons[f] = why
        return Tau2Uncertainty(NAN, NAN, NAN, NAN, NAN, level, f"{REML_METHOD}; {INTERVAL_METHOD}",
                               frozen_reasons(reasons))
    tau2, s2, ll = _reml(groups)
    cut = float(stats.chi2.ppf(level, 1)) / 2.0
    scale = max(s2, float(np.var(np.concatenate(groups))), 1e-12)

    def drop(t: float) -> float:
        return ll - _profile_tau2(groups, t, s2) - cut

    lo = 0.0
    if tau2 > 0 and drop(0.0) > 0:
        lo = float(optimize.brentq(drop, 0.0, tau2, xtol=1e-12, rtol=1e-10))
    hi_end = max(tau2, scale * 1e-3) * 2.0
    while drop(hi_end) < 0 and hi_end < scale * 1e6:
        hi_end *= 2.0
    hi = float(optimize.brentq(drop, tau2, hi_end, xtol=1e-12, rtol=1e-10)) if drop(hi_end) > 0 else math.inf
    if not math.isfinite(hi):
        reasons["tau2_hi"] = "the profile likelihood never drops by the cutoff: no finite upper end"
    return Tau2Uncertainty(tau2, s2, ll, lo, hi, level, f"{REML_METHOD}; {INTERVAL_METHOD}",
                           frozen_reasons(reasons))


def pair_outcomes(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast, *,
                  recency_cutoff: datetime.date) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """Per panel configuration, (control passed, treatment passed) of its complete pairs by repeat; and T."""
    require_columns(runs, RUN_COLUMNS, "runs")
    window = runs.filter(pl.col("published") >= recency_cutoff)
    run_rows = run_outcomes(rows, window, contrast)
    total = scenario_total(run_rows, contrast.scenario) or 1
    per = (complete_pairs(run_rows, contrast).sort("configuration", "execution_group", "repeat")
           .group_by("configuration", maintain_order=True)
           .agg(pl.col("control_passed"), pl.col("treatment_passed")).sort("configuration"))
    return [(np.asarray(c, dtype=float), np.asarray(t, dtype=float))
            for c, t in zip(per.get_column("control_passed").to_list(),
                            per.get_column("treatment_passed").to_list(), strict=True)], int(total)


def _paired(outcomes: Sequence[tuple[np.ndarray, np.ndarray]], total: int, how: str,
            rng: np.random.Generator | None = None) -> list[np.ndarray]:
    out = []
    for c, t in outcomes:
        if how == "sorted":
            c, t = np.sort(c), np.sort(t)
        elif how == "reversed":
            c, t = np.sort(c), np.sort(t)[::-1]
        elif how == "random" and rng is not None:
            t = rng.permutation(t)
        out.append((t - c) / total)
    return out


def variance_pairing_range_outcomes(outcomes: Sequence[tuple[np.ndarray, np.ndarray]], total: int,
                                    rng: np.random.Generator, draws: int) -> VariancePairingRange:
    """The components under each pairing (module note) from per-configuration outcomes."""
    k = len(outcomes)
    n = sum(c.size for c, _ in outcomes)
    if k < 2 or n - k < 1:
        why = ("fewer than two configurations: tau2 is undefined under every pairing" if k < 2 else
               "no configuration has two complete pairs: nothing to re-pair")
        return VariancePairingRange((), NAN, draws, frozen_reasons({"pairing": why}))
    rows = []
    for how in ("shipped", "sorted"):
        comp = anova_components(_paired(outcomes, total, how))
        rows.append(PairingComponents(how, comp["sigma2_within"], comp["tau2"], comp["sigma2_within"],
                                      comp["sigma2_within"]))
    base = anova_components(_paired(outcomes, total, "shipped"))
    msw = np.array([anova_components(_paired(outcomes, total, "random", rng))["sigma2_within"]
                    for _ in range(draws)])
    mean = float(msw.mean())
    tail = 50.0 * (1.0 - RANDOM_RANGE_LEVEL)
    rows.append(PairingComponents("random", mean, max(0.0, (base["msb"] - mean) / base["n0"]),
                                  float(np.percentile(msw, tail)), float(np.percentile(msw, 100.0 - tail))))
    comp = anova_components(_paired(outcomes, total, "reversed"))
    rows.append(PairingComponents("reversed", comp["sigma2_within"], comp["tau2"], comp["sigma2_within"],
                                  comp["sigma2_within"]))
    expected = sum(float(np.square(c - c.mean()).sum() + np.square(t - t.mean()).sum())
                   for c, t in outcomes) / total ** 2 / (n - k)
    return VariancePairingRange(tuple(rows), expected, draws, frozen_reasons({}))


def variance_pairing_range(rows: pl.DataFrame, runs: pl.DataFrame, contrast: Contrast, *,
                           recency_cutoff: datetime.date, rng: np.random.Generator, draws: int) -> VariancePairingRange:
    """sigma2_within and tau2 under the shipped, sorted, random and reversed pairings of the panel."""
    outcomes, total = pair_outcomes(rows, runs, contrast, recency_cutoff=recency_cutoff)
    return variance_pairing_range_outcomes(outcomes, total, rng, draws)


def pairing_groups(outcomes: Sequence[tuple[np.ndarray, np.ndarray]], total: int, pairing: str,
                   rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """Per-configuration paired differences (recall scale) under one pairing of PAIRINGS (module note);
    `random` is one uniform permutation drawn from ``rng``."""
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing {pairing!r}: use one of {', '.join(PAIRINGS)}")
    if pairing == "random" and rng is None:
        raise ValueError("the random pairing needs a numpy Generator")
    return _paired(outcomes, total, pairing, rng)
