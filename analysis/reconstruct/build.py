"""One-call rebuild of data/v1 from the claims file."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from analysis.reconstruct.annotate import annotate
from analysis.reconstruct.claims import Claims, load_claims
from analysis.reconstruct.granularity import granularity_report
from analysis.reconstruct.notes import render_notes
from analysis.reconstruct.package import write_reconstruction
from analysis.reconstruct.populations import Builder

DEFAULT_CLAIMS = Path("data/published/claims.yaml")
DEFAULT_OUT = Path("data/v1")


def reconstruct(claims: Claims) -> Builder:
    """Rows and their attributes, in memory (within-row dependence fitted to the printed ICC: R2b/R2c).

    Raises RuleDeclarationError when a rule declaration names an unknown claim id and UndeclaredClaimRead
    when a rule reads a claim its declaration does not list.
    """
    from analysis.reconstruct.icc_fit import fitted_rows
    from analysis.reconstruct.rules import TrackedClaims, validate_rules
    tracked = TrackedClaims(claims, validate_rules(claims))  # every rule's reads are checked (rules.py)
    b = fitted_rows(tracked)
    annotate(b, tracked)
    b.claims_read = tracked.used
    return b


def findings_table(b: Builder, claims: Claims) -> pl.DataFrame:
    """Granularity findings plus the engine's own (one row per claim id, engine first)."""
    g = granularity_report(claims).filter(~pl.col("consistent")).select(
        "id", pl.when(pl.col("reason").str.contains("reachable if per-row")).then(pl.lit("reachable under a choice"))
        .otherwise(pl.lit("inconsistent")).alias("status"), pl.col("reason").alias("note"))
    e = pl.DataFrame(b.findings, schema={"id": pl.String, "status": pl.String, "note": pl.String})
    both = pl.concat([e, g])
    # a claim some reading reaches (per-row rounding, another row count) is not inconsistent
    return (both.group_by("id", maintain_order=True)
            .agg(pl.when((pl.col("status") == "reachable under a choice").any())
                 .then(pl.lit("reachable under a choice")).otherwise(pl.col("status").first()).first().alias("status"),
                 pl.col("note").unique(maintain_order=True).str.join("; "))
            .sort("id"))


def _findings_csv(df: pl.DataFrame) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(df.columns)
    for rec in df.iter_rows():
        w.writerow(rec)
    return buf.getvalue().encode("utf-8")


def build_reconstruction(claims_path: Path = DEFAULT_CLAIMS, out: Path = DEFAULT_OUT) -> dict:
    """Rebuild the package at `out` from `claims_path`; returns the lock document."""
    claims = load_claims(claims_path)
    b = reconstruct(claims)
    f = findings_table(b, claims)
    return write_reconstruction(b, claims, Path(out), render_notes(b, claims, f), _findings_csv(f))
