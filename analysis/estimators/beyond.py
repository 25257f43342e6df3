"""Beyond the paper: ours, not the paper's.

Model-based and resampling sensitivities of the equal-configuration panel mean that the paper
does not report. Every result carries `label = "ours, not the paper's"`.

* bootstrap_mean: configuration-level nonparametric bootstrap of the panel mean, resampling
  configurations with replacement from an explicit numpy Generator seeded from the params;
  percentile interval by default, BCa (bias-corrected and accelerated, jackknife acceleration)
  on request. When every effect is equal the interval collapses to the point (with a reason).
* sign_flip_test: exact randomisation test of the panel mean under the sharp null of
  symmetric configuration effects: all 2^n sign patterns for n <= exact_max_n (two halves of
  a bit matrix, added as an outer sum), otherwise Monte Carlo with the stated seed (random
  sign bits drawn as bytes, summed through a per-byte lookup table) and
  p = (1 + hits) / (1 + draws). Two-sided: |mean(s * e)| >= |mean(e)|.
* gee_arm_effect (beyond_gee.py): row-level GEE of recall on a treatment indicator, Gaussian
  family, identity link, exchangeable working correlation within configuration clusters,
  Mancl-DeRouen bias-reduced sandwich covariance (statsmodels cov_type='bias_reduced') and a t
  reference with G - 1 degrees of freedom (G clusters).
* design_effect_interval(s): Wilson score interval for a per-cell mean recall with the
  effective number of checks n_eff = rows * k / deff.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from analysis.estimators._explore_common import EXPLORE_LABEL, ExploreInputError
from analysis.estimators.beyond_gee import GeeArmEffect, gee_arm_effect, gee_method  # noqa: F401 (re-export)

LABEL = EXPLORE_LABEL
_CHUNK = 2048  # bootstrap resamples per vectorised block (bounds memory at ~_CHUNK * n indices)


def _effects(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        raise ExploreInputError("effects contain NaN or inf; drop undefined configurations before resampling.")
    return arr


# --------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """Configuration-level bootstrap interval of the panel mean (ours, not the paper's)."""

    estimate: float
    """Equal-configuration mean of the effects."""
    lo: float
    """Lower interval end (NaN when undefined)."""
    hi: float
    """Upper interval end (NaN when undefined)."""
    n: int
    """Configurations resampled."""
    resamples: int
    """Bootstrap resamples drawn."""
    seed: int
    """Seed of the numpy Generator (PCG64) that drew the resamples."""
    method: str
    """'percentile' or 'bca'."""
    level: float
    """Nominal coverage (1 - alpha)."""
    reason: str | None
    """Why the interval is degenerate or undefined, else None."""
    label: str = LABEL
    """Provenance label: ours, not the paper's."""


def _boot_means(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = x.size
    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        stop = min(resamples, start + _CHUNK)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = x[idx].mean(axis=1)
    return out


def bootstrap_mean(
    effects: Sequence[float] | np.ndarray,
    *,
    resamples: int = 10_000,
    seed: int = 20260728,
    alpha: float = 0.05,
    method: str = "percentile",
) -> BootstrapInterval:
    """Percentile or BCa bootstrap interval of the mean over configurations."""
    if method not in ("percentile", "bca"):
        raise ExploreInputError(f"bootstrap method {method!r} is unknown; use 'percentile' or 'bca'.")
    if resamples < 1:
        raise ExploreInputError("bootstrap resamples must be >= 1.")
    x = _effects(effects)
    n = x.size
    level = 1.0 - alpha
    if n == 0:
        return BootstrapInterval(math.nan, math.nan, math.nan, 0, resamples, seed, method, level,
                                 "no configurations")
    est = float(x.mean())
    if n == 1:
        return BootstrapInterval(est, math.nan, math.nan, 1, resamples, seed, method, level,
                                 "one configuration: resampling cannot vary the mean")
    if np.all(x == x[0]):
        return BootstrapInterval(est, est, est, n, resamples, seed, method, level,
                                 "every effect is equal: the interval collapses to the point")
    rng = np.random.Generator(np.random.PCG64(seed))
    boots = _boot_means(x, resamples, rng)
    q_lo, q_hi = alpha / 2, 1 - alpha / 2
    reason = None
    if method == "bca":
        prop = float(np.mean(boots < est))
        if prop in (0.0, 1.0):
            reason = "BCa bias correction infinite (all resampled means on one side); percentile used"
        else:
            z0 = stats.norm.ppf(prop)
            jack = (x.sum() - x) / (n - 1)
            d = jack.mean() - jack
            denom = 6.0 * (np.sum(d**2)) ** 1.5
            a = float(np.sum(d**3) / denom) if denom > 0 else 0.0
            z = stats.norm.ppf([q_lo, q_hi])
            adj = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
            q_lo, q_hi = float(adj[0]), float(adj[1])
    lo, hi = np.quantile(boots, [q_lo, q_hi])
    return BootstrapInterval(est, float(lo), float(hi), n, resamples, seed, method, level, reason)


# --------------------------------------------------------------------------- sign flip
@dataclass(frozen=True, slots=True)
class SignFlipTest:
    """Randomisation test of the panel mean by flipping configuration signs (ours, not the paper's)."""

    estimate: float
    """Observed equal-configuration mean."""
    p_value: float
    """Two-sided p: share of sign patterns with |mean| >= observed |mean| (NaN when undefined)."""
    n: int
    """Configurations."""
    patterns: int
    """Sign patterns evaluated (2^n when exact, else the Monte Carlo draws)."""
    exact: bool
    """True when all 2^n patterns were enumerated."""
    seed: int | None
    """Generator seed of the Monte Carlo draws (None when exact)."""
    reason: str | None
    """Why p is undefined, else None."""
    label: str = LABEL
    """Provenance label: ours, not the paper's."""


def _bit_matrix(m: int) -> np.ndarray:
    """All 2^m sign patterns of length m as a (2^m, m) matrix of +1/-1 (bit b of row i -> column b)."""
    codes = np.arange(2**m, dtype=np.int64)[:, None]
    bits = (codes >> np.arange(m, dtype=np.int64)[None, :]) & 1
    return 1.0 - 2.0 * bits


def sign_flip_test(
    effects: Sequence[float] | np.ndarray,
    *,
    exact_max_n: int = 20,
    draws: int = 100_000,
    seed: int = 20260728,
) -> SignFlipTest:
    """Exact (n <= exact_max_n) or Monte Carlo sign-flip test of mean(effects) = 0."""
    x = _effects(effects)
    n = x.size
    if n == 0:
        return SignFlipTest(math.nan, math.nan, 0, 0, False, None, "no configurations")
    obs = abs(float(x.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(x).sum()))
    if n <= exact_max_n:
        half = n // 2
        left = _bit_matrix(half) @ x[:half] if half else np.zeros(1)
        right = _bit_matrix(n - half) @ x[half:]
        hits = 0
        for block in np.array_split(left, max(1, left.size // 1024)):
            hits += int(np.count_nonzero(np.abs(block[:, None] + right[None, :]) >= obs - tol))
        patterns = 2**n
        return SignFlipTest(float(x.mean()), hits / patterns, n, patterns, True, None, None)
    # Monte Carlo: each draw is n independent fair sign bits, drawn as bytes. A byte of group k
    # flips effects 8k..8k+7 where its bits are set, so a draw's sum is
    # total - 2 * sum_k table[k, byte_k], with table[k, v] = sum of the effects of group k in v.
    rng = np.random.Generator(np.random.PCG64(seed))
    groups = (n + 7) // 8
    padded = np.zeros(groups * 8)
    padded[:n] = x
    byte_bits = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(float)
    table = padded.reshape(groups, 8) @ byte_bits.T              # (groups, 256)
    cols = np.arange(groups)
    total = float(x.sum())
    hits = 0
    for start in range(0, draws, _CHUNK):
        m = min(draws, start + _CHUNK) - start
        drawn = rng.integers(0, 256, size=(m, groups), dtype=np.uint8)
        sums = total - 2.0 * table[cols, drawn].sum(axis=1)
        hits += int(np.count_nonzero(np.abs(sums) >= obs - tol))
    return SignFlipTest(float(x.mean()), (1 + hits) / (1 + draws), n, draws, False, seed, None)


# --------------------------------------------------------------------------- design effect
@dataclass(frozen=True, slots=True)
class DeffInterval:
    """Design-effect-adjusted Wilson interval for a per-cell mean recall (ours, not the paper's)."""

    estimate: float
    """Cell mean recall."""
    rows: int
    """Rows in the cell."""
    effective_n: float
    """rows * checks_per_row / design_effect: independent checks the cell is worth."""
    lo: float
    """Wilson lower end at effective_n (NaN when undefined)."""
    hi: float
    """Wilson upper end at effective_n (NaN when undefined)."""
    method: str
    """'wilson score interval at n_eff = rows * k / deff'."""
    reason: str | None
    """Why the interval is undefined, else None."""
    label: str = LABEL
    """Provenance label: ours, not the paper's."""


_DEFF_METHOD = "wilson score interval at n_eff = rows * k / deff"


def _wilson(p: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    # At p = 0 or 1 one end equals p exactly; clip rounding so the interval always contains p.
    return np.clip(np.minimum(centre - half, p), 0, 1), np.clip(np.maximum(centre + half, p), 0, 1)


def design_effect_interval(
    mean: float, rows: int, checks_per_row: int, design_effect: float, alpha: float = 0.05
) -> DeffInterval:
    """Wilson interval for one cell mean with n_eff = rows * k / deff."""
    if rows <= 0 or not math.isfinite(mean):
        return DeffInterval(mean, rows, math.nan, math.nan, math.nan, _DEFF_METHOD, "empty cell")
    if not (math.isfinite(design_effect) and design_effect > 0):
        return DeffInterval(mean, rows, math.nan, math.nan, math.nan, _DEFF_METHOD,
                            "design effect undefined or not positive")
    n_eff = rows * checks_per_row / design_effect
    z = float(stats.norm.ppf(1 - alpha / 2))
    lo, hi = _wilson(np.array([mean]), np.array([n_eff]), z)
    return DeffInterval(float(mean), int(rows), float(n_eff), float(lo[0]), float(hi[0]), _DEFF_METHOD, None)


def design_effect_intervals(
    cells: pl.DataFrame, checks_per_row: int, design_effect: float, alpha: float = 0.05
) -> pl.DataFrame:
    """Add effective_n, lo, hi (Wilson at n_eff) to a table with columns `mean` and `rows`.

    Empty cells (rows 0 or null mean) and an undefined design effect give null ends.
    """
    z = float(stats.norm.ppf(1 - alpha / 2))
    ok = math.isfinite(design_effect) and design_effect > 0
    n_eff = pl.col("rows").cast(pl.Float64) * checks_per_row / (design_effect if ok else math.nan)
    p = pl.col("mean")
    denom = 1 + z**2 / n_eff
    centre = (p + z**2 / (2 * n_eff)) / denom
    half = z * (p * (1 - p) / n_eff + z**2 / (4 * n_eff**2)).sqrt() / denom
    valid = (pl.col("rows") > 0) & p.is_not_null() & p.is_not_nan() & pl.lit(ok)
    lo = pl.min_horizontal(centre - half, p).clip(0.0, 1.0)
    hi = pl.max_horizontal(centre + half, p).clip(0.0, 1.0)
    return cells.with_columns(
        pl.when(valid).then(n_eff).otherwise(None).alias("effective_n"),
        pl.when(valid).then(lo).otherwise(None).alias("lo"),
        pl.when(valid).then(hi).otherwise(None).alias("hi"),
    )
