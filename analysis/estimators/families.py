"""Family-weighted panel summaries (paper 4.7, 6; docs/RESULTS_CONTRACT.md `families`).

Methods note. A family's mean is the mean effect of its panel configurations;
the family-weighted mean is the mean of family means (families with at least
one panel configuration). `lofo_min/max` is the range of that mean with one
family left out; the dispersion interval is mean +/- t(1 - alpha/2, F - 1) sd / sqrt(F)
over the F family means.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.estimators.common import (
    FEWER_THAN_TWO,
    NAN,
    NO_CONFIGURATIONS,
    frozen_reasons,
    require_columns,
    t_interval,
)


@dataclass(frozen=True, slots=True)
class FamilyWeighted:
    """Equal-family summary of configuration effects."""

    families: int
    """Families with at least one panel configuration."""
    mean: float
    """Mean of family means."""
    lofo_min: float
    """Smallest family-weighted mean with one family left out."""
    lofo_max: float
    """Largest family-weighted mean with one family left out."""
    dispersion_lo: float
    """Lower end of the t-style interval over family means."""
    dispersion_hi: float
    """Upper end of that interval."""
    family_means: pl.DataFrame
    """family, configurations, mean (sorted by family)."""
    reasons: Mapping[str, str]
    """Field name -> why it is NaN."""


def family_weighted(effects: pl.DataFrame, alpha: float) -> FamilyWeighted:
    """Family-weighted mean, LOFO range and dispersion interval of `effects` (family, effect)."""
    require_columns(effects, ("family", "effect"), "effects")
    fam = (effects.group_by("family").agg(pl.len().cast(pl.Int64).alias("configurations"),
                                          pl.col("effect").mean().alias("mean"))
           .sort("family"))
    x = fam.get_column("mean").to_numpy().astype(float)
    f = int(x.size)
    reasons: dict[str, str] = {}
    mean = float(x.mean()) if f else NAN
    if not f:
        reasons["mean"] = NO_CONFIGURATIONS
    if f >= 2:
        lofo = (x.sum() - x) / (f - 1)
        lofo_min, lofo_max = float(lofo.min()), float(lofo.max())
    else:
        lofo_min = lofo_max = NAN
        reasons.update(dict.fromkeys(("lofo_min", "lofo_max"), FEWER_THAN_TWO if f else NO_CONFIGURATIONS))
    lo, hi, why = t_interval(np.asarray(x), alpha)
    if why:
        reasons.update(dispersion_lo=why, dispersion_hi=why)
    return FamilyWeighted(families=f, mean=mean, lofo_min=lofo_min, lofo_max=lofo_max,
                          dispersion_lo=lo, dispersion_hi=hi, family_means=fam,
                          reasons=frozen_reasons(reasons))
