"""Configuration-level nonparametric bootstrap of the panel mean (ours, not the paper's).

bootstrap_mean resamples configurations with replacement from an explicit numpy Generator
seeded from the params; percentile interval by default, BCa (bias-corrected and accelerated,
jackknife acceleration) on request. When every effect is equal the interval is not estimable
(NaN bounds with the reason of analysis.estimators.estimable.no_spread), never [mean, mean].
Every result carries `label = "ours, not the paper's"`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.estimators.common import OURS_LABEL, EstimatorInputError, finite_effects
from analysis.estimators.estimable import no_spread

_CHUNK = 2048  # bootstrap resamples per vectorised block (bounds memory at ~_CHUNK * n indices)


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
    label: str = OURS_LABEL
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
        raise EstimatorInputError(f"bootstrap method {method!r} is unknown; use 'percentile' or 'bca'.")
    if resamples < 1:
        raise EstimatorInputError("bootstrap resamples must be >= 1.")
    x = finite_effects(effects)
    n = x.size
    level = 1.0 - alpha
    if n == 0:
        return BootstrapInterval(math.nan, math.nan, math.nan, 0, resamples, seed, method, level,
                                 "no configurations")
    est = float(x.mean())
    if n == 1:
        return BootstrapInterval(est, math.nan, math.nan, 1, resamples, seed, method, level,
                                 "one configuration: resampling cannot vary the mean")
    flat = no_spread(x, "configuration effects")
    if flat:
        return BootstrapInterval(est, math.nan, math.nan, n, resamples, seed, method, level, flat)
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
