"""Status of one claim, derived by code (never typed per claim): from the printed cells, else from the rows.

Methods note. A claim that the paper's own printed cells decide (``analysis.audit.printed.PRINTED``) is
judged against them alone, whatever the evidence package holds:
- the printed cells give it at face value (exact GRIM rationals where unique) -> ``consistent with the printed
  cells``, unless the computation reads a cell the paper does not print as a number and the transcription
  inferred from this very claim (``printed.IMPLIED``) -> ``implied (not an independent check)``: the agreement
  cannot fail and is not counted as agreement;
- only a stated alternative reading gives it (unrounded inputs inside their printed rounding, an order of tied
  values, a weighting) -> ``reachable under a choice`` (the note names it);
- no reading tried gives it -> ``inconsistent`` (GRIM and the like; the note lists the readings). A claim that a
  joint search covers (the 4.7.1 fill statistics, ``printed_fills``) is reachable only when ONE choice gives all
  of them; when none does, the ones the face value misses are inconsistent: no data give them together.
Only a claim that needs row-level data the paper does not print is judged against the evidence package. In a
reconstruction (study.toml ``kind = "reconstruction"``), from the rules behind the recomputation (ids into
``analysis.reconstruct.rules``) and their declarations:
1. nothing recomputed -> ``not determinable``;
2. the printed value matched: a rule behind it was fitted to it -> ``fitted``; a rule reads or builds it ->
   ``holds by construction``; otherwise -> ``reached by the reconstruction``;
3. missed: an alternative reading matches -> ``reachable under a choice``; a consistency check over printed
   cells proves no data give it -> ``inconsistent``; otherwise -> ``mismatch`` (missed; the note explains).
In a study of its own (real rows) the matched case is ``reproduced``: the word is reserved for that.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.reconstruct.rules import ResolvedRule

CONSISTENT = "consistent with the printed cells"
IMPLIED = "implied (not an independent check)"
CHOICE = "reachable under a choice"
INCONSISTENT = "inconsistent"
REACHED = "reached by the reconstruction"
REPRODUCED = "reproduced"
CONSTRUCTION = "holds by construction"
FITTED = "fitted"
MISMATCH = "mismatch"
NOT_DETERMINABLE = "not determinable"

STATUSES = (CONSISTENT, IMPLIED, CHOICE, INCONSISTENT, REACHED, REPRODUCED, CONSTRUCTION, FITTED, MISMATCH,
            NOT_DETERMINABLE)
PRINTED_STATUSES = (CONSISTENT, IMPLIED, CHOICE, INCONSISTENT)
"""What a claim the printed cells decide can be."""
ROW_STATUSES = (REACHED, REPRODUCED, CONSTRUCTION, FITTED, MISMATCH, CHOICE, INCONSISTENT, NOT_DETERMINABLE)
"""What a claim that needs row-level data can be (REACHED in a reconstruction, REPRODUCED in a study)."""

LEGEND: dict[str, str] = {
    CONSISTENT: "consistent with the printed cells: arithmetic of the paper's own printed cells (Table 3, Table 1, "
                "the McNemar tables, the ladder means ...; exact GRIM rationals where unique) gives the printed value, "
                "through the same estimator code, with no row of any evidence package read; it checks the paper's "
                "arithmetic, not a replication",
    IMPLIED: "implied (not an independent check): the printed cells give it only through a cell the paper does not "
             "print as a number, which the transcription inferred from this very claim (ladder.mcnemar.q_only_full = "
             "10 - 7 - 1 - 2), so the agreement cannot fail; it is not counted as agreement",
    CHOICE: "reachable only under a stated choice (unrounded inputs inside their printed rounding, an order of tied "
            "values, a weighting, a row count); the note names the choice and what the default reading gives",
    INCONSISTENT: "inconsistent under every reading tried: no data produce the printed value (GRIM and the like), or, "
                  "for claims a joint search covers (the 4.7.1 fill statistics), no single choice produces them "
                  "together; the note lists the readings",
    REACHED: "reached by the reconstruction: the value needs row-level data the paper does not print; the estimators "
             "compute the printed value from the reconstructed rows, and no rule behind them read, built or was "
             "fitted to it (the rows are one row set consistent with the page, not the study's)",
    REPRODUCED: "reproduced: the value needs row-level data, and the estimators compute it from the rows of a study "
                "of its own (never used for a reconstruction)",
    CONSTRUCTION: "holds by construction: a rule behind it used the claim itself (or a number transcribed from it) "
                  "or places exactly the printed value, so the check cannot fail",
    FITTED: "fitted: a rule was tuned by a search until this derived number came out as printed",
    MISMATCH: "mismatch (missed): the value needs row-level data and the evidence misses the printed number; the note "
              "says why",
    NOT_DETERMINABLE: "not determinable: the value needs row-level data the evidence does not hold, and nothing was "
                      "recomputed (never used where a recomputed value differs)",
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
class ClaimVerdict:
    """A derived status, its note and the rules behind it."""

    status: str
    """One of STATUSES."""
    note: str
    """Why (generated from the declarations, plus any explanation supplied)."""
    rules: tuple[str, ...]
    """Rule ids behind the recomputation."""


def from_printed(*, matched: bool, readings: Sequence[Reading] = (), inconsistent: str = "", cells: str = "",
                 explanation: str = "", rules_behind: Sequence[str] = (), implied: Sequence[str] = ()) -> ClaimVerdict:
    """The status of a claim the printed cells decide (module note); `explanation` says what the rows give,
    `rules_behind` lists the rules behind the package's own recomputation (shown, never used for the status) and
    `implied` the cells the computation read that the transcription inferred from this claim."""
    tail = f" {explanation}" if explanation else ""
    behind = tuple(rules_behind)
    if matched and implied:
        return ClaimVerdict(IMPLIED, f"from the printed cells: {cells}; but {', '.join(implied)} is not printed as a "
                            "number and was inferred from this claim, so the agreement is an identity, not a "
                            f"check.{tail}", behind)
    if matched:
        return ClaimVerdict(CONSISTENT, f"from the printed cells: {cells}.{tail}", behind)
    hit = [r for r in readings if r.matches]
    missed = "; ".join(f"{r.name}: {r.detail}" for r in readings if not r.matches)
    if hit:
        return ClaimVerdict(CHOICE, f"from the printed cells ({cells}) only if {hit[0].name}"
                            + (f" ({hit[0].detail})" if hit[0].detail else "")
                            + (f"; other readings miss ({missed})" if missed else "")
                            + "; at face value the printed cells miss." + tail, behind)
    tried = "; ".join(f"{r.name}: {r.detail}" for r in readings)
    why = inconsistent or "the printed cells do not give it at face value"
    return ClaimVerdict(INCONSISTENT, f"no reading of the printed cells ({cells}) gives it: {why}"
                        + (f" (readings: {tried})" if tried else "") + f".{tail}", behind)


def _matched_verdict(cid: str, rs: Sequence[ResolvedRule], behind: tuple[str, ...], explanation: str,
                     reconstruction: bool) -> ClaimVerdict:
    """A recomputed claim that matches its printed value: fitted, by construction, or reached/reproduced."""
    tail = f" {explanation}" if explanation else ""
    fit = [r.id for r in rs if cid in r.fitted]
    if fit:
        return ClaimVerdict(FITTED, f"FITTED: rule {', '.join(fit)} was tuned until it prints as published.{tail}",
                            behind)
    used = [r.id for r in rs if cid in r.reads]
    built = [r.id for r in rs if cid in r.builds]
    if used or built:
        how = (f"rule {', '.join(used)} reads it (or a cell transcribed from it)" if used
               else f"rule {', '.join(built)} places exactly the printed value")
        return ClaimVerdict(CONSTRUCTION, f"by construction: {how}.{tail}", behind)
    return ClaimVerdict(REACHED if reconstruction else REPRODUCED, explanation, behind)


def _missed_verdict(readings: Sequence[Reading], printed_inconsistent: str, explanation: str,
                    behind: tuple[str, ...]) -> ClaimVerdict:
    """A recomputed claim that misses its printed value: a choice, inconsistent printed cells, or a mismatch."""
    tail = f" {explanation}" if explanation else ""
    hit = [r for r in readings if r.matches]
    if hit:
        missed = "; ".join(f"{r.name}: {r.detail}" for r in readings if not r.matches)
        return ClaimVerdict(CHOICE, f"reachable only if {hit[0].name}"
                            + (f" ({hit[0].detail})" if hit[0].detail else "")
                            + (f"; the default reading misses ({missed})" if missed else "") + f".{tail}", behind)
    tried = "; ".join(f"{r.name}: {r.detail}" for r in readings)
    if printed_inconsistent:
        return ClaimVerdict(INCONSISTENT,
                            f"no data give the printed value under any reading tried: {printed_inconsistent}"
                            + (f" (readings: {tried})" if tried else "") + f".{tail}", behind)
    return ClaimVerdict(MISMATCH, "The evidence misses the printed value:" + (tail or " no explanation recorded.")
                        + (f" (readings tried: {tried})" if tried else ""), behind)


def derive(cid: str, *, recomputed: bool, matched: bool, rules_behind: Sequence[str],
           rules: Mapping[str, ResolvedRule], readings: Sequence[Reading] = (),
           printed_inconsistent: str = "", explanation: str = "", reconstruction: bool = True) -> ClaimVerdict:
    """The status of claim `cid`, which needs row-level data, from the evidence package (module note)."""
    behind = tuple(rules_behind) if reconstruction else ()
    unknown = [r for r in behind if r not in rules]
    if unknown:
        raise KeyError(f"claim {cid}: rule(s) {', '.join(unknown)} are not declared in analysis/reconstruct/rules.py")
    if not recomputed:
        return ClaimVerdict(NOT_DETERMINABLE, (explanation or "nothing printed decides it and nothing is recomputed"),
                            behind)
    if matched:
        return _matched_verdict(cid, [rules[r] for r in behind], behind, explanation, reconstruction)
    return _missed_verdict(readings, printed_inconsistent, explanation, behind)
