"""The claims audit: ``audit_claims(package, claims, params) -> AuditResult`` (see claims_audit)."""
from analysis.audit.claims_audit import LEGEND, STATUSES, AuditResult, audit_claims

__all__ = ["LEGEND", "STATUSES", "AuditResult", "audit_claims"]
