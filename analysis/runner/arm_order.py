"""Arm order inside each repeat block.

Methods note: the paper (section 3.3) interleaved arms on a rotating Latin square, which balances
execution *position* but not first-order carryover (each arm keeps the same predecessor).  The
default here is a Williams design (Williams 1949): for an even number of arms one square whose
first row is 0, 1, n-1, 2, n-2, ... and whose other rows add 1, 2, ... modulo n; every ordered pair
of distinct arms is adjacent exactly once.  For an odd number of arms one square cannot do that, so
the design is the two-square construction: the same square plus its rows reversed, after which
every ordered pair is adjacent exactly twice over 2n rows.  Repeat r (1-based) uses row
(r - 1) mod (rows); a design whose repeat count is not a multiple of the row count does not close,
and `closes` says so, so it can be disclosed as the paper does for its rotation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DESIGNS = ("williams", "latin")


class DesignError(ValueError):
    """An arm-order design was asked for something it cannot build."""


@dataclass(frozen=True, slots=True)
class ArmOrder:
    """The planned execution order of the arms for every repeat of one sweep."""

    design: str
    """Design name: `williams` or `latin`."""
    arms: tuple[str, ...]
    """The arm codes in the order given by the user (row 0 of a Latin square)."""
    rows: tuple[tuple[str, ...], ...]
    """The design's distinct sequences; repeat r uses rows[(r - 1) % len(rows)]."""
    repeats: int
    """Planned repeats per (configuration, execution group)."""

    def sequence(self, repeat: int) -> tuple[str, ...]:
        """Arm codes in execution order for a 1-based repeat."""
        if repeat < 1 or repeat > self.repeats:
            raise DesignError(f"repeat {repeat} is outside 1..{self.repeats}; ask for a planned repeat")
        return self.rows[(repeat - 1) % len(self.rows)]

    def position(self, repeat: int, arm: str) -> int:
        """1-based execution position of `arm` inside its repeat block."""
        return self.sequence(repeat).index(arm) + 1

    @property
    def closes(self) -> bool:
        """True when every design row is used equally often (the balance property holds exactly)."""
        return self.repeats % len(self.rows) == 0


def _check_arms(arms: Sequence[str]) -> tuple[str, ...]:
    codes = tuple(arms)
    if not codes:
        raise DesignError("no arms given; pass at least one arm code, e.g. --arms j,q,m")
    if len(set(codes)) != len(codes):
        raise DesignError(f"arm codes repeat in {list(codes)}; list each arm once")
    return codes


def williams_rows(arms: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """Williams sequences: n rows for even n, 2n rows (square + mirror) for odd n."""
    codes = _check_arms(arms)
    n = len(codes)
    first: list[int] = [0]
    lo, hi = 1, n - 1
    take_lo = True
    while len(first) < n:
        if take_lo:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
        take_lo = not take_lo
    square = [tuple(codes[(k + i) % n] for k in first) for i in range(n)]
    if n % 2 == 1 and n > 1:
        square = square + [tuple(reversed(row)) for row in square]
    return tuple(square)


def latin_rows(arms: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The paper's rotating Latin square: row i is the arm list rotated left by i."""
    codes = _check_arms(arms)
    n = len(codes)
    return tuple(tuple(codes[(i + k) % n] for k in range(n)) for i in range(n))


def arm_order(arms: Sequence[str], repeats: int, design: str = "williams") -> ArmOrder:
    """Build the arm order for `repeats` repeat blocks with the named design."""
    if repeats < 1:
        raise DesignError(f"repeats must be >= 1, got {repeats}; pass --repeats 4 or more for a paired contrast")
    if design == "williams":
        rows = williams_rows(arms)
    elif design == "latin":
        rows = latin_rows(arms)
    else:
        raise DesignError(f"unknown design {design!r}; choose one of {', '.join(DESIGNS)}")
    return ArmOrder(design=design, arms=tuple(arms), rows=rows, repeats=repeats)
