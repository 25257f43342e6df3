"""Evidence packages: provenance lock, schemas, loading and validation.

``from analysis.evidence import load_package, verify_package, write_lock, EvidenceError``
"""
from .errors import (
    ConsistencyError,
    EvidenceError,
    LockFormatError,
    Mismatch,
    PackageNotFoundError,
    Problem,
    ProvenanceError,
    SchemaError,
    StudyError,
    StudyWarning,
)
from .files import UnsafeFileError, read_evidence_file
from .model import Configuration, EvidencePackage, PackageSummary, PartitionRun, Study
from .package import load_package, verify_package
from .provenance import LOCK_NAME, REQUIRED_FILES, package_key, verify_files, write_lock

__all__ = [
    "LOCK_NAME",
    "REQUIRED_FILES",
    "Configuration",
    "ConsistencyError",
    "EvidenceError",
    "EvidencePackage",
    "LockFormatError",
    "Mismatch",
    "PackageNotFoundError",
    "PackageSummary",
    "PartitionRun",
    "Problem",
    "ProvenanceError",
    "SchemaError",
    "Study",
    "StudyError",
    "StudyWarning",
    "UnsafeFileError",
    "load_package",
    "package_key",
    "read_evidence_file",
    "verify_files",
    "verify_package",
    "write_lock",
]
