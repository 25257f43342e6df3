"""Test support for the estimators-core tests: the hand-made package, loaded.

Uses `analysis.evidence.load_package` when the foundation loader exists; until
then it reads the CSVs with polars under the explicit EVIDENCE.md schema
(String / Int64 / Boolean, empty -> null) and study.toml with tomllib into
stand-ins that have the attributes of the shared `EvidencePackage` interface.
"""

from __future__ import annotations

import datetime
import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

HANDMADE = Path(__file__).parent / "fixtures" / "handmade"

ROWS_SCHEMA = {
    "row_id": pl.String, "scenario": pl.String, "configuration": pl.String,
    "execution_group": pl.String, "repeat": pl.Int64, "arm": pl.String, "position": pl.Int64,
    "valid": pl.Boolean, "invalid_reason": pl.String, "checks_total": pl.Int64,
    "checks_passed": pl.Int64, "parse_failures": pl.Int64, "headings_carried": pl.Int64,
    "carried_chars": pl.Int64, "declared_chars": pl.Int64, "folds": pl.Int64,
    "folds_clipped": pl.Int64, "finish_stop": pl.Int64, "finish_length": pl.Int64,
    "prompt_tokens_est": pl.Int64, "answer": pl.String,
}
CHECKS_SCHEMA = {"row_id": pl.String, "check": pl.String, "expected": pl.String,
                 "passed": pl.Boolean, "in_carrier": pl.Boolean}


@dataclass(frozen=True, slots=True)
class Configuration:
    key: str
    family: str
    published: datetime.date
    provider: str | None = None
    quantization: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionRun:
    configuration: str
    execution_group: str
    planned_repeats: int


@dataclass(frozen=True, slots=True)
class Study:
    name: str
    recency_cutoff: datetime.date
    control: str
    treatment: str
    scenario: str
    configurations: dict[str, Configuration]
    partition_runs: tuple[PartitionRun, ...]


@dataclass(frozen=True)
class Package:
    root: Path
    digests: dict[str, str]
    study: Study
    rows: pl.DataFrame
    checks: pl.DataFrame
    extra: dict[str, Any] = field(default_factory=dict)


def read_csv(path: Path, schema: dict) -> pl.DataFrame:
    return pl.read_csv(path, schema_overrides=schema, infer_schema=False).select(list(schema))


def study_from_toml(path: Path) -> Study:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    s = raw["study"]
    configs = {k: Configuration(k, v["family"], v["published"], v.get("provider"),
                                v.get("quantization"))
               for k, v in raw.get("configurations", {}).items()}
    runs = tuple(PartitionRun(r["configuration"], r["execution_group"], int(r["planned_repeats"]))
                 for r in raw.get("partition_runs", []))
    return Study(s["name"], s["recency_cutoff"], s["control"], s["treatment"], s["scenario"],
                 configs, runs)


def load_handmade(root: Path = HANDMADE):
    """The hand-made package through the foundation loader if present, else the stand-in."""
    try:
        from analysis.evidence import load_package  # type: ignore[attr-defined]
    except ImportError:
        load_package = None
    if load_package is not None:
        return load_package(root)
    digests = {n: hashlib.sha256((root / n).read_bytes()).hexdigest()
               for n in ("rows.csv", "checks.csv", "study.toml")}
    return Package(root, digests, study_from_toml(root / "study.toml"),
                   read_csv(root / "rows.csv", ROWS_SCHEMA),
                   read_csv(root / "checks.csv", CHECKS_SCHEMA))
