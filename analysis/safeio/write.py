"""The write door: every file the package writes goes through these functions.

Method: :func:`write_bytes` writes to a temporary sibling (``mkstemp`` in the same directory, so
the rename is atomic), optionally fsyncs it, and renames it over the target with ``os.replace``;
a reader sees the old file or the new one, never half of one. A symbolic link at the target is
refused (never written through, never silently replaced), so a dangling link cannot create a file
elsewhere. A full disk (ENOSPC, EDQUOT, EFBIG) is one :class:`SafeIOError` line that says nothing
was written and what was kept. :func:`write_json` is strict JSON (``allow_nan=False``: NaN or
Infinity is a SafeIOError naming the file), :func:`write_text` strict UTF-8 (a lone surrogate is
refused), and :func:`check_toml_int` keeps integers a TOML writer emits within 64 bits.
:class:`AppendFile` is the one raw append handle (the runner's ledger), refusing a symbolic link
and reporting a full disk the same way.
"""
from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from analysis.safeio.errors import SafeIOError
from analysis.safeio.read import TOML_INT_MAX, TOML_INT_MIN

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_link(path: str | Path) -> bool:
    """Whether ``path`` itself is a symbolic link (dangling or not)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def refuse_link(path: str | Path) -> None:
    """SafeIOError when ``path`` is a symbolic link: the door never writes through one."""
    if is_link(path):
        raise SafeIOError(path, "is a symbolic link; the package never writes through one. "
                                "Remove the link (or write elsewhere) and run again")


def full_disk(path: str | Path, exc: OSError, kept: str) -> SafeIOError:
    """The one-line error of a full disk while ``path`` was written."""
    return SafeIOError(path, f"the disk is full ({exc.strerror or errno.errorcode.get(exc.errno or 0, '')}): "
                             f"{kept}. Free space and run again")


def write_bytes(path: str | Path, data: bytes, *, mode: int = 0o644, durable: bool = False,
                replace_link: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (temporary sibling, then rename); never through a link.

    ``durable``: fsync the file before the rename (locks, ledgers' companions). ``replace_link``: a
    symbolic link at ``path`` is replaced by the file (the rename replaces the link itself, never its
    target) instead of refused: for a file the package owns by name (provenance.lock).
    """
    path = Path(path)
    if not replace_link:
        refuse_link(path)
    existed = path.exists()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno in _FULL:
            kept = (f"nothing was written, the previous {path.name} is kept unchanged" if existed
                    else f"nothing was written, {path.name} was not created")
            raise full_disk(path, exc, kept) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def encode_text(text: str, path: str | Path) -> bytes:
    """Strict UTF-8 bytes of ``text``; a lone surrogate is a SafeIOError naming ``path``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SafeIOError(path, f"cannot be written: the text holds a lone surrogate "
                                f"({text[exc.start]!a}) at character {exc.start}; it is not Unicode text",
                          text.count("\n", 0, exc.start) + 1) from None


def write_text(path: str | Path, text: str, *, mode: int = 0o644, durable: bool = False) -> None:
    """Write ``text`` as strict UTF-8, atomically (:func:`write_bytes`); newlines as given."""
    write_bytes(path, encode_text(text, path), mode=mode, durable=durable)


def dumps_json(doc: Any, path: str | Path, *, indent: int | None = 2, sort_keys: bool = True,
               ensure_ascii: bool = False, separators: tuple[str, str] | None = None) -> str:
    """Strict JSON text of ``doc`` (no NaN/Infinity, no lone surrogate); SafeIOError naming ``path``."""
    try:
        text = json.dumps(doc, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii,
                          allow_nan=False, separators=separators)
    except ValueError as exc:
        raise SafeIOError(path, f"cannot be written as strict JSON: {exc} (NaN or Infinity); "
                                "write null or a finite number") from None
    except RecursionError:
        raise SafeIOError(path, "cannot be written as JSON: nested too deeply") from None
    encode_text(text, path)
    return text


def write_json(path: str | Path, doc: Any, *, indent: int | None = 2, sort_keys: bool = True,
               ensure_ascii: bool = False, durable: bool = False) -> None:
    """Write ``doc`` as strict JSON with one trailing newline, atomically."""
    text = dumps_json(doc, path, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    write_bytes(path, (text + "\n").encode("utf-8"), durable=durable)


def check_toml_int(value: int, where: str) -> int:
    """``value`` when TOML can hold it (64-bit signed), else SafeIOError naming ``where``."""
    if not TOML_INT_MIN <= value <= TOML_INT_MAX:
        raise SafeIOError(where, f"the integer {value} is outside TOML's 64-bit range "
                                 f"({TOML_INT_MIN}..{TOML_INT_MAX}); use a smaller value")
    return value


class AppendFile:
    """An append-only binary handle (the runner's ledger): refuses a symbolic link, reports a full
    disk as one SafeIOError line (what was kept: every line written before)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        refuse_link(self.path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SafeIOError(self.path, "is a symbolic link; remove it and run again") from None
            raise
        st = os.fstat(self.fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self.fd)
            raise SafeIOError(self.path, "is not a regular file; remove it and run again")

    def write(self, data: bytes) -> None:
        """Append ``data`` whole (a short write is continued)."""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            if exc.errno in _FULL:
                raise full_disk(self.path, exc, "every record written before this one is kept; "
                                                "the last line may be torn and is dropped on resume") from None
            raise

    def size(self) -> int:
        """Bytes in the file now."""
        return os.fstat(self.fd).st_size

    def cut(self, size: int) -> None:
        """Truncate the file to ``size`` bytes and fsync (a ledger's torn tail, already set aside)."""
        os.ftruncate(self.fd, size)
        self.sync()

    def sync(self) -> None:
        """fsync the file."""
        try:
            os.fsync(self.fd)
        except OSError as exc:
            if exc.errno in _FULL:
                raise full_disk(self.path, exc, "every record written before is kept") from None
            raise

    def close(self) -> None:
        """Close the handle (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
