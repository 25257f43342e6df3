"""What a build may do to its output directory OUT, and how new outputs replace old ones.

Methods note (analysis.pipeline uses these; nothing here computes an output):

- :func:`validate_out`: OUT is a directory path, never equal to or inside an evidence package,
  no evidence package lies inside OUT's managed outputs, and no managed output is a symlink.
- :class:`BuildLock`: ``fcntl.flock`` on ``OUT/.build.lock`` serialises builds of one OUT. A
  second build prints ``waiting for another build of OUT (pid N)...`` and waits up to ``wait``
  seconds, then stops with :class:`BuildError` (exit 1). The file holds the holder's pid while
  it is held and is emptied on release, so a finished build leaves it empty.
- Staging: the stages write into ``OUT/.build-staging-XXXX`` (inside OUT, so on its filesystem
  and renames are atomic); :func:`commit` moves each staged file into place with ``os.replace``,
  moving the file it replaces aside first, and rolls everything back if one move fails.
  SIGINT and SIGTERM are deferred during the commit (:func:`deferred_signals`); before it they
  raise :class:`BuildInterrupted` (:func:`interruptible`) and OUT is untouched.
- Ownership: the manifest (the outputs recorded per stage in ``.build-stamp.json``) names the
  files earlier builds wrote. A build overwrites the files it writes, by name, and removes a
  manifest file it no longer produces only while its bytes are still the recorded ones
  (:func:`stale_outputs`). Nothing else under OUT is ever deleted; Quarto's own files
  (:data:`QUARTO_OWN`) are never touched. With no stamp (a fresh clone) nothing is removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Self

from analysis.digest import file_sha256
from analysis.safeio.lock import DirLock

LOCK_FILE = ".build.lock"
STAGING_PREFIX = ".build-staging-"
MANAGED: tuple[str, ...] = ("results.json", "tables", "figures", "report")
"""Output paths (relative to OUT) that the build writes and ``check`` compares."""
QUARTO_OWN: tuple[str, ...] = ("report/_quarto", "report/.quarto", "report/index_files",
                               "report/manuscript.html")
"""Quarto's own files and render output inside report/: never written, removed or compared."""
DEFAULT_WAIT_S = 600.0
"""How long a build waits for another build of the same OUT before giving up."""
_ASIDE = ".replaced"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class BuildError(RuntimeError):
    """The build cannot proceed; the message says what to fix."""


class OutUsageError(BuildError):
    """--out names a directory the build may not use (a file, the evidence package or inside it): bad
    usage, exit status 2 on the command line; the message says which --out to pass instead."""


class BuildInterrupted(BaseException):
    """SIGINT or SIGTERM stopped the build (a BaseException, like KeyboardInterrupt).

    ``committed`` is False when OUT was left exactly as it was, True when the signal came during
    the short commit phase, which was completed first (OUT then holds the complete new build).
    """

    def __init__(self, signum: int, committed: bool = False) -> None:
        super().__init__(signum, committed)
        self.signum = int(signum)
        self.committed = committed

    @property
    def exit_status(self) -> int:
        """The shell convention for death by a signal: 128 + its number (130 SIGINT, 143 SIGTERM)."""
        return 128 + self.signum

    def message(self, out: str) -> str:
        """One line for the terminal."""
        name = signal.Signals(self.signum).name
        if self.committed:
            return f"interrupted ({name}) after the new outputs were in place: {out} holds the complete build"
        return f"interrupted ({name}): {out} was left as it was"


# --------------------------------------------------------------------------- signals

def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)


@contextmanager
def interruptible() -> Iterator[None]:
    """Inside the block SIGINT and SIGTERM raise BuildInterrupted (main thread only, else a no-op)."""
    if not _in_main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        raise BuildInterrupted(signum)

    previous = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        _restore(previous)


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """Inside the block SIGINT and SIGTERM are only recorded; the yielded list names them.

    The caller decides what a recorded signal means once the block is done.
    """
    pending: list[int] = []
    if not _in_main_thread():
        yield pending
        return
    previous = {s: signal.signal(s, lambda signum, _frame: pending.append(signum)) for s in _SIGNALS}
    try:
        yield pending
    finally:
        _restore(previous)


# --------------------------------------------------------------------------- validation

def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def validate_out(out_dir: Path, inputs: Iterable[Path]) -> None:
    """Refuse an OUT the build must not write: a file, an evidence package (or inside one), an OUT
    whose managed outputs hold an evidence package, or one whose managed outputs are symlinks."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutUsageError(f"--out {out_dir} is a file; pass a directory (it is created when missing)")
    real_out = _real(out_dir)
    for source in inputs:
        real_in = _real(source)
        if _within(real_out, real_in):
            raise OutUsageError(f"--out {out_dir} is the evidence package {source} or lies inside it; "
                             "outputs there could overwrite its files. Pass an OUT outside the package")
        for name in MANAGED:
            if _within(real_in, real_out / name):
                raise OutUsageError(f"the evidence package {source} lies inside {out_dir / name}, which "
                                 "the build writes; move the package or pass another --out")
    for name in MANAGED:
        if (out_dir / name).is_symlink():
            raise BuildError(f"{out_dir / name} is a symbolic link; the build writes only inside OUT. "
                             "Replace the link by a directory (or file) or pass another --out")


def validate_target(root: Path, parts: Sequence[str]) -> Path:
    """``root`` joined with ``parts``, refused (BuildError) when any of its components below ``root`` is a
    symbolic link or resolves outside ``root``: the output-directory safety of the build (validate_out) for a
    writer that targets a path inside a directory (``regenerate``: docs, golden tables). Nothing is created."""
    target = Path(root)
    for part in parts:
        target = target / part
        if target.is_symlink():
            raise BuildError(f"{target} is a symbolic link; regenerate writes only inside {root}. "
                             "Replace the link by a directory (or file) and run again")
    if target.exists() and not _within(_real(target), _real(root)):
        raise BuildError(f"{target} resolves outside {root}; regenerate writes only inside it")
    return target


# --------------------------------------------------------------------------- the lock

class BuildLock:
    """An exclusive ``flock`` on OUT/.build.lock, waited for up to ``wait`` seconds."""

    def __init__(self, out_dir: Path, wait: float = DEFAULT_WAIT_S,
                 say: Callable[[str], None] = lambda _line: None, poll: float = 0.2) -> None:
        self.out_dir, self.wait, self.say, self.poll = out_dir, max(0.0, float(wait)), say, poll

        def busy(holder: str, waited: float) -> BaseException:
            after = f" after {waited:g} s of waiting" if waited else ""
            return BuildError(f"another build of {out_dir} ({holder}) is still running{after}; "
                              "let it finish and run again, or pass --wait SECONDS to wait for it")

        def waiting(holder: str) -> None:
            say(f"waiting for another build of {out_dir} ({holder}) to finish, up to {self.wait:g} s...")

        self._lock = DirLock(out_dir / LOCK_FILE, self.wait, on_wait=waiting, on_busy=busy, poll=poll)

    def __enter__(self) -> Self:
        self._lock.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


# --------------------------------------------------------------------------- staging and commit

def remove_stale_staging(out_dir: Path, say: Callable[[str], None]) -> None:
    """Remove staging directories left by a killed build (call while holding the lock), even when
    this build then has nothing to do."""
    for old in sorted(out_dir.glob(STAGING_PREFIX + "*")):
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
            say(f"removed {old.name}, the staging directory of a build that was killed")


def new_staging(out_dir: Path, say: Callable[[str], None]) -> Path:
    """A fresh staging directory inside OUT; staging left by a killed build (we hold the lock) goes."""
    remove_stale_staging(out_dir, say)
    import tempfile

    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))


def is_managed_rel(rel: str) -> bool:
    """Whether ``rel`` (POSIX, relative to OUT) names a file the build may write or remove."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        return False
    if p.parts[0] not in MANAGED or (p.parts[0] == "results.json" and len(p.parts) > 1):
        return False
    if p.parts[0] != "results.json" and len(p.parts) < 2:
        return False
    return not any(rel == q or rel.startswith(q + "/") for q in QUARTO_OWN)


def _inside_without_links(out_dir: Path, rel: str) -> bool:
    """``OUT/rel`` reached without following a symlink in any directory component."""
    parent = Path(os.path.realpath(out_dir)).joinpath(*PurePosixPath(rel).parts[:-1])
    return Path(os.path.realpath((out_dir / rel).parent)) == parent




def stale_outputs(out_dir: Path, previous: Mapping[str, object], produced: Iterable[str],
                  say: Callable[[str], None]) -> list[str]:
    """Files of the previous manifest this build no longer produces and may remove.

    Only a regular file under a managed output, reached without symlinks, whose bytes are still
    the recorded ones; a file changed since its build wrote it is kept (and named).
    """
    made = set(produced)
    stale = []
    for rel, digest in sorted(previous.items()):
        if rel in made or not isinstance(digest, str) or not is_managed_rel(rel):
            continue
        path = out_dir / rel
        if path.is_symlink() or not path.is_file() or not _inside_without_links(out_dir, rel):
            continue
        if file_sha256(path) != digest:
            say(f"kept {rel}: an earlier build wrote it but it was changed since; delete it yourself "
                "if it is not yours")
            continue
        stale.append(rel)
    return stale


def _preflight(out_dir: Path, files: Iterable[str]) -> None:
    for rel in files:
        dest = out_dir / rel
        if dest.is_dir() and not dest.is_symlink():
            raise BuildError(f"{dest} is a directory, but the build writes a file there; move it away")
        for parent in dest.relative_to(out_dir).parents:
            here = out_dir / parent
            if parent != Path(".") and (here.is_symlink() or (here.exists() and not here.is_dir())):
                raise BuildError(f"{here} is not a directory, but the build writes {rel} below it; "
                                 "move it away")


def commit(staging: Path, out_dir: Path, files: list[str], stale: list[str]) -> None:
    """Move the staged ``files`` into OUT and the ``stale`` ones out of it: all of it or none.

    Each replaced or removed file is first moved aside into the staging directory; if any move
    fails, every step is undone in reverse order and the error propagates. Call it inside
    :func:`deferred_signals`.
    """
    _preflight(out_dir, files)
    aside = staging / _ASIDE
    steps: list[tuple[str, str]] = []  # ("aside" | "placed", rel), in order

    def move_aside(rel: str) -> None:
        (aside / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(out_dir / rel, aside / rel)
        steps.append(("aside", rel))

    try:
        for rel in stale:
            move_aside(rel)
        for rel in files:
            dest = out_dir / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.exists() or dest.is_symlink():
                move_aside(rel)
            os.replace(staging / rel, dest)
            steps.append(("placed", rel))
    except BaseException:
        for kind, rel in reversed(steps):
            try:
                if kind == "placed":
                    os.unlink(out_dir / rel)
                else:
                    os.replace(aside / rel, out_dir / rel)
            except OSError:  # pragma: no cover - best effort: the original error is the one to report
                pass
        raise
    for rel in stale:  # directories below a managed output left empty by a removal
        parent = (out_dir / rel).parent
        while parent != out_dir and parent.parent != out_dir:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
