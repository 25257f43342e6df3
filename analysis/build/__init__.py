"""The generation pipeline behind ``python generate.py``: verify -> results -> tables -> figures -> report.

The orchestrator on top: it decides which stages run (content keys, the stamp), stages and commits
their outputs, and holds the lock. Each stage's work lives with what it produces:

- verify: analysis.evidence.stage (plus the report's check that its front matter can hold the path)
- results: analysis.results.stage (every block of analysis.results.registry) -> results.json
- tables: analysis.tables.registry.tables_stage -> tables/
- figures: analysis.figures.registry.figures_stage -> figures/
- report: analysis.report.stage (manuscript, Pandoc page, claims-audit copies, trajectory pages) -> report/

analysis.build.inputs holds the inputs the stages share (loaded lazily, at most once); the sources
each stage runs are listed in analysis.sources (its key, and results.json's code digest).

Methods note: every stage has a content key, the SHA-256 of what it reads: the bytes of the
evidence files named in the provenance lock, the analysis Params, the source files of the
code it runs, the versions of the libraries that shape its bytes, and the key of the stage
before it. A stage whose key and output digests match ``OUT/.build-stamp.json`` is skipped,
so an unchanged input costs a few file hashes and no heavy import. Outputs are deterministic
(sorted JSON, fixed figure metadata, no timestamps), which is what ``check`` relies on.

Layout of OUT (``python generate.py`` uses OUT = the repository root)::

    results.json             headline estimates (docs/RESULTS_KEYS.md) + claims_audit headline
    tables/<name>.csv|md|html every table: full-precision CSV, Markdown, great_tables HTML
    figures/<name>.png|svg    every figure
    report/_quarto.yml, report/index.qmd   the Quarto manuscript (``quarto render report/`` writes
                              report/_quarto/manuscript.html, never report/index.html)
    report/index.html         the offline page: index.qmd rendered by Pandoc (no Quarto needed)
    .build-stamp.json         stage keys + the manifest: every file each stage wrote, with its digest
    .build.lock               serialises builds of one OUT (analysis.outdir)

Safety of OUT (analysis.outdir): stages write into a staging directory inside OUT, and the new files
replace the old ones in one short commit with SIGINT/SIGTERM deferred; the build replaces or removes
only files it writes or that the manifest says an earlier build wrote, never a user's own file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.digest import file_sha256
from analysis.outdir import (
    DEFAULT_WAIT_S,
    LOCK_FILE,
    MANAGED,
    QUARTO_OWN,
    BuildError,
    BuildInterrupted,
    BuildLock,
    commit,
    deferred_signals,
    interruptible,
    is_managed_rel,
    new_staging,
    remove_stale_staging,
    stale_outputs,
    validate_out,
)
from analysis.safeio import SafeIOError, loads_json, read_bytes, read_json, write_bytes, write_json
from analysis.sources import source_lines

if TYPE_CHECKING:
    from analysis.build.inputs import BuildInputs

STAMP_NAME = ".build-stamp.json"
STAMP_LIMIT = 64 << 20
"""Largest .build-stamp.json read (a larger one is ignored: every stage rebuilds)."""
STAMP_VERSION = 1
STAGES: tuple[str, ...] = ("verify", "results", "tables", "figures", "report")
UNMANAGED_REPORT_DIRS: tuple[str, ...] = QUARTO_OWN
"""Quarto's own files and render output inside report/, never written, removed or compared."""

_REPO = Path(__file__).resolve().parents[2]
_CLAIMS = _REPO / "data" / "published" / "claims.yaml"
_STAGE_LIBS: dict[str, tuple[str, ...]] = {
    "verify": ("polars",),
    "results": ("polars", "numpy", "scipy", "statsmodels"),
    "tables": ("polars", "great_tables"),
    "figures": ("matplotlib", "numpy"),
    "report": ("jinja2", "pypandoc-binary", "pyyaml"),
}

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BuildSummary:
    """What one build did."""

    out_dir: Path
    """The output directory."""
    ran: tuple[str, ...]
    """Stages that ran."""
    skipped: tuple[str, ...]
    """Stages skipped because their inputs and outputs were unchanged."""
    written: tuple[str, ...] = field(default=())
    """Output files (relative to out_dir) written by the stages that ran."""


def stderr_progress(line: str) -> None:
    """Default progress sink: one line per stage on stderr (control characters made visible)."""
    from analysis.escape import terminal

    print(terminal(line), file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- hashing

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


def stage_keys(evidence_dir: Path, params: Any, companions: Sequence[Path] = ()) -> dict[str, str] | None:
    """The content key of every stage, chained in stage order; None when the evidence is unreadable."""
    ev = evidence_key(evidence_dir)
    if ev is None:
        return None
    keys: dict[str, str] = {}
    prev = f"evidence:{ev}\nparams:{_params_text(params)}\npython:{sys.version_info[:2]}"
    for stage in STAGES:
        h = hashlib.sha256(f"{STAMP_VERSION}\n{stage}\n{prev}\n".encode())
        for line in source_lines(stage):
            h.update(line.encode())
        if stage in ("results", "tables") and _CLAIMS.is_file():
            h.update(f"claims:{file_sha256(_CLAIMS)}\n".encode())
        if stage == "results":  # the companions' bytes; later stages chain this key, so they rerun too
            for companion in companions:
                h.update(f"companion:{evidence_key(companion, strict=False)}\n".encode())
            from analysis.evidence.folds import fixture_digests

            for digest in sorted(fixture_digests().values()):  # the committed fixtures behind entry folds
                h.update(f"fixture:{digest}\n".encode())
        h.update(_lib_versions(_STAGE_LIBS[stage]).encode())
        keys[stage] = prev = h.hexdigest()
    return keys


# --------------------------------------------------------------------------- stamp

def _read_stamp(out_dir: Path) -> dict[str, Any]:
    try:
        stamp = read_json(out_dir / STAMP_NAME, limit=STAMP_LIMIT)
    except (OSError, SafeIOError):
        return {}  # a missing, unreadable or hostile stamp: every stage rebuilds
    return stamp if isinstance(stamp, dict) and stamp.get("version") == STAMP_VERSION else {}


def _write_stamp(out_dir: Path, stages: dict[str, Any]) -> None:
    write_json(out_dir / STAMP_NAME, {"version": STAMP_VERSION, "stages": stages})


def _unchanged(out_dir: Path, entry: Any, key: str) -> bool:
    if not isinstance(entry, dict) or entry.get("key") != key:
        return False
    outputs = entry.get("outputs", {})
    if not isinstance(outputs, dict):
        return False
    for rel, digest in outputs.items():
        if not is_managed_rel(rel):  # a stamp naming anything else is not ours: rebuild
            return False
        p = out_dir / rel
        if not p.is_file() or file_sha256(p) != digest:
            return False
    return True


def _digests(out_dir: Path, paths: Iterable[Path]) -> dict[str, str]:
    return {p.relative_to(out_dir).as_posix(): file_sha256(p) for p in sorted(set(paths))}


# --------------------------------------------------------------------------- the stages
# Each stage's work lives with what it produces; these adapters feed it the build's shared inputs.
# Heavy modules are imported only when a stage runs.

def _verify(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.evidence.stage import verify_stage
    from analysis.report.stage import check_evidence_label

    package = inputs.package
    check_evidence_label(inputs.evidence_label)  # the report's YAML holds the path: refuse it now
    return verify_stage(package, inputs.evidence_label)


def _results(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.results.stage import results_stage

    return results_stage(inputs.results, inputs.out_dir)


def _tables(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.tables.registry import tables_stage

    return tables_stage(inputs.context(), inputs.out_dir)


def _figures(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.figures.registry import figures_stage

    return figures_stage(inputs.context(), inputs.out_dir)


def _report(inputs: BuildInputs) -> tuple[list[Path], str]:
    from analysis.report.stage import evidence_summary, report_stage

    summary = evidence_summary(inputs.package, inputs.evidence_dir)
    return report_stage(inputs.out_dir, inputs.results, inputs.params, summary, inputs.estimates)


_STAGE_WORK: dict[str, Callable[[BuildInputs], tuple[list[Path], str]]] = {
    "verify": _verify, "results": _results, "tables": _tables, "figures": _figures, "report": _report}


def run_stage(stage: str, inputs: BuildInputs) -> tuple[list[Path], str]:
    """Run one stage's work on ``inputs`` (no keys, stamp, staging or lock): (paths written, detail)."""
    return _STAGE_WORK[stage](inputs)


# --------------------------------------------------------------------------- the pipeline

def build(
    evidence_dir: Path,
    out_dir: Path,
    params: Any,
    *,
    progress: Progress | None = stderr_progress,
    force: bool = False,
    wait: float = DEFAULT_WAIT_S,
    companions: Sequence[Path] = (),
) -> BuildSummary:
    """Regenerate every output of OUT from the evidence package; skip stages whose inputs are unchanged.

    ``force`` ignores the stamp for skipping (never for ownership). The stages write into a
    staging directory and the new files replace the old ones in one short commit (analysis.outdir):
    a failure or a signal before it leaves OUT as it was. Only files this build writes, or that the
    previous manifest names and this build no longer produces, are replaced or removed. ``wait``
    bounds the wait for another build of the same OUT. ``companions`` names the packages reported
    beside the evidence: at most one, a pilot (``kind = "pilot"`` in its study.toml). Raises
    analysis.evidence.EvidenceError subclasses for a package that fails verification (nothing is
    written then), BuildError for an unusable OUT (CompanionError for a companion that is no pilot),
    BuildInterrupted for SIGINT/SIGTERM (main thread).
    """
    if isinstance(out_dir, str) and not out_dir.strip():
        raise BuildError("--out is empty; pass the output directory (it is created when missing)")
    evidence_dir, out_dir = Path(evidence_dir), Path(out_dir)
    say = progress or (lambda _line: None)
    companions = [Path(c) for c in companions]
    if len(companions) > 1:
        raise BuildError(f"{len(companions)} companions named; the report shows one pilot beside the "
                         "evidence: pass --companion once")
    validate_out(out_dir, [evidence_dir, *companions])
    keys = stage_keys(evidence_dir, params, companions)
    from analysis.plan.report_blocks import mix_design_key, read_design  # issue 13: OUT/design.json

    design_key, design = read_design(out_dir)  # a declared input: read once, keyed on the bytes read
    keys = mix_design_key(keys, design_key)
    package = None
    if not out_dir.exists():  # verify before creating anything: a failing package writes nothing
        from analysis.evidence import load_package

        package = load_package(evidence_dir)  # verified and loaded once: the stages use this one
        out_dir.mkdir(parents=True, exist_ok=True)
    with interruptible(), BuildLock(out_dir, wait, say):
        return _build_locked(evidence_dir, out_dir, params, keys, say, force, companions,
                             package=package, design=design)


def _remove_staging(staging: Path) -> list[int]:
    """Delete the staging tree with signals deferred (a second Ctrl-C must not stop it half way)."""
    with deferred_signals() as pending:
        shutil.rmtree(staging, ignore_errors=True)
    return pending


def _build_locked(evidence_dir: Path, out_dir: Path, params: Any, keys: dict[str, str] | None,
                  say: Progress, force: bool, companions: Sequence[Path], *, package: Any = None,
                  design: Any = None) -> BuildSummary:
    remove_stale_staging(out_dir, say)  # a killed build's staging goes even when nothing is rebuilt
    previous = _read_stamp(out_dir).get("stages", {})
    previous = previous if isinstance(previous, dict) else {}
    stamp = {} if force or keys is None else previous
    todo = [s for s in STAGES if keys is None or not _unchanged(out_dir, stamp.get(s), keys[s])]
    if todo and "verify" not in todo:
        todo.insert(0, "verify")  # any work reads the package, which is verified first
    if not todo:
        for i, stage in enumerate(STAGES, 1):
            say(f"[{i}/{len(STAGES)}] {stage}: unchanged, skipped")
        return BuildSummary(out_dir, (), STAGES)

    staging = new_staging(out_dir, say)
    committed = False
    try:
        new_stamp: dict[str, Any] = {k: v for k, v in stamp.items() if k in STAGES and k not in todo}
        for entry in new_stamp.values():  # later stages read the outputs of skipped ones
            for rel in entry.get("outputs", {}):
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                write_bytes(staging / rel, read_bytes(out_dir / rel))

        from analysis.build.inputs import BuildInputs  # heavy imports only when there is work to do

        inputs = BuildInputs(evidence_dir, staging, params, claims_path=_CLAIMS, package=package, design=design,
                             pilot_dir=companions[0] if companions else None)
        written: list[str] = []
        for i, stage in enumerate(STAGES, 1):
            if stage not in todo:
                say(f"[{i}/{len(STAGES)}] {stage}: unchanged, skipped")
                continue
            t0 = time.perf_counter()
            paths, detail = _STAGE_WORK[stage](inputs)
            digests = _digests(staging, paths)
            written += digests
            new_stamp[stage] = {"key": None if keys is None else keys[stage], "outputs": digests}
            say(f"[{i}/{len(STAGES)}] {stage}: {detail} ({time.perf_counter() - t0:.2f}s)")
        owned = {rel: digest for entry in previous.values() if isinstance(entry, dict)
                 and isinstance(entry.get("outputs"), dict) for rel, digest in entry["outputs"].items()}
        produced = {rel for e in new_stamp.values() for rel in e["outputs"]}
        stale = stale_outputs(out_dir, owned, produced, say)
        _write_stamp(staging, new_stamp)
        with deferred_signals() as pending:
            commit(staging, out_dir, [*written, STAMP_NAME], stale)
            committed = True
        if stale:
            say(f"removed {len(stale)} outputs of an earlier build that this build no longer writes: "
                + ", ".join(stale))
    except BaseException:
        _remove_staging(staging)
        raise
    late = _remove_staging(staging)
    if pending or late:
        raise BuildInterrupted((pending or late)[0], committed=committed)
    return BuildSummary(out_dir, tuple(todo), tuple(s for s in STAGES if s not in todo), tuple(written))


# --------------------------------------------------------------------------- --check

def managed_files(out_dir: Path) -> set[str]:
    """Relative paths of every file under the managed outputs of OUT (Quarto's own output excluded)."""
    found: set[str] = set()
    for name in MANAGED:
        p = out_dir / name
        if p.is_file():
            found.add(name)
        elif p.is_dir():
            for f in p.rglob("*"):
                rel = f.relative_to(out_dir).as_posix()
                if f.is_file() and not any(rel == u or rel.startswith(u + "/") for u in UNMANAGED_REPORT_DIRS):
                    found.add(rel)
    return found


VOLATILE_RESULT_KEYS: tuple[tuple[str, ...], ...] = ()
"""results.json fields ignored by ``check``: none. results.json records no commit, so a clone
rebuilds it byte for byte (the code's identity is ``provenance.code_sha256``)."""


def _comparable(rel: str, data: bytes) -> bytes:
    if rel != "results.json":
        return data
    try:
        doc = loads_json(data, rel)
    except SafeIOError:
        return data
    for path in VOLATILE_RESULT_KEYS:
        node = doc
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return json.dumps(doc, sort_keys=True).encode()


def diff_outputs(expected_dir: Path, actual_dir: Path) -> list[str]:
    """Managed files that differ between two output trees (missing, extra or different bytes)."""
    exp, act = managed_files(expected_dir), managed_files(actual_dir)
    differ = (exp ^ act) | {r for r in exp & act
                            if _comparable(r, read_bytes(expected_dir / r))
                            != _comparable(r, read_bytes(actual_dir / r))}
    return sorted(differ)


def check(evidence_dir: Path, out_dir: Path, params: Any, *, progress: Progress | None = None,
          companions: Sequence[Path] = ()) -> list[str]:
    """Regenerate into a temporary directory and list the committed outputs of OUT that differ.

    An empty list means OUT is exactly what the evidence, params and code produce now.
    """
    tmp = Path(tempfile.mkdtemp(prefix="generate-check-"))
    try:
        build(Path(evidence_dir), tmp, params, progress=progress, force=True, companions=companions)
        out_dir = Path(out_dir)
        if (out_dir / LOCK_FILE).is_file():  # a build of OUT in progress: compare after its commit
            try:
                with BuildLock(out_dir, DEFAULT_WAIT_S, progress or (lambda _line: None)):
                    return diff_outputs(tmp, out_dir)
            except PermissionError:  # a read-only checkout: nothing can be building there
                pass
        return diff_outputs(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def relative_to_cwd(path: Path) -> str:
    """A path as the user would type it from the current directory (for messages)."""
    try:
        return os.path.relpath(path)
    except ValueError:  # pragma: no cover - different drive on Windows
        return str(path)
