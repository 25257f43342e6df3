"""The v1 RECONSTRUCTION: claims loading, granularity (GRIM) checks, the integer solver and the package writer.

``python -m analysis.reconstruct build`` rebuilds data/v1 from data/published/claims.yaml (RECONSTRUCTION.md
inside the package lists every rule).
"""
