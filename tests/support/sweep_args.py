"""What the runner tests share (defined once): the command line of a one-row sweep against a scripted
server, and the strict JSON reading of one ledger line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def sweep_args(url: str, out: Path, *extra: str) -> list[str]:
    """``sweep`` arguments of one arm, one repeat, no probe, no backoff, json_schema mode, at most 3 attempts."""
    return ["sweep", "--base-url", url, "--model", "scripted/model-1", "--published", "2026-03-01",
            "--family", "test", "--arms", "j", "--repeats", "1", "--out", str(out), "--quiet", "--backoff", "0",
            "--backoff-cap", "0", "--timeout", "20", "--api-key-env", "", "--no-probe",
            "--structured-mode", "json_schema", "--max-attempts", "3", *extra]


def strict_json_line(line: bytes) -> Any:
    """One ledger line read strictly: UTF-8 without a lone surrogate's bytes, no NaN or Infinity token."""
    def refuse(name: str) -> Any:
        raise ValueError(name)
    line.decode("utf-8")  # strict: no lone surrogate's bytes
    return json.loads(line, parse_constant=refuse)
