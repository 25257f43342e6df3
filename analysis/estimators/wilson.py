"""Design-effect-adjusted Wilson intervals for per-cell mean recall (ours, not the paper's).

design_effect_interval(s): Wilson score interval for a per-cell mean recall with the effective
number of checks n_eff = rows * k / deff (deff from analysis.estimators.dependence). A thin wrapper:
the cell checks (empty cell, design effect undefined) come first, then
statsmodels.stats.proportion.proportion_confint(mean * n_eff, n_eff, method="wilson"), with each end
moved onto the mean where rounding leaves it just outside (at mean 0 or 1) and clipped to [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from statsmodels.stats.proportion import proportion_confint

from analysis.estimators.common import OURS_LABEL


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
    """'Wilson score interval at n_eff = rows * k / deff'."""
    reason: str | None
    """Why the interval is undefined, else None."""
    label: str = OURS_LABEL
    """Provenance label: ours, not the paper's."""


_DEFF_METHOD = "Wilson score interval at n_eff = rows * k / deff"


def _wilson(p: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' Wilson interval of proportions p with (possibly fractional) n observations."""
    lo, hi = proportion_confint(p * n, n, alpha=alpha, method="wilson")
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    # At p = 0 or 1 one end equals p exactly; clip rounding so the interval always contains p.
    return np.clip(np.minimum(lo, p), 0, 1), np.clip(np.maximum(hi, p), 0, 1)


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
    lo, hi = _wilson(np.array([mean]), np.array([n_eff]), alpha)
    return DeffInterval(float(mean), int(rows), float(n_eff), float(lo[0]), float(hi[0]), _DEFF_METHOD, None)


def design_effect_intervals(
    cells: pl.DataFrame, checks_per_row: int, design_effect: float, alpha: float = 0.05
) -> pl.DataFrame:
    """Add effective_n, lo, hi (Wilson at n_eff) to a table with columns `mean` and `rows`.

    Empty cells (rows 0 or null mean) and an undefined design effect give null ends.
    """
    ok = math.isfinite(design_effect) and design_effect > 0
    rows = cells.get_column("rows").cast(pl.Float64).to_numpy()
    p = cells.get_column("mean").cast(pl.Float64).fill_null(math.nan).to_numpy()
    valid = (rows > 0) & np.isfinite(p) & ok
    n_eff = np.full(cells.height, math.nan)
    lo, hi = n_eff.copy(), n_eff.copy()
    if valid.any():
        n_eff[valid] = rows[valid] * checks_per_row / design_effect
        lo[valid], hi[valid] = _wilson(p[valid], n_eff[valid], alpha)
    return cells.with_columns(
        pl.Series("effective_n", n_eff).fill_nan(None),
        pl.Series("lo", lo).fill_nan(None),
        pl.Series("hi", hi).fill_nan(None),
    )
