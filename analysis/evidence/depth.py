"""Nesting limits of the evidence files: the one implementation lives in :mod:`analysis.safeio.depth`."""
from __future__ import annotations

from analysis.safeio.depth import MAX_DEPTH, MAX_KEY_PARTS, json_depth, toml_depth

__all__ = ["MAX_DEPTH", "MAX_KEY_PARTS", "json_depth", "toml_depth"]
