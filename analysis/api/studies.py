"""The claims audit and the v2 plan as one call each, with typed results (``.to_frame()``, polars).

The audit is the build's own (analysis.pipeline.inputs.BuildInputs.audit, through
:func:`analysis.api.core.analyse`); the plan is ``carriers plan``'s analysis.plan.run.make_design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from analysis.api.core import ApiError, PackageLike, analyse
from analysis.api.stats import finite
from analysis.params import Params, PlanParams

if TYPE_CHECKING:
    from analysis.audit.claims_audit import AuditResult
    from analysis.plan.design import Design


@dataclass(frozen=True)
class ClaimsAudit:
    """The claims audit of a v1 package: every claim of the paper with its status."""

    detail: AuditResult
    """The audit's own result (analysis.audit.claims_audit.AuditResult)."""

    @property
    def n(self) -> int:
        """Derived claims audited."""
        return self.detail.derived

    @property
    def headline(self) -> str:
        """The audit's headline sentence (the README's and the report's)."""
        return self.detail.headline

    def to_frame(self) -> pl.DataFrame:
        """One row per claim: id, section, role, published, recomputed, status, rules, note, from_printed.

        Examples
        --------
        >>> import analysis
        >>> audit = analysis.claims_audit("data/v1")
        >>> audit.to_frame().columns[:3], audit.n == audit.to_frame().filter(role="derived").height
        (['id', 'section', 'role'], True)
        """
        return self.detail.table.clone()


def claims_audit(package: PackageLike, params: Params | None = None) -> ClaimsAudit:
    """Audit the paper's printed numbers against a v1 package (what the report's claims table shows).

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A v1 package (``kind = "reconstruction"`` or a v1 study) or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    ClaimsAudit
        ``.to_frame()`` the claims table, ``.n`` the derived claims, ``.headline``.

    Raises
    ------
    ApiError
        The package is not a v1 study (the audit compares the paper's v1 numbers only).

    References
    ----------
    docs/RESULTS_KEYS.md ``claims_audit``; the claims file data/published/claims.yaml.

    Examples
    --------
    >>> import analysis
    >>> analysis.claims_audit("tests/fixtures/handmade")
    Traceback (most recent call last):
    ...
    analysis.api.core.ApiError: the claims audit compares the paper's printed numbers with a v1 package; ...
    """
    from analysis.evidence.describe import evidence_kind

    inputs = analyse(package, params).inputs
    audit = inputs.audit
    if audit is None:
        raise ApiError(
            "the claims audit compares the paper's printed numbers with a v1 package; this package is "
            f"{evidence_kind(inputs.package)!r}: pass a v1 package such as the repository's data/v1")
    return ClaimsAudit(audit)


@dataclass(frozen=True)
class V2Plan:
    """A designed v2 study: variance components, simulated power, required configurations, repeats."""

    detail: Design
    """The computed design (analysis.plan.design.Design: what design.json holds)."""

    @property
    def n(self) -> int:
        """Grid cells simulated."""
        return self.detail.grid.height

    @property
    def estimate(self) -> float | None:
        """The evidence's equal-configuration mean paired effect the plan starts from."""
        return finite(self.detail.observed_effect)

    def to_frame(self) -> pl.DataFrame:
        """The power table: per (configurations, repeats, effect), simulated and closed-form power.

        Examples
        --------
        >>> import analysis
        >>> from analysis.params import DEFAULT_PLAN_PARAMS
        >>> small = DEFAULT_PLAN_PARAMS.replace(configurations=(10, 20), repeats=(2,), effects=(0.1,), sims=50)
        >>> analysis.plan_v2("tests/fixtures/handmade", small).to_frame().select("configurations", "repeats").rows()
        [(10, 2), (20, 2)]
        """
        from analysis.plan.run import power_table

        return power_table(self.detail)


def plan_v2(package: PackageLike, plan: PlanParams | None = None) -> V2Plan:
    """Design a v2 study from a package: power, required configurations, optimal repeats and cost.

    What ``carriers plan --evidence DIR --out OUT`` computes (analysis.plan.run.make_design), without
    writing design.json.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    plan : analysis.params.PlanParams, optional
        Grid, alpha, simulations and seed; default analysis.params.DEFAULT_PLAN_PARAMS.

    Returns
    -------
    V2Plan
        ``.to_frame()`` the power table, ``.detail`` the Design.

    References
    ----------
    docs/PREREGISTRATION.md; Hemming, K. et al. (2011). Sample size calculations for cluster
    randomised controlled trials. BMC Med Res Methodol 11:102.

    Examples
    --------
    >>> import analysis
    >>> from analysis.params import DEFAULT_PLAN_PARAMS
    >>> small = DEFAULT_PLAN_PARAMS.replace(configurations=(10,), repeats=(2,), effects=(0.1,), sims=50)
    >>> analysis.plan_v2("tests/fixtures/handmade", small).to_frame().height
    1
    """
    from analysis.api.core import as_package
    from analysis.params import DEFAULT_PLAN_PARAMS
    from analysis.plan.run import make_design

    return V2Plan(make_design(as_package(package), plan or DEFAULT_PLAN_PARAMS))
