"""The claims-audit headline as a JSON-ready block of results.json (``claims_audit``).

The build computes it and hands it to the results assembly (analysis.results.registry), so results
never imports the audit, which itself reads results (the audit sits beside results).
"""

from __future__ import annotations

from typing import Any


def audit_block(audit: Any) -> dict[str, Any] | None:
    """Headline and status counts of an AuditResult, or None when the audit was not run."""
    if audit is None:
        return None
    headline = getattr(audit, "headline", None)
    block: dict[str, Any] = {}
    if isinstance(headline, dict):
        block.update(headline)
    elif headline is not None:
        to_dict = getattr(headline, "to_dict", None)
        block.update(to_dict() if callable(to_dict) else {"headline": str(headline)})
    for name in ("derived", "reproduced"):
        value = getattr(audit, name, None)
        if isinstance(value, int):
            block[name] = value
    printed_counts = getattr(audit, "printed_counts", None)
    row_counts = getattr(audit, "row_counts", None)
    if isinstance(printed_counts, dict) and isinstance(row_counts, dict):
        block["evidence_kind"] = "reconstruction" if getattr(audit, "reconstruction", False) else "study"
        block["printed_cells"] = {"claims": int(sum(printed_counts.values())),
                                  **{str(k): int(v) for k, v in printed_counts.items()}}
        block["row_level"] = {"claims": int(sum(row_counts.values())),
                              **{str(k): int(v) for k, v in row_counts.items()}}
        block["reconstruction_misses"] = list(getattr(audit, "reconstruction_misses", ()))
    derived_counts = getattr(audit, "derived_counts", None)
    if isinstance(derived_counts, dict):
        block["derived_status_counts"] = {str(k): int(v) for k, v in derived_counts.items()}
        from analysis.audit.derive import LEGEND
        block["legend"] = dict(LEGEND)
        block["fitted"] = list(getattr(audit, "fitted_ids", ()))
        block["tuned"] = {str(k): str(v) for k, v in (getattr(audit, "tuned", None) or {}).items()}
    table = getattr(audit, "table", None)
    if table is not None and "status" in getattr(table, "columns", ()):
        counts = table.group_by("status").len().sort("status")
        block["status_counts"] = {r["status"]: int(r["len"]) for r in counts.iter_rows(named=True)}
        block["claims"] = int(table.height)
    return block
