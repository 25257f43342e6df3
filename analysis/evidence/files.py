"""The one way evidence files are opened: regular files inside the package, bounded in size.

Method: the name is checked as a plain relative path; its parent directories and the file
are resolved (``os.path.realpath``, which never raises on a link loop), and the result must
lie inside the resolved package directory, so a symbolic link that leads out of the package
is refused while one inside it is followed. ``os.stat`` must report a regular file (not a
device, FIFO, socket or directory) no larger than the file's limit; the file is then opened
with ``O_NONBLOCK`` (a FIFO swapped in after the check still cannot block the open), checked
again with ``fstat`` on the open descriptor, and read to at most ``limit + 1`` bytes, so a
file that grows while it is read is refused too. Every refusal is an :class:`UnsafeFileError`
whose message says the fix.

Size limits (documented in docs/EVIDENCE_FORMAT.md): provenance.lock 4 MiB, study.toml 2 MiB,
every other file (rows.csv, checks.csv, folds.jsonl, extra locked files) 1 GiB.
"""
from __future__ import annotations

import errno
import hashlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from analysis.safeio.read import bounded_chunks, stat_problem

from .errors import Problem, ProvenanceError

MiB = 1 << 20
LOCK_LIMIT = 4 * MiB
"""Largest provenance.lock read."""
STUDY_LIMIT = 2 * MiB
"""Largest study.toml read."""
DATA_LIMIT = 1024 * MiB
"""Largest rows.csv, checks.csv, folds.jsonl or other locked file read (1 GiB)."""
LIMITS: dict[str, int] = {"provenance.lock": LOCK_LIMIT, "study.toml": STUDY_LIMIT}
_CHUNK = 8 * MiB


class UnsafeFileError(ProvenanceError):
    """A file of the package is not a regular file inside it, or is too large to read.

    A :class:`ProvenanceError` (an EvidenceError): the package cannot be verified, nothing is parsed.
    """

    summary = "an evidence file cannot be read safely, nothing was read"
    fix = ("keep only regular files inside the package directory (copy linked files in, "
           "no devices or pipes), within the size limits of the format ({format})")


def limit_for(name: str) -> int:
    """The size limit of the file ``name`` (relative to the package)."""
    return LIMITS.get(name, DATA_LIMIT)


def _size(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def _unsafe(name: str, message: str) -> UnsafeFileError:
    return UnsafeFileError([Problem(name, None, None, message)])


def _bad_relative(name: str) -> bool:
    if not name or "\\" in name or "\x00" in name:
        return True
    return PurePosixPath(name).is_absolute() or any(p in ("", ".", "..") for p in name.split("/"))


def safe_path(package_dir: str | Path, name: str) -> Path:
    """The resolved path of ``name`` inside the package, or UnsafeFileError (no file is opened).

    FileNotFoundError when the name resolves inside the package but nothing is there.
    """
    if _bad_relative(name):
        raise _unsafe(name, "is not a plain relative path inside the package "
                            "(no '..', '.', '\\' or leading '/'); name a file inside the package")
    root = os.path.realpath(package_dir)
    target = os.path.realpath(os.path.join(root, *name.split("/")))
    if os.path.commonpath([root, target]) != root:
        raise _unsafe(name, "is a link that leads outside the package (or a link loop); "
                            "copy the file into the package instead")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _unsafe(name, "is a symbolic link loop; replace it with the file") from None
        if exc.errno == errno.ENOTDIR:
            raise FileNotFoundError(name) from None
        raise _unsafe(name, f"cannot be inspected ({exc.strerror}); check its permissions") from None
    _check_stat(name, st)
    return Path(target)


def _check_stat(name: str, st: os.stat_result, limit: int | None = None) -> None:
    try:
        why = stat_problem(st, limit)  # the door's checks (analysis.safeio), the evidence wording
    except IsADirectoryError:
        raise IsADirectoryError(name) from None
    if why is None:
        return
    fix = "split or shorten it" if "above the limit" in why else "put the file's contents in the package"
    raise _unsafe(name, f"{why}; {fix}")


def read_evidence_file(package_dir: str | Path, name: str, limit_bytes: int | None = None) -> bytes:
    """The bytes of the regular file ``name`` inside the package, at most ``limit_bytes`` long.

    Raises UnsafeFileError (outside the package, link loop, device, FIFO, too large),
    FileNotFoundError (nothing there) or IsADirectoryError (a directory).
    """
    chunks = list(iter_evidence_file(package_dir, name, limit_bytes, first=None))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk: no second copy


def sha256_evidence_file(package_dir: str | Path, name: str, limit_bytes: int | None = None) -> str:
    """SHA-256 (lowercase hex) of a file of the package, read in chunks under the same checks."""
    h = hashlib.sha256()
    for chunk in iter_evidence_file(package_dir, name, limit_bytes):
        h.update(chunk)
    return h.hexdigest()


def hash_evidence_file(package_dir: str | Path, name: str, keep_upto: int,
                       limit_bytes: int | None = None) -> tuple[str, int, bytes | None]:
    """(SHA-256, size, bytes or None) of a file of the package, read once in chunks.

    The bytes are returned, exactly the ones hashed, when the file is at most ``keep_upto`` bytes
    long; a larger file is hashed without being held (its bytes are never parsed). The checks and
    errors of :func:`read_evidence_file`.
    """
    h = hashlib.sha256()
    kept: list[bytes] | None = []
    size = 0
    for chunk in iter_evidence_file(package_dir, name, limit_bytes):
        h.update(chunk)
        size += len(chunk)
        if kept is not None and size <= keep_upto:
            kept.append(chunk)
        else:
            kept = None
    data = None if kept is None else kept[0] if len(kept) == 1 else b"".join(kept)
    return h.hexdigest(), size, data


def _open(package_dir: str | Path, name: str, limit: int) -> tuple[int, int]:
    """A checked, open descriptor of ``name`` and its size (the checks of the module docstring)."""
    path = safe_path(package_dir, name)
    _check_stat(name, os.stat(path), limit)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise _unsafe(name, f"cannot be opened ({exc.strerror}); make it a readable regular file") from None
    try:
        st = os.fstat(fd)
        _check_stat(name, st, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def _bounded_chunks(fd: int, name: str, total: int, limit: int, want: int) -> Iterator[bytes]:
    """Chunks read from ``fd`` (``total`` bytes already read, the first chunk up to ``want``) until
    end of file; UnsafeFileError once the file passes ``limit`` (it grew while it was read)."""
    yield from bounded_chunks(fd, total, limit, want, lambda: _unsafe(
        name, f"grew above the limit of {_size(limit)} while it was read; split or shorten it"))


def iter_evidence_file(package_dir: str | Path, name: str, limit_bytes: int | None = None,
                       first: int | None = _CHUNK) -> Iterator[bytes]:
    """The bytes of a file of the package in chunks (the checks of :func:`read_evidence_file`).

    ``first``: size of the first chunk; None reads the whole file (as its size was when
    opened) in the first chunk, so a file that does not grow is one bytes object.
    """
    limit = limit_for(name) if limit_bytes is None else limit_bytes
    fd, size = _open(package_dir, name, limit)
    try:
        yield from _bounded_chunks(fd, name, 0, limit, size + 1 if first is None else first)
    except BlockingIOError:
        raise _unsafe(name, "would block when read; make it a regular file") from None
    finally:
        os.close(fd)


def read_evidence_buffer(package_dir: str | Path, name: str,
                         limit_bytes: int | None = None) -> tuple[memoryview, str]:
    """The bytes of a file of the package, read once, and their SHA-256, computed while reading.

    The bytes lie in one private anonymous memory map (no other process can change them), returned
    as a read-only memoryview: the digest is of exactly these bytes, so a parser that reads the view
    reads what was hashed. A parser may give consumed pages back with :func:`release_prefix`.
    The checks and errors of :func:`read_evidence_file`.
    """
    limit = limit_for(name) if limit_bytes is None else limit_bytes
    fd, size = _open(package_dir, name, limit)
    h = hashlib.sha256()
    try:
        # private (not shared even with a forked child); one spare byte: a file that grew fills it
        buf = mmap.mmap(-1, size + 1, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        view = memoryview(buf)
        total = 0
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            while total <= size:
                got = f.readinto(view[total:min(size + 1, total + _CHUNK)])
                if got is None:
                    raise _unsafe(name, "would block when read; make it a regular file")
                if not got:
                    break
                h.update(view[total:total + got])
                total += got
            if total <= size:
                return view[:total].toreadonly(), h.hexdigest()
            rest = [bytes(view[:total])]  # the file grew while it was read: rare, copy as before
            view.release()
            for chunk in _bounded_chunks(fd, name, total, limit, _CHUNK):
                h.update(chunk)
                rest.append(chunk)
        return memoryview(b"".join(rest)), h.hexdigest()
    except BlockingIOError:
        raise _unsafe(name, "would block when read; make it a regular file") from None
    finally:
        os.close(fd)


def release_prefix(view: memoryview, upto: int) -> None:
    """Give back to the system the whole pages of ``view``'s memory map below byte ``upto``.

    For a view from :func:`read_evidence_buffer` whose bytes before ``upto`` were consumed: those
    pages read as zeros afterwards, so only the parser that consumed them may call this. A no-op
    for any other buffer.
    """
    buf = view.obj
    if isinstance(buf, mmap.mmap) and hasattr(buf, "madvise"):
        length = (min(upto, len(view)) // mmap.PAGESIZE) * mmap.PAGESIZE
        if length > 0:
            buf.madvise(mmap.MADV_DONTNEED, 0, length)
