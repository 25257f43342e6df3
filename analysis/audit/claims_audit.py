"""The claims audit: every published claim against the paper's printed cells, or else against the evidence rows.

Methods note. A claim that the paper's own printed cells decide (``printed.PRINTED``: Table 3, Table 1, the
McNemar tables, the ladder means ...) is computed from those cells alone, through the same estimator code,
and judged against them: consistent, reachable under a stated choice, or inconsistent (``derive.from_printed``).
Every other claim needs row-level data the paper does not print; it is recomputed from the evidence package
through the estimators (``recompute.REGISTRY``) and its status is derived (``derive.derive``) from the
reconstruction's rule declarations (``analysis.reconstruct.rules``: what each rule reads, builds and was fitted
to), the rules behind the recomputation (``dependencies.BEHIND``) and the alternative readings tried when it
misses (``readings``). Values are judged at printed precision (|x - value| <= half a unit of the last printed
decimal, in exact rationals). The package's recomputation is shown for every claim, and a printed-cell claim
the package's rows miss says so in its note (``reconstruction_misses``). Whether the package is a
reconstruction is what its study.toml says (``kind = "reconstruction"``); only a study of its own can
reproduce anything. The legend is ``derive.LEGEND``.
"""
from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.audit.context import AuditContext, NotDeterminable
from analysis.audit.dependencies import rules_behind
from analysis.audit.derive import (
    CHOICE,
    CONSISTENT,
    CONSTRUCTION,
    FITTED,
    IMPLIED,
    INCONSISTENT,
    LEGEND,
    MISMATCH,
    NOT_DETERMINABLE,
    PRINTED_STATUSES,
    REACHED,
    REPRODUCED,
    ROW_STATUSES,
    STATUSES,
    Reading,
    derive,
    from_printed,
)
from analysis.audit.printed import PRINTED, PrintedCells, implied_cells
from analysis.audit.printed import matches as printed_matches
from analysis.audit.printed_fills import fill_readings
from analysis.audit.readings import grim_readings, k_m_gap_readings, row_count_readings, spearman_readings
from analysis.audit.recompute import REGISTRY
from analysis.audit.statuses import EXPLAIN, PREFIX_EXPLAIN
from analysis.params import Params
from analysis.reconstruct.claims import Claim, Claims, matches_printed
from analysis.reconstruct.rules import resolve_rules

SCHEMA = {"id": pl.String, "section": pl.String, "role": pl.String, "published": pl.String,
          "recomputed": pl.String, "status": pl.String, "rules": pl.String, "note": pl.String,
          "from_printed": pl.String}
__all__ = ["LEGEND", "STATUSES", "AuditResult", "audit_claims"]


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The claims audit table and its headline."""

    table: pl.DataFrame
    """id, section, role, published, recomputed (from the evidence package, at printed precision), status, rules
    (ids behind the package's recomputation, space-separated), note, from_printed (the value the printed cells
    give, at printed precision; empty for a claim that needs rows); claims-file order."""
    headline: str
    """How many derived claims follow from the printed cells (and agree, need a choice, or do not), then how many
    need row-level data and what the evidence gives for them."""
    derived: int
    """Derived claims in the claims file."""
    reproduced: int
    """Derived claims reproduced from the rows of a study of its own (always 0 for a reconstruction)."""
    derived_counts: dict[str, int]
    """Derived claims per status (every status, zeros included)."""
    all_counts: dict[str, int]
    """All claims per status (every status, zeros included)."""
    fitted_ids: tuple[str, ...]
    """Derived claims some rule was tuned to (from the rule declarations, whatever their status)."""
    tuned: dict[str, str]
    """Each of fitted_ids -> its computed status (what the headline's one sentence about tuning says)."""
    printed_counts: dict[str, int]
    """Derived claims the printed cells decide, per status (consistent, reachable under a choice, inconsistent)."""
    row_counts: dict[str, int]
    """Derived claims that need row-level data, per status."""
    reconstruction: bool
    """True when the package's study.toml says kind = "reconstruction"."""
    reconstruction_misses: tuple[str, ...]
    """Derived claims the printed cells decide whose value the package's rows do not give."""

    @property
    def printed(self) -> int:
        """Derived claims the printed cells decide."""
        return sum(self.printed_counts.values())

    @property
    def need_rows(self) -> int:
        """Derived claims that need row-level data."""
        return sum(self.row_counts.values())


def _fmt(x: Any, decimals: int | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if isinstance(x, str):
        return x
    d = decimals if decimals is not None else 3
    return f"{float(x):.{d}f}" if d > 0 else str(round(float(x)))


def _published(c: Claim) -> str:
    return "" if c.value is None else str(c.value) if isinstance(c.value, str) else _fmt(c.value, c.decimals)


def _explain(cid: str) -> str:
    if cid in EXPLAIN:
        return EXPLAIN[cid]
    return next((n for p, n in PREFIX_EXPLAIN if cid.startswith(p)), "")


def _matches(c: Claim, x: Any) -> bool:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return False
    if isinstance(c.value, str):
        return str(x) == c.value
    return isinstance(c.value, (int, float)) and c.decimals is not None and matches_printed(x, c.value, c.decimals)


def _package_findings(package: Any) -> dict[str, str]:
    """Inconsistencies the reconstruction engine recorded in the package's findings.csv (if locked)."""
    if "findings.csv" not in getattr(package, "digests", {}):
        return {}
    data = package.verified_bytes("findings.csv")  # the verified bytes, never the file on disk again
    if data is None:
        return {}
    try:
        df = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except pl.exceptions.PolarsError:
        return {}
    if "id" not in df.columns or "note" not in df.columns:
        return {}
    return dict(zip(df["id"].to_list(), df["note"].to_list(), strict=True))


def _claim_readings(claims: Claims) -> dict[str, tuple[list[Reading], str]]:
    """Alternative readings computed from the claims file alone (the only ones a printed-cell verdict may use)."""
    found = grim_readings(claims)
    found.update(spearman_readings(claims))
    found.update(k_m_gap_readings(claims))
    return found


def _package_readings(claims: Claims, package: Any) -> dict[str, tuple[list[Reading], str]]:
    """Alternative readings that read the evidence package too (its findings.csv): row-level claims only."""
    return row_count_readings(claims, _package_findings(package))


_NAMES = {REACHED: "reached", REPRODUCED: "reproduced", CONSTRUCTION: "hold by construction", FITTED: "fitted",
          CHOICE: "reachable under a choice", INCONSISTENT: "inconsistent", MISMATCH: "missed",
          NOT_DETERMINABLE: "not determinable", CONSISTENT: "consistent with the printed cells",
          IMPLIED: "implied by a cell inferred from it"}


def tuned_sentence(tuned: dict[str, str]) -> str:
    """One sentence naming every derived claim a rule was tuned to, each with its computed audit status."""
    if not tuned:
        return "No rule was tuned to a derived number."
    said = "; ".join(f"{cid} ({_NAMES.get(st, st)})" for cid, st in tuned.items())
    plural = "s" if len(tuned) != 1 else ""
    return f"Its rules were also tuned to {len(tuned)} derived number{plural}, audited as: {said}."


def headline_text(derived: int, printed_counts: dict[str, int], row_counts: dict[str, int], *,
                  reconstruction: bool, tuned: dict[str, str]) -> str:
    """The audit's headline: what follows from the printed cells, then what needs rows (each count said once).

    `tuned`: derived claim id -> its computed status, for every claim a rule was tuned to (said in a
    reconstruction only)."""
    p = printed_counts
    rows = sum(row_counts.values())
    shown = [s for s in _NAMES if row_counts.get(s) and not (reconstruction and s == REPRODUCED)]
    parts = ", ".join(f"{row_counts[s]} {_NAMES[s]}" for s in shown) or "none"
    where = "on this reconstruction" if reconstruction else "on this study's rows"
    n_implied = p.get(IMPLIED, 0)
    implied = (f", {n_implied} agree{'s' if n_implied == 1 else ''} only because a cell the paper does not print was "
               "inferred from it (not an independent check)") if n_implied else ""
    text = (f"Of the {derived} derived claims, {sum(p.values())} follow arithmetically from the paper's own printed "
            f"cells: {p.get(CONSISTENT, 0)} agree with them{implied}, {p.get(CHOICE, 0)} agree only under a stated "
            f"choice and {p.get(INCONSISTENT, 0)} do not (inconsistent). The other {rows} need row-level data the "
            f"paper does not print; {where}: {parts}.")
    if reconstruction:
        text += (" The evidence is a reconstruction built from the paper's per-cell (primitive) numbers, so nothing "
                 f"in it is reproduced. {tuned_sentence(tuned)}")
    return text


def _recompute(c: Any, ctx: AuditContext) -> tuple[str, Any, str]:
    """Recompute claim `c` from the package: (formatted value or "", raw value, why there is none)."""
    if c.external:
        return "", None, "external literature figure; neither fitted nor reproduced"
    if c.value is None:
        return "", None, "printed em dash (not measured); the package has no such cell"
    if c.id not in REGISTRY:
        return "", None, _explain(c.id) or ("design constant of the protocol, not an evidence quantity"
                                            if c.role == "design" else "not represented in the reconstructed evidence")
    try:
        x = REGISTRY[c.id](ctx)
    except NotDeterminable as e:
        return "", None, str(e)
    except (KeyError, TypeError, IndexError) as e:  # an estimator output this claim needs is absent
        return "", None, f"the estimators' results lack what this claim needs ({e!r})"
    rec = _fmt(x, c.decimals)
    return rec, x, "" if rec != "" else "the estimators return no value (undefined) for this claim"


def _printed_verdict(c: Any, pc: PrintedCells, fills: Mapping[str, Any], frame_reads: set[Any],
                     found: tuple[list[Any], str], row: tuple[str, bool, bool, str]) -> tuple[Any, str]:
    """The verdict of a claim the paper's own printed cells decide, and the value they give (shown).

    `found`: the other readings and printed inconsistency; `row`: (recomputed value, recomputed, matched, why)."""
    reads, inconsistent = found
    rec, recomputed, matched, why = row
    pc.reads.clear()
    fp = PRINTED[c.id](pc)
    implied = implied_cells(c.id, pc.reads | frame_reads)
    shown = _fmt(fp.value, c.decimals if fp.matched is None else 2)
    ok = fp.matched if fp.matched is not None else printed_matches(c.value, c.decimals, fp.value)
    extra = ([fills[c.id]] if c.id in fills else []) + list(fp.readings) + list(reads)
    rows_say = (("The package's rows give the same value." if matched else
                 f"The package's rows give {rec}, not the printed value: {why or _explain(c.id)}".rstrip(": "))
                if recomputed else f"The package recomputes nothing: {why or _explain(c.id)}".rstrip(": "))
    v = from_printed(matched=ok, readings=extra, inconsistent=fp.inconsistent or inconsistent,
                     cells=fp.cells, explanation=rows_say, rules_behind=rules_behind(c.id), implied=implied)
    return v, shown


def _result(table: pl.DataFrame, claims: Claims, rules: Mapping[str, Any], by_printed: list[str],
            misses: list[str], reconstruction: bool) -> AuditResult:
    """Count the statuses of the audit table and write its headline."""
    derived = table.filter(pl.col("role") == "derived")
    dcounts = {s: derived.filter(pl.col("status") == s).height for s in STATUSES}
    acounts = {s: table.filter(pl.col("status") == s).height for s in STATUSES}
    # grouped by the branch that actually ran: a PRINTED claim with no printed value, or external, went to derive()
    decided = derived.filter(pl.col("id").is_in(by_printed))
    rest = derived.filter(~pl.col("id").is_in(by_printed))
    pcounts = {s: decided.filter(pl.col("status") == s).height for s in PRINTED_STATUSES}
    rcounts = {s: rest.filter(pl.col("status") == s).height for s in ROW_STATUSES}
    fitted_set = set().union(*(r.fitted for r in rules.values())) if rules else set()
    fitted_ids = tuple(c.id for c in claims if c.id in fitted_set and c.role == "derived")
    status_of = dict(zip(table["id"].to_list(), table["status"].to_list(), strict=True))
    tuned = {cid: status_of[cid] for cid in fitted_ids}
    headline = headline_text(derived.height, pcounts, rcounts, reconstruction=reconstruction, tuned=tuned)
    return AuditResult(table=table, headline=headline, derived=derived.height, reproduced=dcounts[REPRODUCED],
                       derived_counts=dcounts, all_counts=acounts, fitted_ids=fitted_ids, tuned=tuned,
                       printed_counts=pcounts, row_counts=rcounts, reconstruction=reconstruction,
                       reconstruction_misses=tuple(misses))


def audit_claims(package: Any, claims: Claims, params: Params, *, results: dict | None = None) -> AuditResult:
    """Recompute every claim from `package` with the estimators and derive its status (module note).

    `results` may pass an already computed build_results(package, params) to avoid computing it twice.
    Raises RuleDeclarationError when a rule declaration names a claim id the claims file lacks.
    """
    from analysis.results import build_results

    rules = resolve_rules(claims)
    if results is None:
        results = build_results(package, params)
    reconstruction = getattr(getattr(package, "study", None), "kind", None) == "reconstruction"
    ctx = AuditContext(package=package, results=results, params=params)
    from_claims = _claim_readings(claims)
    alternatives = {**from_claims, **_package_readings(claims, package)}
    pc = PrintedCells(claims, params)
    fills = fill_readings(pc)
    frame_reads = set(pc.reads)  # the cached frames (Table 3, panel, families, fills) read these once
    out = []
    misses = []
    by_printed: list[str] = []
    for c in claims:
        rec, x, why = _recompute(c, ctx)
        recomputed = rec != ""
        # a claim the joint fill search covers is judged by that one set of fills only: a reading that reaches it
        # alone (another order of the tied fills) contradicts the choice the other fill statistics need
        printed_branch = c.id in PRINTED and c.value is not None and not c.external
        reads, inconsistent = (([], "") if c.id in fills
                               else (from_claims if printed_branch else alternatives).get(c.id, ([], "")))
        matched = recomputed and _matches(c, x)
        shown = ""
        if printed_branch:
            by_printed.append(c.id)
            if c.role == "derived" and recomputed and not matched:
                misses.append(c.id)
            v, shown = _printed_verdict(c, pc, fills, frame_reads, (reads, inconsistent),
                                        (rec, recomputed, matched, why))
        else:
            v = derive(c.id, recomputed=recomputed, matched=matched, rules_behind=rules_behind(c.id), rules=rules,
                       readings=reads, printed_inconsistent=inconsistent, explanation=why or _explain(c.id),
                       reconstruction=reconstruction)
        out.append({"id": c.id, "section": c.section, "role": c.role, "published": _published(c),
                    "recomputed": rec, "status": v.status, "rules": " ".join(v.rules), "note": v.note,
                    "from_printed": shown})
    return _result(pl.DataFrame(out, schema=SCHEMA), claims, rules, by_printed, misses, reconstruction)
