"""The claims audit: every published claim against its recomputation from the v1 reconstruction.

Methods note. Each claim is recomputed through the estimators (``recompute.REGISTRY``) and judged at
printed precision (|x - value| <= half a unit of the last printed decimal, in exact rationals). Its
status is DERIVED (``derive.derive``) from the reconstruction's rule declarations
(``analysis.reconstruct.rules``: what each rule reads, builds and was fitted to), the rules behind
the recomputation (``dependencies.BEHIND``), whether the recomputation is hand arithmetic of printed
cells (``dependencies.OF``) and the alternative readings tried when it misses (``readings``). The
legend of the eight statuses is ``derive.LEGEND``; every row names the rules behind it.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.audit.context import AuditContext, NotDeterminable
from analysis.audit.dependencies import OF, rules_behind
from analysis.audit.derive import LEGEND, REPRODUCED, STATUSES, Reading, derive
from analysis.audit.readings import grim_readings, k_m_gap_readings, row_count_readings, spearman_readings
from analysis.audit.recompute import REGISTRY
from analysis.audit.statuses import EXPLAIN, PREFIX_EXPLAIN
from analysis.params import Params
from analysis.reconstruct.claims import Claim, Claims, matches_printed
from analysis.reconstruct.rules import resolve_rules

SCHEMA = {"id": pl.String, "section": pl.String, "role": pl.String, "published": pl.String,
          "recomputed": pl.String, "status": pl.String, "rules": pl.String, "note": pl.String}
__all__ = ["LEGEND", "STATUSES", "AuditResult", "audit_claims"]


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The claims audit table and its headline."""

    table: pl.DataFrame
    """id, section, role, published, recomputed (at printed precision), status, rules (ids, space-separated),
    note; claims-file order."""
    headline: str
    """First sentence: 'N of M derived claims are reproduced by independent computation', then the count of
    every status (derived claims, then all claims)."""
    derived: int
    """Derived claims in the claims file."""
    reproduced: int
    """Derived claims reproduced by independent computation."""
    derived_counts: dict[str, int]
    """Derived claims per status (every status, zeros included)."""
    all_counts: dict[str, int]
    """All claims per status (every status, zeros included)."""
    fitted_ids: tuple[str, ...]
    """Derived claims some rule was fitted to (from the rule declarations; a fitted claim the reconstruction
    still misses counts as a mismatch, not as fitted)."""


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
    from analysis.evidence import EvidenceError, read_evidence_file

    try:  # a locked file of a verified package, read under the evidence file rules
        data = read_evidence_file(package.root, "findings.csv")
        df = pl.read_csv(io.BytesIO(data), infer_schema=False)
    except (OSError, EvidenceError, pl.exceptions.PolarsError):
        return {}
    return dict(zip(df["id"].to_list(), df["note"].to_list(), strict=True))


def _readings(claims: Claims, package: Any) -> dict[str, tuple[list[Reading], str]]:
    found = grim_readings(claims)
    found.update(row_count_readings(claims, _package_findings(package)))
    found.update(spearman_readings(claims))
    found.update(k_m_gap_readings(claims))
    return found


def headline_text(derived: int, reproduced: int, derived_counts: dict[str, int], all_counts: dict[str, int],
                  total: int, fitted_ids: tuple[str, ...]) -> str:
    """The audit's headline; its first sentence names the count of independent reproductions."""
    rest = "; ".join(f"{s}: {derived_counts[s]}" for s in STATUSES if s != REPRODUCED)
    every = "; ".join(f"{s}: {all_counts[s]}" for s in STATUSES)
    fitted = ", ".join(fitted_ids) if fitted_ids else "none"
    return (f"{reproduced} of {derived} derived claims are reproduced by independent computation. "
            f"The other derived claims: {rest}. All {total} claims: {every}. data/v1 is a RECONSTRUCTION built "
            f"from the paper's per-cell (primitive) numbers and fitted to {len(fitted_ids)} derived ones ({fitted}; "
            f"a fitted claim it still misses is counted as a mismatch)")


def audit_claims(package: Any, claims: Claims, params: Params, *, results: dict | None = None) -> AuditResult:
    """Recompute every claim from `package` with the estimators and derive its status (module note).

    `results` may pass an already computed build_results(package, params) to avoid computing it twice.
    Raises RuleDeclarationError when a rule declaration names a claim id the claims file lacks.
    """
    from analysis.results import build_results

    rules = resolve_rules(claims)
    if results is None:
        results = build_results(package, params)
    ctx = AuditContext(package=package, results=results, params=params)
    alternatives = _readings(claims, package)
    out = []
    for c in claims:
        rec, x, why = "", None, ""
        recomputed = False
        if c.external:
            why = "external literature figure; neither fitted nor reproduced"
        elif c.value is None:
            why = "printed em dash (not measured); the package has no such cell"
        elif c.id not in REGISTRY:
            why = _explain(c.id) or ("design constant of the protocol, not an evidence quantity"
                                     if c.role == "design" else "not represented in the reconstructed evidence")
        else:
            try:
                x = REGISTRY[c.id](ctx)
            except NotDeterminable as e:
                why = str(e)
            except (KeyError, TypeError, IndexError) as e:  # an estimator output this claim needs is absent
                why = f"the estimators' results lack what this claim needs ({e!r})"
            else:
                rec = _fmt(x, c.decimals)
                recomputed = rec != ""
                if not recomputed:
                    why = "the estimators return no value (undefined) for this claim"
        reads, inconsistent = alternatives.get(c.id, ([], ""))
        v = derive(c.id, recomputed=recomputed, matched=recomputed and _matches(c, x),
                   rules_behind=rules_behind(c.id), rules=rules, of=OF.get(c.id, ()), readings=reads,
                   printed_inconsistent=inconsistent, explanation=why or _explain(c.id))
        out.append({"id": c.id, "section": c.section, "role": c.role, "published": _published(c),
                    "recomputed": rec, "status": v.status, "rules": " ".join(v.rules), "note": v.note})
    table = pl.DataFrame(out, schema=SCHEMA)
    derived = table.filter(pl.col("role") == "derived")
    dcounts = {s: derived.filter(pl.col("status") == s).height for s in STATUSES}
    acounts = {s: table.filter(pl.col("status") == s).height for s in STATUSES}
    fitted_set = set().union(*(r.fitted for r in rules.values())) if rules else set()
    fitted_ids = tuple(c.id for c in claims if c.id in fitted_set and c.role == "derived")
    headline = headline_text(derived.height, dcounts[REPRODUCED], dcounts, acounts, table.height, fitted_ids)
    return AuditResult(table=table, headline=headline, derived=derived.height, reproduced=dcounts[REPRODUCED],
                       derived_counts=dcounts, all_counts=acounts, fitted_ids=fitted_ids)
