"""Estimability: the one rule by which every estimator says that an interval, test or variance is not
estimable on the data it was given, and why.

Methods note. A statistic is *not estimable* when it is undefined on the data, or when its variance is
identically 0 there, so that the "interval" would have zero width by construction rather than because the
data are precise: R refuses in each case (``t.test``: "data are essentially constant"; ``survfit(cluster=)``
gives NA at S = 0 or 1; ``wilcox.test``: "all observations are zero or tied"), and so does this package.
The estimator then returns its bound or p-value as None/NaN with a reason a reader understands, made by
one of the functions below so that every output says the same thing; the outputs print
``not estimable: <reason>`` (:func:`not_estimable`) in its place, never a number, a dash or [x, x].

The cases: fewer than two units (:func:`too_few`), no spread (:func:`no_spread`), no discordant pair
(:func:`no_discordant_pairs`), a probability on its boundary under a cluster-robust variance, or fewer
than two clusters (:func:`cluster_boundary`).

Who applies it: every t interval (analysis.estimators.common.t_interval: the panel's and the families'
dispersion intervals, the load ladder's per-rung interval), the configuration bootstrap, the sign flip and
the Hodges–Lehmann interval (fewer than two configurations, no spread), the McNemar counts and the
pairing ranges (no discordant pair), and the Kaplan–Meier intervals (analysis.estimators.survival:
S = 0 or 1, one row). The tables print :func:`not_estimable` in the cell, the report says the reason in
its sentence, and tests/test_report_not_estimable.py checks reports of bad input for a dash or [x, x].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NOT_ESTIMABLE = "not estimable"
"""The words every output prints in place of a statistic that is not estimable."""


def not_estimable(reason: str | None) -> str:
    """``not estimable: <reason>`` (the phrase a table cell or sentence prints in place of the number)."""
    return f"{NOT_ESTIMABLE}: {reason}" if reason else NOT_ESTIMABLE


def _units(n: int, unit: str, units: str | None) -> str:
    return f"{n} {unit if n == 1 else (units or unit + 's')}"


def too_few(n: int, unit: str, units: str | None = None, need: int = 2) -> str | None:
    """Why a statistic that needs ``need`` or more ``unit``s is not estimable from ``n`` (None: enough)."""
    if n >= need:
        return None
    have = f"no {units or unit + 's'}" if n == 0 else _units(n, unit, units)
    return f"{have}: it needs at least {_units(need, unit, units)}"


def no_spread(values: Sequence[float] | np.ndarray, what: str = "differences") -> str | None:
    """Why a t-style interval over ``values`` is not estimable when they are all equal (None: they vary).

    Two or more equal values have standard deviation 0, so mean +/- t * sd / sqrt(n) has zero width;
    R's ``t.test`` refuses such data ("data are essentially constant")."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 2 or not np.all(arr == arr[0]):
        return None
    return (f"all {arr.size} {what} are equal ({float(arr[0]):+.3f}), so they have no spread to make an "
            "interval from")


def no_discordant_pairs(b: int, c: int) -> str | None:
    """Why an exact McNemar test is not estimable without a discordant pair (None: there is one)."""
    if b + c > 0:
        return None
    return "no discordant pair: every pair succeeds under both arms or under neither, so there is nothing to test"


def cluster_boundary(survival: float, clusters: int, unit: str = "row") -> str | None:
    """Why a cluster-robust interval of a probability is not estimable: fewer than two clusters, or the
    probability at 0 or 1, where the cluster-robust variance is identically 0 (R ``survfit(cluster=)``
    gives NA). None: estimable."""
    few = too_few(clusters, unit)
    if few:
        return few
    if survival <= 0.0 or survival >= 1.0:
        which = "every value still at risk has been lost" if survival <= 0.0 else "no value has been lost"
        return (f"S = {survival:g}: {which}, so the variance with {unit}s as clusters is 0 and gives no interval")
    return None


def zero_width(lo: float | None, hi: float | None, n: int, unit: str = "unit") -> str | None:
    """Why an interval [lo, hi] with lo == hi is not estimable (None: it has width, or is absent)."""
    if lo is None or hi is None or lo != hi:
        return None
    return f"every one of the {_units(n, unit, None)} gives the same value, so the interval has no width"
