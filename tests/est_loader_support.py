"""Test support for the estimator tests: the hand-made package through the loader and the rows schema.

The package is loaded by the foundation loader (`analysis.evidence.load_package`,
lock verified first); synthetic rows in property tests use the loader's own
column dtypes (`analysis.evidence.schema.ROWS_COLUMNS`), so both meet the same
contract: String / Int64 / Boolean, empty -> null.
"""

from __future__ import annotations

from functools import lru_cache

from analysis.evidence import EvidencePackage, load_package
from analysis.evidence.schema import CHECKS_COLUMNS, ROWS_COLUMNS
from support.paths import HANDMADE

ROWS_SCHEMA = {c.name: c.dtype for c in ROWS_COLUMNS}
CHECKS_SCHEMA = {c.name: c.dtype for c in CHECKS_COLUMNS}


@lru_cache(maxsize=1)
def load_handmade() -> EvidencePackage:
    """The hand-made oracle package (tests/fixtures/handmade), loaded once."""
    return load_package(HANDMADE)
