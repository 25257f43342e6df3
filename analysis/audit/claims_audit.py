"""The claims audit: every published claim against its recomputation from the v1 reconstruction.

Methods note. Status of a claim:
- ``reproduced``: derived, computed by the estimators from data/v1 and equal at printed precision;
- ``fitted``: matched because the reconstruction was fitted to it (listed in FITTED);
- ``primitive``: an input of the reconstruction (or a design constant it encodes), matched;
- ``not determinable``: the page does not give enough (note says what is missing), external
  literature figures, and statistics whose value the reconstruction's free choices decide;
- ``mismatch``: computed and different (the note explains);
- ``inconsistent``: no data can produce the printed value (GRIM failure, or a printed value that
  contradicts the printed cells it is computed from).
Equality is |x - value| <= half a unit of the last printed decimal, in exact rationals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from analysis.audit.context import AuditContext, NotDeterminable
from analysis.audit.recompute import REGISTRY
from analysis.audit.statuses import FITTED, INCONSISTENT, PREFIX_NOTES, RULE_DECIDED, STATUS_NOTES
from analysis.params import Params
from analysis.reconstruct.claims import Claim, Claims, matches_printed
from analysis.reconstruct.granularity import granularity_report

STATUSES = ("reproduced", "fitted", "primitive", "not determinable", "mismatch", "inconsistent")
SCHEMA = {"id": pl.String, "section": pl.String, "role": pl.String, "published": pl.String,
          "recomputed": pl.String, "status": pl.String, "note": pl.String}


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The claims audit table and its headline."""

    table: pl.DataFrame
    """id, section, role, published, recomputed (at printed precision), status, note; claims-file order."""
    headline: str
    """'N of M derived claims reproduced by computation' plus the status counts."""
    derived: int
    """Derived claims in the claims file."""
    reproduced: int
    """Derived claims reproduced by computation."""


def _fmt(x: Any, decimals: int | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if isinstance(x, str):
        return x
    d = decimals if decimals is not None else 3
    return f"{float(x):.{d}f}" if d > 0 else str(int(round(float(x))))


def _published(c: Claim) -> str:
    return "" if c.value is None else str(c.value) if isinstance(c.value, str) else _fmt(c.value, c.decimals)


def _note(cid: str) -> str:
    if cid in STATUS_NOTES:
        return STATUS_NOTES[cid]
    return next((n for p, n in PREFIX_NOTES if cid.startswith(p)), "")


def _judge(c: Claim, x: Any, grim_bad: dict[str, str]) -> tuple[str, str]:
    note = _note(c.id)
    if c.id in grim_bad:
        return "inconsistent", grim_bad[c.id]
    ok = (isinstance(c.value, str) and str(x) == c.value) or isinstance(c.value, (int, float)) and c.decimals is not None and x is not None \
        and not (isinstance(x, float) and not math.isfinite(x)) and matches_printed(x, c.value, c.decimals)
    if c.id in RULE_DECIDED:
        return "not determinable", RULE_DECIDED[c.id]
    if c.id in INCONSISTENT and not ok:
        return "inconsistent", INCONSISTENT[c.id]
    if c.role == "derived":
        if ok:
            return ("fitted", FITTED[c.id]) if c.id in FITTED else ("reproduced", note)
        return "mismatch", note or "computed value differs at printed precision"
    if ok:
        return "primitive", note or ("design constant encoded in the package" if c.role == "design" else "")
    return "mismatch", note or "input not met by the reconstruction"


def _package_findings(package: Any) -> dict[str, str]:
    """Inconsistencies the reconstruction engine recorded in the package's findings.csv (if locked)."""
    if "findings.csv" not in getattr(package, "digests", {}):
        return {}
    df = pl.read_csv(package.root / "findings.csv", infer_schema=False)
    df = df.filter(pl.col("status") == "inconsistent")
    return dict(zip(df["id"].to_list(), df["note"].to_list()))


def audit_claims(package: Any, claims: Claims, params: Params, *, results: dict | None = None) -> AuditResult:
    """Recompute every claim from `package` with the estimators and judge it (module note).

    `results` may pass an already computed build_results(package, params) to avoid computing it twice.
    """
    from analysis.results import build_results

    if results is None:
        results = build_results(package, params)
    ctx = AuditContext(package=package, results=results, params=params)
    grim = granularity_report(claims).filter(~pl.col("consistent"))
    grim_bad = dict(zip(grim["id"].to_list(), grim["reason"].to_list()))
    grim_bad.update(_package_findings(package))
    out = []
    for c in claims:
        rec, status, note = "", "", ""
        if c.external:
            status, note = "not determinable", "external literature figure; neither fitted nor reproduced"
        elif c.value is None:
            status, note = "primitive", "printed em dash (not measured); the package has no such cell"
        elif c.id not in REGISTRY:
            status = "not determinable"
            note = _note(c.id) or ("design constant of the protocol, not an evidence quantity (neither fitted nor tested)"
                                   if c.role == "design" else "not represented in the reconstructed evidence")
        else:
            try:
                x = REGISTRY[c.id](ctx)
            except NotDeterminable as e:
                status, note = "not determinable", str(e)
            except (KeyError, TypeError, IndexError) as e:  # an estimator output this claim needs is absent
                status, note = "not determinable", f"the estimators' results lack what this claim needs ({e!r})"
            else:
                rec = _fmt(x, c.decimals)
                status, note = _judge(c, x, grim_bad)
        out.append({"id": c.id, "section": c.section, "role": c.role, "published": _published(c),
                    "recomputed": rec, "status": status, "note": note})
    table = pl.DataFrame(out, schema=SCHEMA)
    derived = table.filter(pl.col("role") == "derived")
    n_rep = derived.filter(pl.col("status") == "reproduced").height
    counts = table.group_by("status").len().sort("status")
    tail = ", ".join(f"{s}: {n}" for s, n in counts.iter_rows())
    headline = (f"{n_rep} of {derived.height} derived claims reproduced by computation "
                f"(all {table.height} claims: {tail}); data/v1 is a RECONSTRUCTION fitted to primitive claims only")
    return AuditResult(table=table, headline=headline, derived=derived.height, reproduced=n_rep)
