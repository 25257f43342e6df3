"""Variance components of a v2 design test (defined once): data/v1's tau^2 and sigma^2 on a 20-configuration,
4-pair panel, with each arm's missing rate as given."""

from __future__ import annotations

from types import MappingProxyType

from analysis.estimators.common import Contrast
from analysis.estimators.variance_components import ArmMissing, VarianceComponents

C = Contrast("j", "q", "S5")
TAU2, S2 = 0.0757, 0.0659  # data/v1's components (docs/PREREGISTRATION.md); any positive pair would do


def planned_components(missing_control: float = 0.0, missing_treatment: float = 0.0) -> VarianceComponents:
    """VarianceComponents with TAU2, S2 and the two arms' missing rates kept apart."""
    return VarianceComponents(
        contrast=C, checks_total=14, configurations=20, pairs=80, pairs_per_configuration=(4,) * 20,
        within_df=60, grand_mean=0.0, panel_mean=0.0, msb=0.0, msw=S2, n0=4.0, tau2_untruncated=TAU2,
        tau2=TAU2, tau2_truncated=False, sigma2_within=S2, icc=0.7, design_effect=10.0, icc_rows=160,
        missing=(ArmMissing("j", 80, 80, 0, 0, missing_control), ArmMissing("q", 80, 80, 0, 0, missing_treatment)),
        method="m", reasons=MappingProxyType({}))
