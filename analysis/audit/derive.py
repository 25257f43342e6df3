"""Status of one claim, derived from the reconstruction's rule declarations (never typed per claim).

Methods note. Inputs: the claim, what the audit recomputed (a value, or why none), the rules behind
the recomputation (ids into ``analysis.reconstruct.rules``), the printed cells the recomputation
combines by hand arithmetic (``of``, empty for an estimator computation), alternative readings tried
when the primary recomputation misses, and a consistency verdict over printed cells only. Order:

1. nothing recomputed -> ``not determinable`` (never used when a recomputed value exists);
2. the printed value matched:
   - a rule behind it was fitted to it -> ``fitted``;
   - a rule behind it reads it, builds it, or reads a cell transcribed from it -> ``holds by construction``;
   - ``of`` is non-empty and every cell in it is read or built by a rule behind it -> ``arithmetic identity``;
   - otherwise -> ``reproduced`` (its value depends only on inputs independent of it);
3. missed: an alternative reading matches -> ``reachable under a choice`` (the note names it);
   no reading of the printed cells reaches it (a consistency check listed every reading) -> ``inconsistent``;
   otherwise -> ``mismatch`` (the reconstruction misses the printed number; the note explains).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.reconstruct.rules import ResolvedRule

REPRODUCED = "reproduced"
CONSTRUCTION = "holds by construction"
IDENTITY = "arithmetic identity"
FITTED = "fitted"
CHOICE = "reachable under a choice"
INCONSISTENT = "inconsistent"
MISMATCH = "mismatch"
NOT_DETERMINABLE = "not determinable"

STATUSES = (REPRODUCED, CONSTRUCTION, IDENTITY, FITTED, CHOICE, INCONSISTENT, MISMATCH, NOT_DETERMINABLE)

LEGEND: dict[str, str] = {
    REPRODUCED: "reproduced by independent computation: the estimators compute the printed value from the "
                "reconstruction, and no rule behind it read, built or was fitted to it",
    CONSTRUCTION: "holds by construction: a rule behind it used the claim itself (or a number transcribed from "
                  "it) or places exactly the printed count, so the check cannot fail",
    IDENTITY: "arithmetic identity of printed cells: a sum, difference, ratio, count or extreme of printed cells "
              "the reconstruction places; it checks the paper's arithmetic, not our estimators",
    FITTED: "fitted: a rule was tuned by a search until this derived number came out as printed",
    CHOICE: "reachable only under a stated computational choice (a tie-breaking order, a weighting, a row count, "
            "per-row rounding); the note names the choice and what the default reading gives",
    INCONSISTENT: "inconsistent under every reading tried: no data produce the printed value; the note lists "
                  "the readings",
    MISMATCH: "mismatch: the reconstruction misses the printed number; the note says why",
    NOT_DETERMINABLE: "not determinable: nothing printed decides it and nothing was recomputed (never used where "
                      "a recomputed value differs)",
}


@dataclass(frozen=True, slots=True)
class Reading:
    """One way of computing a claim (the primary reading or an alternative)."""

    name: str
    """The computational choice, in words."""
    matches: bool
    """True when this reading gives the printed value."""
    detail: str = ""
    """What it gives."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A derived status, its note and the rules behind it."""

    status: str
    """One of STATUSES."""
    note: str
    """Why (generated from the declarations, plus any explanation supplied)."""
    rules: tuple[str, ...]
    """Rule ids behind the recomputation."""


def derive(cid: str, *, recomputed: bool, matched: bool, rules_behind: Sequence[str],
           rules: Mapping[str, ResolvedRule], of: Sequence[str] = (), readings: Sequence[Reading] = (),
           printed_inconsistent: str = "", explanation: str = "") -> Verdict:
    """The status of claim `cid` (module note)."""
    behind = tuple(rules_behind)
    unknown = [r for r in behind if r not in rules]
    if unknown:
        raise KeyError(f"claim {cid}: rule(s) {', '.join(unknown)} are not declared in analysis/reconstruct/rules.py")
    rs = [rules[r] for r in behind]
    tail = f" {explanation}" if explanation else ""
    if not recomputed:
        return Verdict(NOT_DETERMINABLE, (explanation or "nothing printed decides it and nothing is recomputed"),
                       behind)
    if matched:
        fit = [r.id for r in rs if cid in r.fitted]
        if fit:
            return Verdict(FITTED, f"FITTED: rule {', '.join(fit)} was tuned until it prints as published.{tail}",
                           behind)
        used = [r.id for r in rs if cid in r.reads]
        built = [r.id for r in rs if cid in r.builds]
        if used or built:
            how = (f"rule {', '.join(used)} reads it (or a cell transcribed from it)" if used
                   else f"rule {', '.join(built)} places exactly the printed value")
            return Verdict(CONSTRUCTION, f"by construction: {how}.{tail}", behind)
        if of:
            placed = set().union(*(r.reads | r.builds for r in rs)) if rs else set()
            if all(c in placed for c in of):
                return Verdict(IDENTITY,
                               f"arithmetic of the printed cells {', '.join(of)}, which the rules place.{tail}", behind)
        return Verdict(REPRODUCED, explanation, behind)
    hit = [r for r in readings if r.matches]
    if hit:
        missed = "; ".join(f"{r.name}: {r.detail}" for r in readings if not r.matches)
        return Verdict(CHOICE, f"reachable only if {hit[0].name}"
                       + (f" ({hit[0].detail})" if hit[0].detail else "")
                       + (f"; the default reading misses ({missed})" if missed else "") + f".{tail}", behind)
    if printed_inconsistent:
        tried = "; ".join(f"{r.name}: {r.detail}" for r in readings)
        return Verdict(INCONSISTENT, f"no data give the printed value under any reading tried: {printed_inconsistent}"
                       + (f" (readings: {tried})" if tried else "") + f".{tail}", behind)
    return Verdict(MISMATCH, "The reconstruction misses the printed value:" + (tail or " no explanation recorded."),
                   behind)
