"""The build pipeline: decide which stages run (content keys, the stamp), run them into a staging
directory inside OUT, and commit their outputs in one short step under the OUT lock.

Safety of OUT (analysis.outdir): stages write into a staging directory inside OUT, and the new files
replace the old ones in one short commit with SIGINT/SIGTERM deferred; the build replaces or removes
only files it writes or that the manifest says an earlier build wrote, never a user's own file.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.outdir import (
    DEFAULT_WAIT_S,
    BuildError,
    BuildInterrupted,
    BuildLock,
    commit,
    deferred_signals,
    interruptible,
    new_staging,
    remove_stale_staging,
    stale_outputs,
    validate_out,
)
from analysis.pipeline.keys import CLAIMS, STAGES, keys_of
from analysis.pipeline.stages import STAGE_WORK
from analysis.pipeline.stamp import STAMP_NAME, digests, read_stamp, unchanged, write_stamp
from analysis.safeio import read_bytes, write_bytes

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


def build(
    evidence_dir: Path,
    out_dir: Path,
    params: Any,
    *,
    progress: Progress | None = stderr_progress,
    force: bool = False,
    wait: float = DEFAULT_WAIT_S,
    companions: Sequence[Path] = (),
    pointers: Sequence[Path] = (),
) -> BuildSummary:
    """Regenerate every output of OUT from the evidence package; skip stages whose inputs are unchanged.

    ``force`` ignores the stamp for skipping (never for ownership). The stages write into a
    staging directory and the new files replace the old ones in one short commit (analysis.outdir):
    a failure or a signal before it leaves OUT as it was. Only files this build writes, or that the
    previous manifest names and this build no longer produces, are replaced or removed. ``wait``
    bounds the wait for another build of the same OUT. ``companions`` names the packages reported
    beside the evidence: at most one, a pilot (``kind = "pilot"`` in its study.toml); ``pointers`` a
    pilot the report only points to, with its headline counts (without a companion; issue 30). Raises
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
    pointers = [Path(p) for p in pointers][:1] if not companions else []
    from analysis.evidence import verify_files

    package = None
    if not out_dir.exists():  # verify and parse before creating anything: a failing package writes nothing
        from analysis.evidence.package import parse_verified

        package = parse_verified(evidence_dir, verify_files(evidence_dir))  # read once: the stages use it
        out_dir.mkdir(parents=True, exist_ok=True)
    with interruptible(), BuildLock(out_dir, wait, say):
        # under OUT's lock: every input is read once, here, and the stage keys are of those bytes
        # (a package swapped while this build waited is the one keyed, verified and parsed)
        held = VerifiedInputs.read(evidence_dir, companions, package, pointers)
        del package
        from analysis.plan.report_blocks import mix_design_key, read_design  # issue 13: OUT/design.json

        design_key, design = read_design(out_dir)  # a declared input: read once, keyed on the bytes read
        keys = mix_design_key(keys_of(held.evidence_key, params, held.companion_keys, held.fixtures.by_digest,
                                      held.pointer_keys), design_key)
        return _build_locked(_Build(evidence_dir, out_dir, params, keys, say, force, companions,
                                    held=[held], design=design, pointers=pointers))


@dataclass(slots=True)
class VerifiedInputs:
    """What a build reads of its inputs, once, under OUT's lock: the evidence's verified bytes, the
    companions' (or why one failed) and the committed fixtures; the stage keys are computed from them."""

    evidence: Any
    """analysis.evidence.provenance.VerifiedFiles of the evidence package, or the EvidencePackage parsed
    from them (a build into a missing OUT verifies and parses before creating it)."""
    evidence_key: str
    """Its content key (analysis.evidence.provenance.content_key of the verified digests)."""
    companions: list[Any]
    """Per companion: its VerifiedFiles, or the EvidenceError its verification raised."""
    companion_keys: list[str | None]
    """Per companion: its content key, None when it failed verification."""
    fixtures: Any
    """analysis.evidence.folds.FixtureLibrary: the committed fixtures, read once."""
    pointers: list[Any]
    """Per pilot the report only points to (issue 30): its VerifiedFiles, or the EvidenceError raised."""
    pointer_keys: list[str | None]
    """Per pointed-to pilot: its content key, None when it failed verification."""

    @classmethod
    def read(cls, evidence_dir: Path, companions: Sequence[Path], package: Any = None,
             pointers: Sequence[Path] = ()) -> VerifiedInputs:
        """Verify (read once) the evidence unless its ``package`` is given, the companions, the pilots the
        report points to and the fixtures."""
        from analysis.evidence import EvidenceError, verify_files
        from analysis.evidence.folds import load_fixture_library
        from analysis.evidence.provenance import content_key

        def verify_each(dirs: Sequence[Path]) -> tuple[list[Any], list[str | None]]:
            done: list[Any] = []
            keys: list[str | None] = []
            for d in dirs:
                try:
                    got = verify_files(d)
                except EvidenceError as exc:  # raised only if the build needs it (its key forces a rerun)
                    done.append(exc)
                    keys.append(None)
                    continue
                done.append(got)
                keys.append(content_key(got.digests, got.digests))
            return done, keys

        ev = package if package is not None else verify_files(evidence_dir)
        done, keys = verify_each(companions)
        pointed, pointer_keys = verify_each(pointers)
        return cls(ev, content_key(ev.digests, ev.digests), done, keys, load_fixture_library(), pointed,
                   pointer_keys)


def _remove_staging(staging: Path) -> list[int]:
    """Delete the staging tree with signals deferred (a second Ctrl-C must not stop it half way)."""
    with deferred_signals() as pending:
        shutil.rmtree(staging, ignore_errors=True)
    return pending


@dataclass(frozen=True, slots=True)
class _Build:
    """One build's inputs, handed from build() to the work under OUT's lock."""

    evidence_dir: Path
    """The evidence package."""
    out_dir: Path
    """The output directory (locked)."""
    params: Any
    """Analysis parameters."""
    keys: dict[str, str] | None
    """Stage -> content key (None: every stage runs, unkeyed)."""
    say: Progress
    """Progress sink."""
    force: bool
    """Ignore the stamp for skipping."""
    companions: Sequence[Path]
    """The companion package (at most one, a pilot)."""
    held: list[VerifiedInputs]
    """One VerifiedInputs, handed on (and so released) by BuildInputs."""
    design: Any = None
    """OUT/design.json as read under the lock (issue 13), or None."""
    pointers: Sequence[Path] = ()
    """A pilot the report only points to (at most one)."""


def _build_locked(b: _Build) -> BuildSummary:
    """The build under OUT's lock: pick the stages to run, run them into staging, commit their outputs."""
    remove_stale_staging(b.out_dir, b.say)  # a killed build's staging goes even when nothing is rebuilt
    previous = read_stamp(b.out_dir).get("stages", {})
    previous = previous if isinstance(previous, dict) else {}
    stamp = {} if b.force or b.keys is None else previous
    todo = _stages_to_run(b, stamp)
    if not todo:
        for i, stage in enumerate(STAGES, 1):
            b.say(f"[{i}/{len(STAGES)}] {stage}: unchanged, skipped")
        return BuildSummary(b.out_dir, (), STAGES)

    staging = new_staging(b.out_dir, b.say)
    try:
        new_stamp: dict[str, Any] = {k: v for k, v in stamp.items() if k in STAGES and k not in todo}
        _copy_skipped_outputs(new_stamp, b.out_dir, staging)
        written = _run_stages(b, todo, staging, new_stamp)
        pending = _commit_outputs(b, previous, new_stamp, staging, written)
    except BaseException:
        _remove_staging(staging)
        raise
    late = _remove_staging(staging)
    if pending or late:  # the commit is done: a signal during it or the clean-up stops the command after it
        raise BuildInterrupted((pending or late)[0], committed=True)
    return BuildSummary(b.out_dir, tuple(todo), tuple(s for s in STAGES if s not in todo), tuple(written))


def _stages_to_run(b: _Build, stamp: dict[str, Any]) -> list[str]:
    """Stages whose key or outputs changed since the stamp (every stage when unkeyed); verify first if any."""
    todo = [s for s in STAGES if b.keys is None or not unchanged(b.out_dir, stamp.get(s), b.keys[s])]
    if todo and "verify" not in todo:
        todo.insert(0, "verify")  # any work reads the package, which is verified first
    return todo


def _copy_skipped_outputs(new_stamp: dict[str, Any], out_dir: Path, staging: Path) -> None:
    """Copy the skipped stages' outputs into staging: later stages read them."""
    for entry in new_stamp.values():
        for rel in entry.get("outputs", {}):
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            write_bytes(staging / rel, read_bytes(out_dir / rel))


def _run_stages(b: _Build, todo: Sequence[str], staging: Path, new_stamp: dict[str, Any]) -> list[str]:
    """Run the stages in ``todo`` into staging, one progress line per stage; their outputs, stamped."""
    from analysis.evidence.model import EvidencePackage
    from analysis.pipeline.inputs import BuildInputs  # heavy imports only when there is work to do

    got = b.held.pop()
    parsed = got.evidence if isinstance(got.evidence, EvidencePackage) else None
    inputs = BuildInputs(b.evidence_dir, staging, b.params, claims_path=CLAIMS, design=b.design, package=parsed,
                         pilot_dir=b.companions[0] if b.companions else None,
                         verified=None if parsed is not None else got.evidence,
                         pilot_verified=got.companions[0] if got.companions else None,
                         fixtures=got.fixtures, pointer_dir=b.pointers[0] if b.pointers else None,
                         pointer_verified=got.pointers[0] if got.pointers else None)
    written: list[str] = []
    for i, stage in enumerate(STAGES, 1):
        if stage not in todo:
            b.say(f"[{i}/{len(STAGES)}] {stage}: unchanged, skipped")
            continue
        t0 = time.perf_counter()
        paths, detail = STAGE_WORK[stage](inputs)
        outputs = digests(staging, paths)
        written += outputs
        new_stamp[stage] = {"key": None if b.keys is None else b.keys[stage], "outputs": outputs}
        b.say(f"[{i}/{len(STAGES)}] {stage}: {detail} ({time.perf_counter() - t0:.2f}s)")
    return written


def _commit_outputs(b: _Build, previous: dict[str, Any], new_stamp: dict[str, Any], staging: Path,
                    written: list[str]) -> list[int]:
    """Write the stamp and commit staging into OUT (signals deferred), removing the earlier build's outputs
    this one no longer writes; the signals that arrived during the commit."""
    owned = {rel: digest for entry in previous.values() if isinstance(entry, dict)
             and isinstance(entry.get("outputs"), dict) for rel, digest in entry["outputs"].items()}
    produced = {rel for e in new_stamp.values() for rel in e["outputs"]}
    stale = stale_outputs(b.out_dir, owned, produced, b.say)
    write_stamp(staging, new_stamp)
    with deferred_signals() as pending:
        commit(staging, b.out_dir, [*written, STAMP_NAME], stale)
    if stale:
        b.say(f"removed {len(stale)} outputs of an earlier build that this build no longer writes: "
              + ", ".join(stale))
    return pending
