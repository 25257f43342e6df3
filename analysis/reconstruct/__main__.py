"""CLI: python -m analysis.reconstruct build [--claims PATH] [--out DIR] (the claims file: analysis.locations)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from analysis.locations import claims_file
from analysis.reconstruct.claims import ClaimsError
from analysis.reconstruct.engine import ReconstructionError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.reconstruct",
        description="Rebuild the v1 RECONSTRUCTION evidence package (data/v1) from the paper's claims file. "
                    "The output is byte-identical on every run.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    bp = sub.add_parser("build", help="write rows.csv, checks.csv, study.toml, RECONSTRUCTION.md, findings.csv "
                                      "and provenance.lock")
    bp.add_argument("--claims", type=Path, default=None,
                    help="claims file (default: the paper's, data/published/claims.yaml in a checkout, else the "
                         "copy the installed package ships)")
    bp.add_argument("--out", type=Path, default=Path("data/v1"), help="output directory (default: data/v1)")
    args = ap.parse_args(argv)
    from analysis.reconstruct.build import build_reconstruction
    t0 = time.perf_counter()
    try:
        lock = build_reconstruction(args.claims or claims_file(), args.out)
    except (ClaimsError, ReconstructionError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    dt = time.perf_counter() - t0
    print(f"wrote {args.out} ({len(lock['files'])} locked files) in {dt:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
