"""Setup shared by the claims-audit tests (issue 22, the suite's time): the published claims file and the
audit of data/v1 are each computed once per session instead of once per module.

Both are frozen (``Claims``, ``ClaimsAudit``), so sharing them cannot leak a change from one test to another.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from support.paths import REPO as ROOT

CLAIMS_PATH = ROOT / "data" / "published" / "claims.yaml"
V1 = ROOT / "data" / "v1"


@lru_cache(maxsize=1)
def published_claims() -> Any:
    """``load_claims(data/published/claims.yaml)``, parsed once per session."""
    from analysis.reconstruct.claims import load_claims

    return load_claims(CLAIMS_PATH)


@lru_cache(maxsize=1)
def v1_audit() -> Any:
    """``audit_claims(load_package(data/v1), published_claims(), DEFAULT_PARAMS)``, computed once per session."""
    from analysis.audit.claims_audit import audit_claims
    from analysis.evidence import load_package
    from analysis.params import DEFAULT_PARAMS

    return audit_claims(load_package(V1), published_claims(), DEFAULT_PARAMS)
