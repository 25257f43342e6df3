"""Build hook: the wheel carries the paper's claims file and the docs as package data.

The claims file stays where the repository keeps it (data/published/claims.yaml, with the rest of
the repository's data); the report build needs it at run time (the claims audit), so build_py
copies it into the built package as analysis/audit/claims.yaml, where analysis.locations finds
it in an installed wheel. The docs stay in docs/ (their one copy, edited there); the messages of the
command lines cite them as ``carriers docs NAME`` (analysis.invocation), so build_py copies docs/*.md
and the truth files docs/truth/*.toml into the built package as analysis/docs. Everything else about
the build is in pyproject.toml.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CLAIMS = Path("data", "published", "claims.yaml")
TARGET = Path("analysis", "audit", "claims.yaml")  # = analysis.locations.CLAIMS_IN_PACKAGE
DOCS = Path("docs")
DOCS_PATTERNS = ("*.md", "truth/*.toml")  # = what analysis.invocation.shipped_docs lists
DOCS_TARGET = Path("analysis", "docs")  # = analysis.invocation.DOCS_IN_PACKAGE


class BuildPyWithClaims(build_py):
    """build_py, then the claims file and the docs copied into the built package."""

    def run(self) -> None:
        super().run()
        if not CLAIMS.is_file():
            raise FileNotFoundError(f"{CLAIMS} is missing: build the wheel from a full checkout")
        target = Path(self.build_lib, TARGET)
        self.mkpath(str(target.parent))
        self.copy_file(str(CLAIMS), str(target))
        docs = sorted(p for pattern in DOCS_PATTERNS for p in DOCS.glob(pattern) if p.is_file())
        if not any(p.name == "EVIDENCE_FORMAT.md" for p in docs):
            raise FileNotFoundError(f"{DOCS}/EVIDENCE_FORMAT.md is missing: build the wheel from a full checkout")
        for doc in docs:
            copy = Path(self.build_lib, DOCS_TARGET, doc.relative_to(DOCS))
            self.mkpath(str(copy.parent))
            self.copy_file(str(doc), str(copy))


setup(cmdclass={"build_py": BuildPyWithClaims})
