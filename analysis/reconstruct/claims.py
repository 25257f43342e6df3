"""Load and validate the paper's claims file (``data/published/claims.yaml``).

Methods note: the file is one YAML mapping with a ``claims:`` list; each claim keeps the
id, printed value, printed precision (``decimals``) and role of the transcription. The
validator collects every problem before raising, so a bad file is fixed in one pass.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from analysis.safeio import SafeIOError, read_text

ROLES = ("primitive", "derived", "design")
STRING_VALUED = ("design.recency_cutoff", "fab.example.fabricated_timestamp", "fab.example.planted_timestamp")
REQUIRED_KEYS = ("id", "section", "what", "value", "decimals", "printed", "role")


class ClaimsError(ValueError):
    """A claims file that cannot be used; the message lists every problem and its fix."""


@dataclass(frozen=True, slots=True)
class Claim:
    """One printed number of the paper."""

    id: str
    """Unique dotted id, stable across versions."""
    section: str
    """Section (and table) the number is printed in."""
    what: str
    """Plain-language statement of the quantity."""
    value: float | int | str | None
    """The printed value (None for an em dash, str for dates and clock times)."""
    decimals: int | None
    """Printed precision: compare with round(x, decimals) == value."""
    printed: str
    """The exact printed token."""
    role: str
    """primitive (fit input), derived (must be computed) or design (protocol constant)."""
    of: int | None = None
    """Denominator of an 'a of b' count."""
    unit: str | None = None
    """fraction, tokens, chars, date or time_utc."""
    config: str | None = None
    """Model id as printed where the claim comes from."""
    arm: str | None = None
    """Arm letter."""
    table: str | None = None
    """Short table key."""
    note: str | None = None
    """Transcriber's note (INCONSISTENT / AMBIGUOUS / TENSION flags in capitals)."""
    external: bool = False
    """A literature figure, never fitted or reproduced."""

    def matches(self, x: float | Fraction) -> bool:
        """True when x rounds to the printed value at printed precision (ties accepted)."""
        if self.value is None or isinstance(self.value, str) or self.decimals is None:
            return False
        return matches_printed(x, self.value, self.decimals)


def matches_printed(x: float | Fraction, value: float | int, decimals: int) -> bool:
    """|x - value| <= half a unit of the last printed decimal, in exact rationals."""
    if isinstance(x, float) and not math.isfinite(x):
        return False
    fx = Fraction(x) if not isinstance(x, Fraction) else x
    half = Fraction(1, 2 * 10**decimals)
    return abs(fx - Fraction(str(value))) <= half


@dataclass(frozen=True, slots=True)
class Claims:
    """The validated claims, in file order."""

    items: tuple[Claim, ...]
    """Every claim, in file order."""
    source: str
    """Path the claims were read from."""
    _index: Mapping[str, Claim] = field(init=False, repr=False, compare=False)
    """Claims keyed by id, built once (the audit looks claims up by id thousands of times)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", MappingProxyType({c.id: c for c in self.items}))

    def __iter__(self) -> Iterator[Claim]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def by_id(self) -> Mapping[str, Claim]:
        """Claims keyed by id."""
        return self._index

    def __getitem__(self, cid: str) -> Claim:
        if cid in self._index:
            return self._index[cid]
        raise KeyError(f"no claim {cid!r} in {self.source}; check the id against the claims file")

    def value(self, cid: str) -> float | int | str | None:
        """The printed value of claim ``cid``."""
        return self[cid].value

    def role_of(self, role: str) -> tuple[Claim, ...]:
        """Claims with the given role."""
        return tuple(c for c in self.items if c.role == role)


def _value_problem(raw: dict[Any, Any], cid: object) -> str | None:
    """What is wrong with a claim's printed value, or None."""
    value = raw.get("value")
    if "value" not in raw:
        return None
    if isinstance(value, bool) or not (value is None or isinstance(value, (int, float, str))):
        return f"value {value!r} is not a number; write the printed number (null for an em dash)"
    if isinstance(value, str) and cid not in STRING_VALUED:
        return (f"value {value!r} is not numeric; write it as a YAML number "
                "(drop '+', '%' and thousands separators) or add the id to STRING_VALUED "
                "if it is a date/time")
    if isinstance(value, float) and not math.isfinite(value):
        return f"value {value!r} is not finite; write the printed number"
    return None


def _decimals_problem(raw: dict[Any, Any], cid: object) -> str | None:
    """What is wrong with a claim's decimals given its value, or None."""
    value, dec = raw.get("value"), raw.get("decimals")
    if "decimals" not in raw:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(dec, bool) or not isinstance(dec, int) or dec < 0:
            return f"decimals {dec!r} must be a non-negative integer for a numeric value"
        if isinstance(value, float) and round(value, dec) != value:
            return f"value {value!r} has more decimals than decimals={dec}; fix one of them"
    elif dec is not None and (value is None or cid in STRING_VALUED):
        return f"decimals must be null when value is {value!r}"
    return None


def _problems(i: int, raw: object) -> list[str]:
    where = f"claim #{i + 1}"
    if not isinstance(raw, dict):
        return [f"{where}: is a {type(raw).__name__}, expected a mapping; write it as 'key: value' lines"]
    probs = []
    cid = raw.get("id")
    if isinstance(cid, str):
        where = f"claim #{i + 1} ({cid})"
    for k in REQUIRED_KEYS:
        if k not in raw:
            probs.append(f"{where}: missing key {k!r}; add it (see paper/CLAIMS.md for the format)")
    if "id" in raw and (not isinstance(cid, str) or not cid.strip()):
        probs.append(f"{where}: id must be a non-empty string")
    role = raw.get("role")
    if "role" in raw and role not in ROLES:
        probs.append(f"{where}: unknown role {role!r}; use one of {', '.join(ROLES)}")
    probs += [f"{where}: {why}" for why in (_value_problem(raw, cid), _decimals_problem(raw, cid)) if why]
    of = raw.get("of")
    if of is not None and (isinstance(of, bool) or not isinstance(of, int)):
        probs.append(f"{where}: 'of' {of!r} must be an integer denominator")
    return probs


def parse_claims(text: str, source: str = "<string>") -> Claims:
    """Parse and validate claims YAML text; raises ClaimsError listing every problem."""
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present: 5x faster
    except yaml.YAMLError as e:
        raise ClaimsError(f"{source}: not valid YAML ({e}); fix the syntax at the reported line") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise ClaimsError(f"{source}: expected one top-level key 'claims:' holding a list of claims")
    problems: list[str] = []
    seen: dict[str, int] = {}
    items = []
    for i, raw in enumerate(doc["claims"]):
        p = _problems(i, raw)
        problems += p
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            cid = raw["id"]
            if cid in seen:
                problems.append(f"claim #{i + 1}: duplicate id {cid!r} (first at claim #{seen[cid] + 1}); "
                                f"give each claim a unique id")
            else:
                seen[cid] = i
        if not p and isinstance(raw, dict):
            fields: dict[str, Any] = {k: raw.get(k) for k in Claim.__slots__ if k in raw}
            fields["external"] = bool(raw.get("external", False))
            items.append(Claim(**fields))
    if problems:
        raise ClaimsError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return Claims(items=tuple(items), source=source)


def load_claims(path: str | Path) -> Claims:
    """Read and validate a claims file."""
    p = Path(path)
    if not p.is_file():
        raise ClaimsError(f"{p}: no such claims file; pass the path of data/published/claims.yaml")
    try:
        text = read_text(p)
    except SafeIOError as exc:
        raise ClaimsError(f"{exc}; pass the path of data/published/claims.yaml") from None
    return parse_claims(text, source=str(p))
