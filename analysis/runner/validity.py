"""The single validity rule.

Methods note (paper Section 3.3). One function decides whether a row may
enter any aggregate, and every aggregate reads its verdict (the ``valid``
column of rows.csv; :func:`valid_rows` is the one filter). Two causes make a
row invalid:

* ``infrastructure``: the trajectory did not complete because of the serving
  stack (connection reset, timeout, 5xx, 429, truncated body, a call served
  outside the provider pin). Retryable: a retry is a new row; the failed
  attempt stays in the package as an invalid row without an outcome.
* ``catchup``: on a distributed-facts scenario a fold was lost and its chunk
  was folded together with the next one, so the row answers a different
  question. Not retryable (it follows from the arm's own replies), and the row
  keeps its outcome.

Arm behaviour never invalidates and is never retried: parse failures,
refusals, empty answers, length-cut replies and clipping stay in the data,
because retrying them would select for the arm succeeding.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["ARM_BEHAVIOURS", "CATCHUP", "INFRASTRUCTURE", "RowValidity", "judge", "valid_rows"]

INFRASTRUCTURE = "infrastructure"
CATCHUP = "catchup"
#: Behaviours recorded in the data that never affect validity.
ARM_BEHAVIOURS: tuple[str, ...] = ("parse_failure", "refusal", "empty_answer", "finish_length", "clipped")


@dataclass(frozen=True, slots=True)
class RowValidity:
    """The validity verdict of one trajectory."""

    valid: bool
    """Whether the row may enter aggregates."""
    reason: str | None
    """``None`` when valid, else ``infrastructure`` or ``catchup``."""
    retryable: bool
    """Whether the runner may retry the slot (infrastructure only)."""
    has_outcome: bool
    """Whether the row has graded checks (``checks_passed`` not empty)."""


def judge(*, infrastructure_fault: str | None, catchup_folds: int, distributed: bool) -> RowValidity:
    """The one validity rule (see module note); arm behaviour is deliberately not an input."""
    if infrastructure_fault is not None:
        return RowValidity(valid=False, reason=INFRASTRUCTURE, retryable=True, has_outcome=False)
    if catchup_folds > 0 and distributed:
        return RowValidity(valid=False, reason=CATCHUP, retryable=False, has_outcome=True)
    return RowValidity(valid=True, reason=None, retryable=False, has_outcome=True)


def valid_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """Rows that enter aggregates: exactly those whose recorded verdict is valid."""
    return rows.filter(pl.col("valid"))
