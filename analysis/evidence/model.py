"""The loaded evidence: frozen dataclasses shared by every analysis module."""
from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl


@dataclass(frozen=True, slots=True)
class Configuration:
    """One served configuration (model/provider/quantization) of study.toml."""

    key: str
    """Its key in ``[configurations]``, as used in rows.csv."""
    family: str
    """Model family (families are weighted equally in the family analysis)."""
    published: datetime.date
    """Publication date; on/after the recency cutoff means inside the primary panel."""
    provider: str | None
    """Serving provider, if recorded."""
    quantization: str | None
    """Weight quantization, if recorded."""


@dataclass(frozen=True, slots=True)
class PartitionRun:
    """A run that forms the capacity-matched panel (at most one per configuration)."""

    configuration: str
    """Configuration key."""
    execution_group: str
    """Execution group of the run in rows.csv."""
    planned_repeats: int
    """Repeats planned; repeats 1..planned_repeats are the run's slots."""


@dataclass(frozen=True, slots=True)
class Study:
    """The study configuration of study.toml."""

    name: str
    """Name of the study."""
    recency_cutoff: datetime.date
    """Configurations published on or after this date are in the primary panel."""
    control: str
    """Control arm of the primary contrast."""
    treatment: str
    """Treatment arm of the primary contrast (effect = treatment - control)."""
    scenario: str
    """Scenario the primary contrast is read on."""
    configurations: Mapping[str, Configuration]
    """Every configuration by key."""
    partition_runs: tuple[PartitionRun, ...]
    """The panel's runs, in file order."""
    arms: tuple[str, ...] | None = None
    """Declared arms (``[study] arms``), or None when study.toml does not declare them."""
    kind: str | None = None
    """What the package is (``[study] kind``, a key of schema.STUDY_KINDS), or None: a study of its own."""
    ladder: tuple[LadderRung, ...] = ()
    """The load ladder's rungs (``[ladder]``), easiest first; empty when the package has no ladder."""
    simulation: Any = None
    """The planted truth of a simulated package (``[simulation]``, an analysis.evidence.truth.Truth), else None."""


@dataclass(frozen=True, slots=True)
class LadderRung:
    """One rung of the load ladder as study.toml declares it (``[ladder.rung."<name>"]``)."""

    name: str
    """Rung name, written into every row's ``rung`` column."""
    scenario: str
    """Scenario of the rung's rows (a rung has its own number of graded checks)."""
    graded_per_chunk: int
    """Graded values planted per chunk."""
    distractors: int
    """Distractors planted in the whole session."""
    chunk_tokens: int
    """Estimated tokens per chunk."""
    folds: int
    """Chunks, i.e. folds of an undisturbed trajectory."""


@dataclass(frozen=True)
class EvidencePackage:
    """A verified and validated evidence package."""

    root: Path
    """Directory of the package."""
    digests: Mapping[str, str]
    """Every file named in the lock -> its verified SHA-256."""
    study: Study
    """Parsed study.toml."""
    rows: pl.DataFrame
    """rows.csv: schema columns with their dtypes (empty = null), extra columns as text."""
    checks: pl.DataFrame
    """checks.csv: row_id, check, expected, passed, in_carrier (+ extra columns as text)."""
    folds: pl.DataFrame | None = None
    """folds.jsonl (analysis.evidence.folds.SCHEMA) when the lock names it, else None."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """The verified bytes of study.toml and of every other locked file of at most
    analysis.evidence.provenance.KEEP_LIMIT bytes (rows.csv, checks.csv, folds.jsonl and
    datapackage.json are parsed above and not kept): what every later reader parses."""

    def verified_bytes(self, name: str) -> bytes | None:
        """The verified bytes of the locked file ``name``, or None (not locked, or too large to be kept).
        Readers of a package file take its bytes from here, never from the disk again."""
        return self.files.get(name)


@dataclass(frozen=True, slots=True)
class PackageSummary:
    """What ``verify_package`` found: enough for a one-line report."""

    root: Path
    """Directory of the package."""
    digests: Mapping[str, str]
    """Every locked file -> SHA-256."""
    rows: int
    """Rows in rows.csv."""
    valid_rows: int
    """Rows with valid = true."""
    checks: int
    """Rows in checks.csv."""
    configurations: int
    """Configurations in study.toml."""

    @property
    def files(self) -> tuple[str, ...]:
        """The locked file names, sorted."""
        return tuple(sorted(self.digests))

    def line(self) -> str:
        """One-line human summary."""
        digests = " ".join(f"{name}={self.digests[name]}" for name in self.files)

        def n(count: int, noun: str) -> str:
            return f"{count} {noun}{'' if count == 1 else 's'}"

        return (f"OK {self.root}: {n(len(self.digests), 'file')} verified, {n(self.rows, 'row')} "
                f"({self.valid_rows} valid), {n(self.checks, 'check')}, {n(self.configurations, 'configuration')}; "
                f"sha256 {digests}")
