"""One call per statistic of the paper, each returning a typed result with ``.to_frame()`` (polars).

Every function reads the estimate the build computes (the cached estimators of
analysis.results.inputs.ResultsInputs, through :func:`analysis.api.core.analyse`), so a number
here is the number of results.json and the report; nothing is re-estimated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import polars as pl

from analysis.api.core import ApiError, PackageLike, analyse
from analysis.params import DEFAULT_PARAMS, Params

if TYPE_CHECKING:
    from analysis.estimators.bounds import PlannedRepeatBounds
    from analysis.estimators.dependence import WithinRowDependence
    from analysis.estimators.exact import McNemarResult
    from analysis.estimators.families import FamilyWeighted
    from analysis.estimators.headings import HeadingsAnalysis
    from analysis.estimators.paired import Panel
    from analysis.estimators.secondary import FillResult
    from analysis.estimators.survival_results import PackageSurvival

T = TypeVar("T")

FRAME_COLUMNS = ("statistic", "estimate", "ci_low", "ci_high", "n", "interval", "p_value", "reason")
"""The leading columns of every :meth:`Estimate.to_frame`, in this order; ``extra`` follows."""


def finite(x: Any) -> float | None:
    """A finite float, else None (results.json writes an undefined statistic as null)."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


@dataclass(frozen=True)
class Estimate(Generic[T]):
    """One statistic of one package: the estimate, its interval, n, and the estimator's own result."""

    statistic: str
    """What is estimated (e.g. ``panel mean effect``)."""
    estimate: float | None
    """The point estimate; None when the data cannot support it (``reason`` says why)."""
    ci_low: float | None
    """Lower end of the interval (``interval`` says which); None when there is none."""
    ci_high: float | None
    """Upper end of the interval."""
    n: int
    """The units the estimate is over (configurations, families, rows or pairs: ``statistic`` says)."""
    interval: str
    """What the interval is (e.g. the t interval over configuration effects), or why there is none."""
    detail: T
    """The estimator's own frozen result (every field documented in analysis.estimators)."""
    p_value: float | None = None
    """A p-value where the statistic is a test (McNemar), else None."""
    reason: str | None = None
    """Why the estimate is None, else None."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Further named numbers of the statistic (e.g. the design effect beside the ICC)."""

    def to_frame(self) -> pl.DataFrame:
        """One row: statistic, estimate, ci_low, ci_high, n, interval, p_value, reason, then ``extra``.

        Examples
        --------
        >>> import analysis
        >>> analysis.paired_effect("tests/fixtures/handmade").to_frame().columns[:5]
        ['statistic', 'estimate', 'ci_low', 'ci_high', 'n']
        """
        row = {"statistic": self.statistic, "estimate": self.estimate, "ci_low": self.ci_low,
               "ci_high": self.ci_high, "n": self.n, "interval": self.interval, "p_value": self.p_value,
               "reason": self.reason, **dict(self.extra)}
        schema = {"statistic": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                  "n": pl.Int64, "interval": pl.String, "p_value": pl.Float64, "reason": pl.String}
        return pl.DataFrame([row], schema_overrides=schema)


def _reason(reasons: Mapping[str, str], *names: str) -> str | None:
    return next((reasons[n] for n in names if n in reasons), None)


def paired_effect(package: PackageLike, params: Params | None = None) -> Estimate[Panel]:
    """The paper's primary estimate: the equal-configuration mean paired effect, treatment minus control.

    Each panel configuration's effect is its mean treatment-minus-control recall over complete repeat
    pairs; the estimate is their unweighted mean, with the t interval mean -/+ t(1 - alpha/2, n - 1)
    sd / sqrt(n) over configurations (results.json ``panel``).

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package from :func:`analysis.load`, or its directory.
    params : analysis.params.Params, optional
        Tunables (alpha, min_pairs, ...); default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the panel mean, ``ci_low``/``ci_high`` the t interval, ``n`` the configurations;
        ``detail`` the analysis.estimators.paired.Panel (every configuration's effect).

    References
    ----------
    The paper, section 4 (the paired panel); docs/RESULTS_CONTRACT.md ``panel``.

    Examples
    --------
    >>> import analysis
    >>> e = analysis.paired_effect("tests/fixtures/handmade")
    >>> e.estimate, e.n
    (0.25, 3)
    >>> e.to_frame().select("estimate", "ci_low", "ci_high").row(0)
    (0.25, -1.393102651932107, 1.893102651932107)
    """
    p = analyse(package, params).inputs.estimates.panel
    s = p.summary
    level = 1 - (params or DEFAULT_PARAMS).alpha
    return Estimate("panel mean effect (treatment - control)", finite(s.mean), finite(s.dispersion_lo),
                    finite(s.dispersion_hi), s.configurations,
                    f"{level:.0%} t interval over configuration effects", p,
                    reason=_reason(s.reasons, "mean", "dispersion_lo"),
                    extra={"median": finite(s.median), "positive": s.positive, "negative": s.negative,
                           "zero": s.zero})


def repeat_bounds(package: PackageLike, params: Params | None = None) -> Estimate[PlannedRepeatBounds]:
    """Bounds of the panel mean effect with every missing planned outcome set to 0 or 1 (worst and best case).

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the observed panel mean, ``ci_low``/``ci_high`` the bounds (not a confidence
        interval), ``n`` the configurations bounded; ``detail`` the PlannedRepeatBounds.

    References
    ----------
    Manski, C. F. (1990). Nonparametric bounds on treatment effects. American Economic Review 80(2);
    docs/RESULTS_CONTRACT.md ``bounds``.

    Examples
    --------
    >>> import analysis
    >>> b = analysis.repeat_bounds("tests/fixtures/handmade")
    >>> b.ci_low, round(b.ci_high, 4)
    (0.0, 0.4444)
    """
    est = analyse(package, params).inputs.estimates
    b = est.bounds
    return Estimate("panel mean effect, planned-repeat bounds", finite(est.panel.summary.mean),
                    finite(b.lo), finite(b.hi), b.configurations,
                    "bounds over missing outcomes in [0, 1] (not a confidence interval)",
                    b, reason=_reason(b.reasons, "lo", "hi"),
                    extra={"planned_repeats": b.planned_repeats, "missing_control": b.missing_control,
                           "missing_treatment": b.missing_treatment})


def within_row_icc(package: PackageLike, params: Params | None = None) -> Estimate[WithinRowDependence]:
    """ICC(1) of a row's binary checks (rows as groups), with the design effect 1 + (k - 1) ICC.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the ICC, no interval, ``n`` the rows; ``extra`` the design effect, the checks
        per row and the effective observations per row; ``detail`` the WithinRowDependence.

    References
    ----------
    Shrout, P. E. and Fleiss, J. L. (1979). Intraclass correlations. Psychological Bulletin 86(2);
    Kish, L. (1965). Survey Sampling (the design effect); docs/RESULTS_CONTRACT.md ``dependence``.

    Examples
    --------
    >>> import analysis
    >>> icc = analysis.within_row_icc("tests/fixtures/handmade")
    >>> round(icc.estimate, 4), round(icc.extra["design_effect"], 4), icc.n
    (0.7009, 10.1111, 16)
    """
    d = analyse(package, params).inputs.estimates.dependence
    return Estimate("ICC(1) of the checks within a row", finite(d.icc), None, None, d.rows,
                    "none (a point estimate)", d, reason=_reason(d.reasons, "icc"),
                    extra={"design_effect": finite(d.design_effect), "checks_per_row": d.checks_per_row,
                           "effective_per_row": finite(d.effective_per_row)})


def mcnemar(package: PackageLike, params: Params | None = None, *, threshold: str = "partial"
            ) -> Estimate[McNemarResult]:
    """Exact paired McNemar test of control against treatment over the panel's repeat blocks.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables (the thresholds); default the paper's.
    threshold : {"partial", "full"}
        Success is recall >= Params.threshold_partial, or full recall.

    Returns
    -------
    Estimate
        ``estimate`` (c - b) / pairs over complete blocks (the treatment's share of lone successes
        minus the control's), ``p_value`` the two-sided exact p, ``n`` the complete blocks;
        ``detail`` the McNemarResult (the missing-outcome variants too).

    Raises
    ------
    ApiError
        ``threshold`` is neither "partial" nor "full".

    References
    ----------
    McNemar, Q. (1947). Psychometrika 12(2); docs/RESULTS_KEYS.md ``mcnemar``.

    Examples
    --------
    >>> import analysis
    >>> m = analysis.mcnemar("tests/fixtures/handmade")
    >>> m.n, m.extra["b"], m.extra["c"]
    (6, 1, 2)
    """
    from analysis.results.core import mcnemar_block

    if threshold not in ("partial", "full"):
        raise ApiError(f"threshold {threshold!r} is not known; pass threshold='partial' or threshold='full'")
    result: McNemarResult = mcnemar_block(analyse(package, params).inputs.estimates).value[threshold]
    c = result.complete
    share = (c.c - c.b) / c.pairs if c.pairs else None
    return Estimate(f"McNemar {result.first} vs {result.second} at recall >= {result.threshold:g}", share,
                    None, None, c.pairs, "none (an exact test)", result, p_value=finite(c.p_value),
                    reason=c.reason if share is None or c.reason else None,
                    extra={"b": c.b, "c": c.c, "mid_p": finite(c.mid_p)})


def family_weighted(package: PackageLike, params: Params | None = None) -> Estimate[FamilyWeighted]:
    """The mean of family means: each model family weighs the same, whatever its configurations.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the family-weighted mean, the t interval over family means, ``n`` the families;
        ``extra`` the leave-one-family-out range.

    References
    ----------
    docs/RESULTS_CONTRACT.md ``families``.

    Examples
    --------
    >>> import analysis
    >>> f = analysis.family_weighted("tests/fixtures/handmade")
    >>> f.estimate, f.n, f.extra["lofo_min"], f.extra["lofo_max"]
    (0.375, 2, 0.0, 0.75)
    """
    f = analyse(package, params).inputs.estimates.families
    return Estimate("family-weighted mean effect", finite(f.mean), finite(f.dispersion_lo), finite(f.dispersion_hi),
                    f.families, "t interval over family means", f, reason=_reason(f.reasons, "mean"),
                    extra={"lofo_min": finite(f.lofo_min), "lofo_max": finite(f.lofo_max)})


def heading_slopes(package: PackageLike, params: Params | None = None) -> Estimate[HeadingsAnalysis]:
    """Recall per additional heading carried, within (configuration, arm, execution group) cells.

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the within-cell slope, ``n`` the rows of informative cells; ``extra`` the
        residual r, the informative cells and the pooled r; ``detail`` the HeadingsAnalysis.

    References
    ----------
    The paper, section 4.8; docs/RESULTS_CONTRACT.md ``headings``.

    Examples
    --------
    >>> import analysis
    >>> h = analysis.heading_slopes("tests/fixtures/handmade")
    >>> round(h.estimate, 4), h.n, h.extra["cells"]
    (0.1667, 7, 3)
    """
    h = analyse(package, params).inputs.estimates.headings
    w = h.within_all
    return Estimate("within-cell slope of recall on headings carried", finite(w.slope), None, None, w.rows,
                    "none (a point estimate)", h, reason=w.reason if finite(w.slope) is None else None,
                    extra={"r": finite(w.r), "cells": w.cells, "pooled_r": finite(h.pooled.r)})


def fill(package: PackageLike, params: Params | None = None) -> Estimate[FillResult]:
    """Pearson's r of the control arm's fill against the paired effect over the panel (exploratory).

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` Pearson's r, ``n`` the configurations with a fill; ``extra`` Spearman's rho;
        ``detail`` the FillResult (rescue classification, sweep, gains).

    References
    ----------
    The paper, section 4.6; docs/RESULTS_KEYS.md ``fill``.

    Examples
    --------
    >>> import analysis
    >>> f = analysis.fill("tests/fixtures/handmade")
    >>> round(f.estimate, 4), f.n
    (-0.4911, 3)
    """
    r = analyse(package, params).inputs.estimates.fill
    c = r.analysis.all
    return Estimate("Pearson r of fill and paired effect", finite(c.pearson), None, None, c.n,
                    "none (exploratory)", r, reason=c.reason, extra={"spearman": finite(c.spearman)})


def survival(package: PackageLike, params: Params | None = None) -> Estimate[PackageSurvival]:
    """Fact survival: treatment minus control in graded values surviving per row (needs folds.jsonl).

    Parameters
    ----------
    package : EvidencePackage or str or os.PathLike
        A package or its directory.
    params : analysis.params.Params, optional
        Tunables; default the paper's.

    Returns
    -------
    Estimate
        ``estimate`` the equal-configuration mean difference as a share of the row's values, ``n``
        the panel configurations compared; ``detail`` the PackageSurvival (Kaplan-Meier curves);
        a package without folds gives ``estimate`` None and the reason.

    References
    ----------
    Kaplan, E. L. and Meier, P. (1958). JASA 53(282); docs/RESULTS_KEYS.md ``fact_survival``.

    Examples
    --------
    >>> import analysis
    >>> s = analysis.survival("tests/fixtures/handmade")
    >>> s.estimate is None, s.reason
    (True, 'not in this evidence: the package has no folds.jsonl')
    """
    s = analyse(package, params).inputs.estimates.survival
    if s.survival is None:
        return Estimate("fact survival (treatment - control, share of values)", None, None, None, 0,
                        "none", s, reason="; ".join(s.reasons.values()) or "no fact timeline")
    paired = s.survival.paired["survived"]
    return Estimate("fact survival (treatment - control, share of values)", finite(paired.mean_share), None, None,
                    paired.configurations, "none (a point estimate)", s, reason=paired.reason,
                    extra={"pairs": paired.pairs, "rows": s.survival.rows})
