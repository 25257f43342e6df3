"""Shared pieces of the estimators: the population filter, errors, undefined values, JSON.

Methods note: every aggregate reads the one validity rule (`valid` is true) and
needs an outcome (`checks_passed` present), through one filter, `valid_outcome_rows`. Exact recall is
`checks_passed / checks_total`. An undefined statistic is `float('nan')` with a
reason string kept beside it (never 0); `json_ready` turns it into `null`.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.estimators.estimable import no_spread

NAN = float("nan")

ROW_COLUMNS = ("row_id", "scenario", "configuration", "execution_group", "repeat", "arm",
               "valid", "checks_total", "checks_passed")
RUN_COLUMNS = ("configuration", "execution_group", "planned_repeats", "family", "published")
BLOCK = ("configuration", "execution_group", "repeat")

# Reasons for undefined statistics, shared so that every estimator says the same thing.
NO_CONFIGURATIONS = "no configurations in this population"
FEWER_THAN_TWO = "fewer than two units: no spread or leave-one-out is defined"
ZERO_VARIANCE = "zero variance"

OURS_LABEL = "ours, not the paper's"
"""Label of every statistic the paper does not report (model-based and resampling sensitivities)."""


class EstimatorError(ValueError):
    """Input that an estimator cannot use; the message says what to fix."""


class EstimatorInputError(EstimatorError):
    """An argument an estimator cannot use (unknown method, NaN effect, duplicate unit); the message names the fix."""


class MissingColumnError(EstimatorError):
    """A required column is absent from an input DataFrame."""


class InconsistentTotalsError(EstimatorError):
    """`checks_total` varies within one scenario, so recalls are not on one scale."""


class DuplicateOutcomeError(EstimatorError):
    """More than one valid row for one (scenario, configuration, execution_group, repeat, arm)."""


def as_float(value: object) -> float:
    """A numeric scalar that polars or numpy returned (an aggregate, an item) as a float.

    Polars types its aggregates as any Python literal; this narrows to a number and raises
    TypeError for anything else (None included), as ``float()`` would.
    """
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    raise TypeError(f"expected a number, got {value!r}")


def frozen_reasons(reasons: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """A read-only copy of a field -> reason mapping (for frozen result dataclasses)."""
    return MappingProxyType(dict(reasons or {}))


def require_columns(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise MissingColumnError naming every absent column of `frame`."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise MissingColumnError(
            f"{what} lacks column(s) {', '.join(missing)}; load it with "
            "analysis.evidence.load_package or add the columns of docs/EVIDENCE_FORMAT.md")


def valid_outcome_rows(rows: pl.DataFrame, scenario: str | None = None,
                       arms: Sequence[str] | None = None) -> pl.DataFrame:
    """The population filter, the one definition of the rows every aggregate reads: valid rows (``valid``
    true; null counts as false) with an outcome (``checks_passed`` present), of ``scenario`` (all scenarios
    when None) and of ``arms`` (all arms when None), in their order, plus a Float64 ``recall``
    (``recall_expr``). Tables, figures and the audit select their rows through it too."""
    require_columns(rows, ROW_COLUMNS, "rows")
    keep = pl.col("valid").fill_null(False) & pl.col("checks_passed").is_not_null()
    if scenario is not None:
        keep = keep & (pl.col("scenario") == scenario)
    if arms is not None:
        keep = keep & pl.col("arm").is_in(list(arms))
    return rows.filter(keep).with_columns(recall_expr())


def recall_expr() -> pl.Expr:
    """Exact recall of a row: checks_passed / checks_total (null without an outcome)."""
    return (pl.col("checks_passed").cast(pl.Float64) / pl.col("checks_total").cast(pl.Float64)).alias(
        "recall"
    )


def finite_effects(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Configuration effects as a flat float array; EstimatorInputError on NaN or inf."""
    arr = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(arr)):
        raise EstimatorInputError("effects contain NaN or inf; drop undefined configurations before resampling.")
    return arr


def scenario_total(scenario_rows: pl.DataFrame, scenario: str) -> int | None:
    """The one `checks_total` of a scenario's rows (None when there are none)."""
    totals = scenario_rows.get_column("checks_total").unique().drop_nulls()
    if totals.len() == 0:
        return None
    if totals.len() > 1 or int(totals[0]) < 1:
        raise InconsistentTotalsError(
            f"checks_total takes values {sorted(totals.to_list())} in scenario {scenario!r}; "
            "a scenario must grade the same positive number of checks on every row")
    return int(totals[0])


def single_outcomes(frame: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    """Raise DuplicateOutcomeError if `keys` do not identify one row of `frame`."""
    dup = frame.group_by(keys).len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.row(0, named=True)
        raise DuplicateOutcomeError(
            f"{dup.height} key(s) have more than one valid row, e.g. "
            f"{ {k: first[k] for k in keys} }; mark superseded attempts valid=false")
    return frame


def at_least(passed: pl.Expr, total: pl.Expr, threshold: float) -> pl.Expr:
    """Exact `passed / total >= threshold` in integers (threshold read as a decimal)."""
    frac = Fraction(str(threshold))
    return passed * frac.denominator >= total * frac.numerator


def recall_at_least(threshold: float) -> pl.Expr:
    """Exact `checks_passed / checks_total >= threshold` (integer arithmetic, no float slack)."""
    return at_least(pl.col("checks_passed"), pl.col("checks_total"), threshold)


def t_interval(values: np.ndarray, alpha: float) -> tuple[float, float, str | None]:
    """mean +/- t(1 - alpha/2, n - 1) * sd(ddof=1) / sqrt(n); NaNs and a reason when n < 2.

    A thin wrapper: estimability first (fewer than two values, or zero spread: every value equal, which R's
    t.test refuses as constant data, gives NaNs and the reason of analysis.estimators.estimable.no_spread,
    never [mean, mean]), then scipy.stats.t.interval with scale = scipy.stats.sem (ddof = 1).
    """
    n = int(values.size)
    if n < 2:
        return NAN, NAN, FEWER_THAN_TWO if n == 1 else NO_CONFIGURATIONS
    flat = no_spread(values, "values")
    if flat:
        return NAN, NAN, flat
    lo, hi = stats.t.interval(1.0 - alpha, n - 1, loc=float(values.mean()), scale=float(stats.sem(values)))
    return float(lo), float(hi), None


def json_ready(value: Any) -> Any:
    """Convert results to JSON types: NaN/inf -> None, Fraction -> float, numpy -> Python."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating, Fraction)):
        out = float(value)
        return out if math.isfinite(out) else None
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_ready(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, pl.DataFrame):
        return [json_ready(r) for r in value.iter_rows(named=True)]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_ready(v) for v in value]
    raise TypeError(f"json_ready cannot convert {type(value).__name__}; add a conversion")


def json_ready_block(block: Mapping[str, Any]) -> dict[str, Any]:
    """json_ready of a results block: the mapping becomes a dict with string keys."""
    return {str(k): json_ready(v) for k, v in block.items()}


@dataclass(frozen=True, slots=True)
class Contrast:
    """A paired contrast: `treatment` minus `control`, read on `scenario`."""

    control: str
    """Arm code subtracted (the paper's j)."""
    treatment: str
    """Arm code of the treatment (the paper's q)."""
    scenario: str
    """Scenario the contrast is read on (the paper's S5)."""

    def swapped(self) -> Contrast:
        """The same contrast with the arms exchanged."""
        return Contrast(self.treatment, self.control, self.scenario)


def runs_frame(study: Any) -> pl.DataFrame:
    """The study's partition runs with each configuration's family and publication date.

    `study` has the shared `Study` interface (partition_runs, configurations).
    """
    records = []
    for run in study.partition_runs:
        config = study.configurations.get(run.configuration)
        if config is None:
            raise EstimatorError(f"partition run names configuration {run.configuration!r}, "
                                 "which has no [configurations] table in study.toml; add one")
        records.append((run.configuration, run.execution_group, int(run.planned_repeats),
                        config.family, config.published))
    return pl.DataFrame(records, schema={"configuration": pl.String, "execution_group": pl.String,
                                         "planned_repeats": pl.Int64, "family": pl.String,
                                         "published": pl.Date}, orient="row")


def contrast_of(study: Any) -> Contrast:
    """The primary contrast of a study (`[study]` control, treatment, scenario)."""
    return Contrast(study.control, study.treatment, study.scenario)
