"""Recall of each arm with its Clopper–Pearson interval (ours, not the paper's).

Methods note. The rows are the valid rows of the study's primary scenario that have an outcome
(analysis.estimators.common.valid_outcome_rows), grouped by arm; arms are the study's declared arms in their
order (else the arms present, sorted). An arm's recall is its pooled check recall, passed checks over graded
checks (the sums of ``checks_passed`` and ``checks_total`` over its rows): a row with more checks weighs more,
unlike the configuration means of the panel.

The interval is Clopper–Pearson's exact binomial interval at the analysis alpha
(``scipy.stats.binomtest(x, n).proportion_ci(method="exact")``; R's ``binom.test``): the Beta quantiles
B(alpha/2; x, n - x + 1) and B(1 - alpha/2; x + 1, n - x), with 0 when no check passed and 1 when all did.
It treats an arm's checks as independent trials. Checks of one row are correlated (the ``dependence`` block's
ICC), so the interval is narrower than a row-clustered one would be: it describes the checks of these rows,
not a population of rows or models. An arm without a graded check has no recall and says why.

Engine: scipy, which the build imports anyway; statsmodels' ``proportion_confint(method="beta")`` computes the
same interval but its import pulls in pandas (+0.8 s of a ~5 s build, measured with ``python -X importtime``).

Registration: ARM_RECALL_REGISTRATION (below) is the results.json block ``arm_recall``; analysis/results/
registry.py lists it (docs/ADDING_A_STATISTIC.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl
from scipy.stats import binomtest

from analysis.estimators.common import OURS_LABEL, valid_outcome_rows
from analysis.estimators.registration import Block, Estimates, ResultsBlock

METHOD = "Clopper–Pearson exact binomial interval over the arm's graded checks"
"""How the interval is computed, in words (results.json ``method``)."""
NO_CHECKS = "no valid row of this arm has a graded check"


@dataclass(frozen=True, slots=True)
class ArmRecall:
    """One arm's pooled check recall and its interval."""

    arm: str
    """The arm."""
    rows: int
    """Valid rows of the arm with an outcome."""
    passed: int
    """Graded checks passed (sum of ``checks_passed``)."""
    checks: int
    """Graded checks (sum of ``checks_total``)."""
    recall: float | None
    """passed / checks (None without a check: see ``reason``)."""
    lo: float | None
    """Lower Clopper–Pearson bound."""
    hi: float | None
    """Upper Clopper–Pearson bound."""
    reason: str | None
    """Why the recall is not estimable, else None."""


@dataclass(frozen=True, slots=True)
class ArmRecallIntervals:
    """Recall of every arm of the primary scenario with Clopper–Pearson intervals (ours)."""

    label: str
    """``ours, not the paper's``."""
    scenario: str
    """The scenario whose rows are counted."""
    nominal: float
    """Confidence 1 - alpha of each interval."""
    method: str
    """:data:`METHOD`."""
    arms: tuple[ArmRecall, ...]
    """One entry per arm, in the study's arm order."""


def arm_recall(rows: pl.DataFrame, scenario: str, arms: Sequence[str] | None, alpha: float) -> ArmRecallIntervals:
    """Pooled check recall of each arm on ``scenario`` with its Clopper–Pearson interval at 1 - ``alpha``
    (module note); ``arms`` None: every arm present, sorted."""
    valid = valid_outcome_rows(rows, scenario, arms)
    sums = {str(r["arm"]): r for r in valid.group_by("arm").agg(
        pl.len().alias("rows"), pl.col("checks_passed").sum().alias("passed"),
        pl.col("checks_total").sum().alias("checks")).iter_rows(named=True)}
    out = []
    for arm in (list(arms) if arms is not None else sorted(sums)):
        r = sums.get(arm, {"rows": 0, "passed": 0, "checks": 0})
        n_rows, passed, checks = int(r["rows"]), int(r["passed"] or 0), int(r["checks"] or 0)
        if checks == 0:
            out.append(ArmRecall(arm, n_rows, passed, 0, None, None, None, NO_CHECKS))
            continue
        lo, hi = binomtest(passed, checks).proportion_ci(confidence_level=1.0 - alpha, method="exact")
        out.append(ArmRecall(arm, n_rows, passed, checks, passed / checks, float(lo), float(hi), None))
    return ArmRecallIntervals(OURS_LABEL, scenario, 1.0 - alpha, METHOD, tuple(out))


def arm_recall_block(e: Estimates) -> Block:
    """results.json ``arm_recall``: :func:`arm_recall` of the package's rows on the study's primary scenario,
    its declared arms, at the analysis alpha."""
    return Block(arm_recall(e.package.rows, e.study.scenario, e.study.arms, e.params.alpha))


ARM_RECALL_REGISTRATION = ResultsBlock(
    "arm_recall", arm_recall_block,
    "{label, scenario, nominal, method, arms: [{arm, rows, passed, checks, recall, lo, hi, reason}]}",
    "Pooled check recall of each arm on the primary scenario (passed over graded checks of its valid rows) with "
    "its Clopper–Pearson exact binomial interval at the analysis alpha; the interval treats an arm's checks as "
    "independent, so it is narrower than a row-clustered one; null recall with `reason` for an arm without a "
    "graded check (ours)")
"""The results.json block of this statistic (collected by analysis/results/registry.py)."""
