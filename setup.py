"""Build hook: the wheel carries the paper's claims file as package data.

The claims file stays where the repository keeps it (data/published/claims.yaml, with the rest of
the repository's data); the report build needs it at run time (the claims audit), so build_py
copies it into the built package as analysis/audit/claims.yaml, where analysis.locations finds
it in an installed wheel. Everything else about the build is in pyproject.toml.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CLAIMS = Path("data", "published", "claims.yaml")
TARGET = Path("analysis", "audit", "claims.yaml")  # = analysis.locations.CLAIMS_IN_PACKAGE


class BuildPyWithClaims(build_py):
    """build_py, then the claims file copied into the built package."""

    def run(self) -> None:
        super().run()
        if not CLAIMS.is_file():
            raise FileNotFoundError(f"{CLAIMS} is missing: build the wheel from a full checkout")
        target = Path(self.build_lib, TARGET)
        self.mkpath(str(target.parent))
        self.copy_file(str(CLAIMS), str(target))


setup(cmdclass={"build_py": BuildPyWithClaims})
