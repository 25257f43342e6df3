"""Configuration-level nonparametric bootstrap of the panel mean (ours, not the paper's).

bootstrap_mean resamples configurations with replacement from an explicit numpy Generator
seeded from the params; percentile interval by default, BCa (bias-corrected and accelerated,
jackknife acceleration) on request. A thin wrapper: estimability first (no configuration, one, or
every effect equal: NaN bounds with a reason, for equal effects that of
analysis.estimators.estimable.no_spread, never [mean, mean]), then scipy.stats.bootstrap with the
Generator as `rng` (resamples drawn in blocks of _CHUNK). Where BCa's bias correction is infinite
(every resampled mean on one side of the estimate) the percentile interval of the same resamples is
returned with a reason.
Every result carries `label = "ours, not the paper's"`.
"""

from __future__ import annotations

import math
import warnings
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


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    value: np.ndarray = np.mean(x, axis=axis)
    return value


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
    with warnings.catch_warnings():
        # An undefined BCa end is reported in `reason` below, not as a warning.
        warnings.simplefilter("ignore", category=stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", category=RuntimeWarning)
        res = stats.bootstrap((x,), _mean, n_resamples=resamples, batch=_CHUNK, vectorized=True,
                              confidence_level=level, method="BCa" if method == "bca" else "percentile", rng=rng)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    reason = None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        reason = "BCa bias correction infinite (all resampled means on one side); percentile used"
        res = stats.bootstrap((x,), _mean, n_resamples=0, bootstrap_result=res, vectorized=True,
                              confidence_level=level, method="percentile")
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return BootstrapInterval(est, lo, hi, n, resamples, seed, method, level, reason)
