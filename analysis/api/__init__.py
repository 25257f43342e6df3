"""The public Python API: verify, load and analyse an evidence package, one call per statistic.

``import analysis`` re-exports every name of ``__all__`` (lazily, so the command line stays light).
"""

from analysis.api.core import (
    ApiError,
    NotAPackageError,
    Results,
    UnknownTableError,
    analyse,
    load,
    report,
    verify,
)
from analysis.api.stats import (
    Estimate,
    family_weighted,
    fill,
    heading_slopes,
    mcnemar,
    paired_effect,
    repeat_bounds,
    survival,
    within_row_icc,
)
from analysis.api.studies import ClaimsAudit, V2Plan, claims_audit, plan_v2

__all__ = [
    "ApiError",
    "ClaimsAudit",
    "Estimate",
    "NotAPackageError",
    "Results",
    "UnknownTableError",
    "V2Plan",
    "analyse",
    "claims_audit",
    "family_weighted",
    "fill",
    "heading_slopes",
    "load",
    "mcnemar",
    "paired_effect",
    "plan_v2",
    "repeat_bounds",
    "report",
    "survival",
    "verify",
    "within_row_icc",
]
