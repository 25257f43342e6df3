"""The content key of every build stage: what each stage reads, hashed.

Methods note: a stage's key is the SHA-256 of the evidence package's content key (its lock and every
locked file; the build computes it from the digests of the bytes it verified, under OUT's lock, so the
key is of the very bytes the stages parse), the analysis Params, the Python version, the source files of
the code the stage runs (analysis.sources), the claims file (results, tables), the companions' package
keys and the committed fixtures behind entry folds (results), the versions of the libraries that shape its bytes
(:data:`STAGE_LIBS`), and the key of the stage before it. OUT/design.json is mixed in by the pipeline
(analysis.plan.report_blocks.mix_design_key) from the same bytes the results stage reads.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from analysis.digest import file_sha256
from analysis.locations import claims_file
from analysis.sources import source_lines

STAMP_VERSION = 1
"""Version of .build-stamp.json and of the key recipe (a new recipe rebuilds every stage)."""
STAGES: tuple[str, ...] = ("verify", "results", "tables", "figures", "report")
CLAIMS = claims_file()
"""The paper's transcribed claims (the claims audit and its tables read them): analysis.locations
finds the repository's, else the copy a wheel ships."""
STAGE_LIBS: dict[str, tuple[str, ...]] = {
    "verify": ("polars",),
    "results": ("polars", "numpy", "scipy", "statsmodels", "lifelines"),  # lifelines: Kaplan–Meier survival
    "tables": ("polars", "great_tables"),
    "figures": ("matplotlib", "numpy"),
    "report": ("jinja2", "pypandoc-binary", "pyyaml"),
}
"""The libraries whose versions shape each stage's bytes (distribution names)."""


def evidence_key(evidence_dir: Path, *, strict: bool = True) -> str | None:
    """The package's content key (analysis.evidence.package_key: the lock is validated first).

    A package whose lock cannot be used raises its EvidenceError (an unsafe file named in
    the lock is never opened, a FIFO never read); with ``strict=False`` it keys as None,
    which forces the verify stage.
    """
    from analysis.evidence import EvidenceError, package_key

    try:
        return package_key(evidence_dir)
    except EvidenceError:
        if strict:
            raise
        return None


def _lib_versions(libs: Iterable[str]) -> str:
    from importlib import metadata

    out = []
    for lib in libs:
        try:
            out.append(f"{lib}=={metadata.version(lib)}")
        except metadata.PackageNotFoundError:
            out.append(f"{lib}==absent")
    return ";".join(out)


def _params_text(params: Any) -> str:
    to_dict = getattr(params, "to_dict", None)
    data = to_dict() if callable(to_dict) else repr(params)
    return json.dumps(data, sort_keys=True, default=repr)


def stage_keys(evidence_dir: Path, params: Any, companions: Sequence[Path] = (),
               pointers: Sequence[Path] = ()) -> dict[str, str] | None:
    """The content key of every stage, chained in stage order, of the files as they are on disk now
    (the build itself keys the bytes it verified: :func:`keys_of`); None when the evidence is unreadable."""
    ev = evidence_key(evidence_dir)
    if ev is None:
        return None
    from analysis.evidence.folds import load_fixture_library

    return keys_of(ev, params, [evidence_key(c, strict=False) for c in companions],
                   load_fixture_library().by_digest, [evidence_key(p, strict=False) for p in pointers])


def keys_of(ev: str, params: Any, companion_keys: Sequence[str | None], fixtures: Iterable[str],
            pointer_keys: Sequence[str | None] = ()) -> dict[str, str]:
    """The content key of every stage from the evidence's content key ``ev``, the companions' keys (None:
    unusable), the committed fixtures' digests (the ones the build loaded: FixtureLibrary.by_digest) and
    the keys of a pilot the report only points to (issue 30)."""
    fixture_list = sorted(fixtures)
    keys: dict[str, str] = {}
    prev = f"evidence:{ev}\nparams:{_params_text(params)}\npython:{sys.version_info[:2]}"
    for stage in STAGES:
        h = hashlib.sha256(f"{STAMP_VERSION}\n{stage}\n{prev}\n".encode())
        for line in source_lines(stage):
            h.update(line.encode())
        if stage in ("results", "tables") and CLAIMS.is_file():
            h.update(f"claims:{file_sha256(CLAIMS)}\n".encode())
        if stage == "results":  # the companions' bytes; later stages chain this key, so they rerun too
            for companion in companion_keys:
                h.update(f"companion:{companion}\n".encode())
            for pointer in pointer_keys:  # a pilot the report points to (its headline counts)
                h.update(f"pointer:{pointer}\n".encode())
            for digest in fixture_list:  # the committed fixtures behind entry folds
                h.update(f"fixture:{digest}\n".encode())
        h.update(_lib_versions(STAGE_LIBS[stage]).encode())
        keys[stage] = prev = h.hexdigest()
    return keys
