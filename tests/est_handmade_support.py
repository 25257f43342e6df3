"""Test support for the estimator tests on the hand-made package (fill, headings, carrier,
failures, secondary results).

`handmade()` returns the hand-made oracle package: through `analysis.evidence.load_package`
once the foundation loader is importable, else read here with polars under the explicit
docs/EVIDENCE_FORMAT.md schema (String / Int64 / Boolean, empty -> null) into a stand-in with the
attributes of the shared `EvidencePackage` interface. `rows_frame` builds small rows
DataFrames by hand with the same schema.
"""

from __future__ import annotations

import datetime
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from support.paths import HANDMADE

ROWS_SCHEMA: dict[str, Any] = {
    "row_id": pl.String, "scenario": pl.String, "configuration": pl.String,
    "execution_group": pl.String, "repeat": pl.Int64, "arm": pl.String, "position": pl.Int64,
    "valid": pl.Boolean, "invalid_reason": pl.String, "checks_total": pl.Int64,
    "checks_passed": pl.Int64, "parse_failures": pl.Int64, "headings_carried": pl.Int64,
    "carried_chars": pl.Int64, "declared_chars": pl.Int64, "folds": pl.Int64,
    "folds_clipped": pl.Int64, "finish_stop": pl.Int64, "finish_length": pl.Int64,
    "prompt_tokens_est": pl.Int64, "answer": pl.String,
}
CHECKS_SCHEMA: dict[str, Any] = {"row_id": pl.String, "check": pl.String, "expected": pl.String,
                                 "passed": pl.Boolean, "in_carrier": pl.Boolean}


@dataclass(frozen=True, slots=True)
class _Configuration:
    key: str
    family: str
    published: datetime.date
    provider: str | None = None
    quantization: str | None = None


@dataclass(frozen=True, slots=True)
class _Run:
    configuration: str
    execution_group: str
    planned_repeats: int


@dataclass(frozen=True, slots=True)
class _Study:
    name: str
    recency_cutoff: datetime.date
    control: str
    treatment: str
    scenario: str
    configurations: dict
    partition_runs: tuple


@dataclass(frozen=True)
class _Package:
    root: Path
    digests: dict
    study: _Study
    rows: pl.DataFrame
    checks: pl.DataFrame


def read_csv(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    """Read every cell as text, then cast per schema (booleans from exact 'true'/'false')."""
    raw = pl.read_csv(path, infer_schema=False)
    cols = []
    for name, dtype in schema.items():
        c = pl.col(name).replace("", None)
        if dtype == pl.Boolean:
            cols.append(pl.when(c == "true").then(True).when(c == "false").then(False)
                        .otherwise(None).alias(name))
        else:
            cols.append(c.cast(dtype, strict=True).alias(name))
    extra = [pl.col(c) for c in raw.columns if c not in schema]
    return raw.select(*cols, *extra)


def _study(path: Path) -> _Study:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    s = raw["study"]
    configs = {k: _Configuration(k, v["family"], v["published"], v.get("provider"), v.get("quantization"))
               for k, v in raw.get("configurations", {}).items()}
    runs = tuple(_Run(r["configuration"], r["execution_group"], int(r["planned_repeats"]))
                 for r in raw.get("partition_runs", []))
    return _Study(s["name"], s["recency_cutoff"], s["control"], s["treatment"], s["scenario"], configs, runs)


def handmade(root: Path = HANDMADE):
    """The hand-made package (foundation loader when available, else the stand-in)."""
    try:
        from analysis.evidence import load_package  # type: ignore[attr-defined]
    except ImportError:
        load_package = None
    if load_package is not None:
        return load_package(root)
    return _Package(root, {}, _study(root / "study.toml"),
                    read_csv(root / "rows.csv", ROWS_SCHEMA), read_csv(root / "checks.csv", CHECKS_SCHEMA))


def rows_frame(records: list[dict[str, Any]]) -> pl.DataFrame:
    """A rows DataFrame from dicts; absent columns are null, defaults: S5, valid, 14 checks, group g."""
    defaults = {"scenario": "S5", "valid": True, "checks_total": 14, "execution_group": "g",
                "repeat": 1, "parse_failures": 0}
    full = []
    for i, r in enumerate(records):
        rec = {k: None for k in ROWS_SCHEMA}
        rec.update(defaults)
        rec["row_id"] = f"r{i}"
        rec.update(r)
        full.append(rec)
    return pl.DataFrame(full, schema=ROWS_SCHEMA, orient="row") if full else pl.DataFrame(schema=ROWS_SCHEMA)
