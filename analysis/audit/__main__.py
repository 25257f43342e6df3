"""CLI: python -m analysis.audit [--evidence data/v1] [--claims ...] [--out DIR] (prints the headline)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.audit",
                                 description="Audit every published claim: against the paper's own printed cells "
                                             "where they decide it, else against its recomputation from an "
                                             "evidence package (default: the v1 reconstruction).")
    ap.add_argument("--evidence", type=Path, default=Path("data/v1"), help="evidence package (default: data/v1)")
    ap.add_argument("--claims", type=Path, default=Path("data/published/claims.yaml"), help="claims file")
    ap.add_argument("--out", type=Path, default=None, help="write claims_audit.csv and claims_audit.md here")
    args = ap.parse_args(argv)
    from analysis.audit.claims_audit import audit_claims
    from analysis.audit.render import audit_csv, audit_markdown
    from analysis.evidence import EvidenceError, load_package
    from analysis.params import DEFAULT_PARAMS
    from analysis.reconstruct.claims import ClaimsError, load_claims
    from analysis.safeio import write_bytes, write_text
    try:
        result = audit_claims(load_package(args.evidence), load_claims(args.claims), DEFAULT_PARAMS)
    except (EvidenceError, ClaimsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        write_bytes(args.out / "claims_audit.csv", audit_csv(result))
        write_text(args.out / "claims_audit.md", audit_markdown(result))
    print(result.headline)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
