"""RECONSTRUCTION.md: every rule and choice of the reconstruction (rendered, deterministic)."""
from __future__ import annotations

import polars as pl

from analysis.reconstruct.claims import Claims
from analysis.reconstruct.populations import Builder


def render_notes(b: Builder, claims: Claims, findings: pl.DataFrame) -> str:
    return "# RECONSTRUCTION (placeholder)\n"
