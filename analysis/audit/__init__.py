"""The claims audit: ``audit_claims(package, claims, params) -> AuditResult`` (see claims_audit)."""
from analysis.audit.claims_audit import STATUSES, AuditResult, audit_claims

__all__ = ["STATUSES", "AuditResult", "audit_claims"]
