"""The verify stage of the build: the package is verified (lock first) and parsed by loading it."""

from __future__ import annotations

from pathlib import Path

from analysis.evidence.model import EvidencePackage


def verify_stage(package: EvidencePackage, label: str) -> tuple[list[Path], str]:
    """Nothing written; the one-line detail of a verified package (``label``: its display path)."""
    return [], (f"{label}: {len(package.digests)} locked files verified, "
                f"{package.rows.height} rows, {package.checks.height} checks")
