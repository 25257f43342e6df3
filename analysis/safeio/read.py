"""The read door: every file the package reads goes through one function per format.

Method (each function): the path must name a regular file (no FIFO, device, socket or
directory); with ``root`` given, the resolved path must lie inside the resolved root, so a
symbolic link that leaves it is refused. The file is opened with ``O_NONBLOCK`` (a FIFO swapped in
after the check cannot block the open) and checked again with ``fstat`` on the descriptor, then
read to at most ``limit + 1`` bytes, so a file over its limit (or one that grows past it) is
refused without reading it whole. Text is decoded as strict UTF-8 (no lone surrogates: the codec
refuses encoded ones, and the JSON door refuses ``\\ud800`` escapes); JSON and TOML nesting is
measured before the parser runs (:mod:`analysis.safeio.depth`); NaN and Infinity are refused
unless ``allow_nan``; TOML integers must fit 64 bits. Every refusal is one
:class:`~analysis.safeio.errors.SafeIOError` naming the file (and line where there is one).
FileNotFoundError and IsADirectoryError pass through unchanged: callers decide what a missing
file means.

Limits (bytes): :data:`LIMITS` per kind; a caller may pass a smaller or larger ``limit``.
"""
from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from analysis.safeio.depth import MAX_KEY_PARTS, json_depth, toml_depth, toml_key_parts
from analysis.safeio.errors import SafeIOError

MiB = 1 << 20
LIMITS: dict[str, int] = {
    "bytes": 1024 * MiB, "text": 16 * MiB, "json": 64 * MiB, "jsonl": 1024 * MiB,
    "toml": 4 * MiB, "csv": 256 * MiB,
}
"""Default largest file read per kind (bytes)."""
LINE_LIMIT = 64 * MiB
"""Longest single line of a JSONL file."""
JSON_DEPTH = 64
"""Deepest nesting of arrays/objects accepted by the JSON doors (evidence files use 32)."""
TOML_DEPTH = 32
"""Deepest nesting of arrays/inline tables accepted by the TOML door."""
TOML_INT_MIN, TOML_INT_MAX = -(1 << 63), (1 << 63) - 1
"""The integers TOML can hold (64-bit signed)."""
CHUNK = 8 * MiB
_SURROGATE_ESCAPE = re.compile(rb"\\[uU][dD][89a-fA-F]")
_SURROGATE_ESCAPE_TEXT = re.compile(r"\\[uU][dD][89a-fA-F]")
_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)")


def size_text(n: int) -> str:
    """A size for a message (``4 MiB`` or ``123 bytes``)."""
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def stat_problem(st: os.stat_result, limit: int | None = None) -> str | None:
    """Why a file with this stat may not be read (the generic core of a message), or None.

    Raises IsADirectoryError for a directory (callers decide what that means).
    """
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        return f"is {kind}, not a regular file"
    if limit is not None and st.st_size > limit:
        return f"is {size_text(st.st_size)}, above the limit of {size_text(limit)} for this file"
    return None


def inside(root: str | Path, path: str | Path) -> bool:
    """Whether ``path``, with every link resolved, lies inside ``root`` (resolved too)."""
    base = os.path.realpath(root)
    target = os.path.realpath(path)
    return os.path.commonpath([base, target]) == base


_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | Path, limit: int, *, root: str | Path | None = None,
                 follow: bool = True) -> tuple[int, int]:
    """An open, checked read descriptor of a regular file and its size (the module's checks).

    The caller closes the descriptor. ``follow=False`` refuses a symbolic link as the last part.
    """
    if root is not None and not inside(root, path):
        raise SafeIOError(path, f"is a link that leads outside {root} (or a link loop); "
                                "copy the file in instead")
    flags = _FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.stat(path)
        why = stat_problem(st, limit)
        if why:
            raise SafeIOError(path, f"{why}; name a regular file within the limit")
        fd = os.open(path, flags)
    except (FileNotFoundError, IsADirectoryError):
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SafeIOError(path, "is a symbolic link (or a link loop); name the file itself") from None
        if exc.errno == errno.ENOTDIR:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path)) from None
        raise SafeIOError(path, f"cannot be opened ({exc.strerror}); make it a readable regular file") from None
    try:
        st = os.fstat(fd)
        why = stat_problem(st, limit)
        if why:
            raise SafeIOError(path, f"{why}; name a regular file within the limit")
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def bounded_chunks(fd: int, total: int, limit: int, want: int,
                   too_big: Callable[[], Exception]) -> Iterator[bytes]:
    """Chunks read from ``fd`` (``total`` bytes already read, the first chunk up to ``want``) until end
    of file; ``too_big()`` is raised once more than ``limit`` bytes were read (the file grew)."""
    while True:
        chunk = os.read(fd, min(want, limit + 1 - total))
        want = CHUNK
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise too_big()
        yield chunk


def iter_chunks(path: str | Path, limit: int, *, root: str | Path | None = None,
                first: int | None = CHUNK) -> Iterator[bytes]:
    """The bytes of a regular file in chunks, never more than ``limit`` in all."""
    fd, size = open_regular(path, limit, root=root)
    try:
        yield from bounded_chunks(fd, 0, limit, size + 1 if first is None else first, lambda: SafeIOError(
            path, f"grew above the limit of {size_text(limit)} while it was read"))
    except BlockingIOError:
        raise SafeIOError(path, "would block when read; make it a regular file") from None
    finally:
        os.close(fd)


def read_bytes(path: str | Path, *, limit: int | None = None, root: str | Path | None = None) -> bytes:
    """The bytes of a regular file, at most ``limit`` (default :data:`LIMITS` ``bytes``)."""
    chunks = list(iter_chunks(path, LIMITS["bytes"] if limit is None else limit, root=root, first=None))
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decode(data: bytes, source: str | Path) -> str:
    """Strict UTF-8 text of ``data`` (a lone surrogate's bytes are refused too), or SafeIOError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafeIOError(source, f"is not UTF-8 (byte {exc.start}: {exc.reason}); save it as UTF-8",
                          data.count(b"\n", 0, exc.start) + 1) from None


def read_text(path: str | Path, *, limit: int | None = None, root: str | Path | None = None) -> str:
    """The strict UTF-8 text of a regular file, at most ``limit`` bytes (default 16 MiB)."""
    return decode(read_bytes(path, limit=LIMITS["text"] if limit is None else limit, root=root), path)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write a finite number or null")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a double; write a smaller number")
    return value


def _walk(doc: Any) -> Iterator[Any]:
    """Every value of a parsed document, keys included (iterative: no recursion)."""
    stack = [doc]
    while stack:
        value = stack.pop()
        yield value
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


def _surrogate_free(doc: Any, source: str | Path, line: int | None = None) -> None:
    for value in _walk(doc):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise SafeIOError(source, "holds a lone surrogate (an unpaired \\ud800-\\udfff escape); "
                                          "write real characters", line) from None


def check_json_values(doc: Any, raw: bytes | str, source: str | Path, line: int | None = None) -> None:
    """The door's value checks of a document another JSON parser produced from ``raw`` (its bytes or
    text; an allowed bypass calls this): no lone surrogate (``\\ud800``) in any string or key.
    SafeIOError otherwise."""
    found = _SURROGATE_ESCAPE_TEXT.search(raw) if isinstance(raw, str) else _SURROGATE_ESCAPE.search(raw)
    if found:
        _surrogate_free(doc, source, line)


def loads_json(data: bytes | str, source: str | Path, *, allow_nan: bool = False,
               max_depth: int = JSON_DEPTH, line: int | None = None) -> Any:
    """Parse one JSON text: depth checked first, strict UTF-8, no lone surrogates, NaN/Infinity
    refused unless ``allow_nan`` (a number too large for a double too). SafeIOError otherwise."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    # fast path: with no more brackets than the limit the nesting cannot exceed it
    if raw.count(b"[") + raw.count(b"{") > max_depth and json_depth(raw) > max_depth:
        raise SafeIOError(source, f"arrays or objects nested deeper than {max_depth} levels; flatten them", line)
    text = decode(raw, source) if isinstance(data, bytes | bytearray | memoryview) else data
    try:
        if allow_nan:
            doc = json.loads(text)
        else:  # parse_float runs per float literal only: replies and stamps hold few
            doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise SafeIOError(source, f"is not valid JSON: {exc.msg} (column {exc.colno})",
                          exc.lineno if line is None else line) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SafeIOError(source, f"is not usable JSON: {exc}" if isinstance(exc, ValueError)
                          else f"is not usable JSON ({type(exc).__name__})", line) from None
    if _SURROGATE_ESCAPE.search(raw) or (isinstance(data, str) and not _encodable(data)):
        _surrogate_free(doc, source, line)
    return doc


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_json(path: str | Path, *, limit: int | None = None, root: str | Path | None = None,
              allow_nan: bool = False, max_depth: int = JSON_DEPTH) -> Any:
    """One JSON document from a regular file (the checks of :func:`loads_json`; default 64 MiB)."""
    data = read_bytes(path, limit=LIMITS["json"] if limit is None else limit, root=root)
    return loads_json(data, path, allow_nan=allow_nan, max_depth=max_depth)


def iter_lines(path: str | Path, *, limit: int | None = None, root: str | Path | None = None,
               line_limit: int = LINE_LIMIT) -> Iterator[tuple[int, bytes, bool]]:
    """(1-based line number, line bytes without the newline, whether it ended in a newline) of a
    regular file, read in chunks: memory stays near one chunk plus the longest line."""
    total_limit = LIMITS["jsonl"] if limit is None else limit
    pending = b""
    number = 0
    for chunk in iter_chunks(path, total_limit, root=root):
        buf = pending + chunk if pending else chunk
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            number += 1
            if end - start > line_limit:
                raise SafeIOError(path, f"line longer than {size_text(line_limit)}", number)
            yield number, buf[start:end], True
            start = end + 1
        pending = buf[start:]
        if len(pending) > line_limit:
            raise SafeIOError(path, f"line longer than {size_text(line_limit)}", number + 1)
    if pending:
        yield number + 1, pending, False


def iter_jsonl(path: str | Path, *, limit: int | None = None, root: str | Path | None = None,
               allow_nan: bool = False, max_depth: int = JSON_DEPTH) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSONL file, in bounded memory."""
    for number, line, _ended in iter_lines(path, limit=limit, root=root):
        if line.strip():
            yield number, loads_json(line, path, allow_nan=allow_nan, max_depth=max_depth, line=number)


def read_jsonl(path: str | Path, **kwargs: Any) -> list[Any]:
    """Every value of a JSONL file (:func:`iter_jsonl`)."""
    return [value for _, value in iter_jsonl(path, **kwargs)]


def loads_toml(data: bytes | str, source: str | Path, *, allow_nan: bool = False,
               max_depth: int = TOML_DEPTH) -> dict[str, Any]:
    """Parse a TOML text: strict UTF-8, nesting and dotted-key length checked first, NaN/inf refused
    unless ``allow_nan``, integers within 64 bits. SafeIOError otherwise."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    text = decode(raw, source)
    depth, line = toml_depth(raw)
    if depth > max_depth:
        raise SafeIOError(source, f"arrays or inline tables nested deeper than {max_depth} levels; "
                                  "flatten them", line)
    parts, line = toml_key_parts(raw)
    if parts > MAX_KEY_PARTS:
        raise SafeIOError(source, f"a dotted key or table name with more than {MAX_KEY_PARTS} parts; "
                                  "shorten it (quote a key that contains dots)", line)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_POS.search(str(exc))
        raise SafeIOError(source, f"is not valid TOML: {_TOML_POS.sub('', str(exc)).strip()}",
                          int(m.group(1)) if m else None) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise SafeIOError(source, f"is not usable TOML ({type(exc).__name__})") from None
    for value in _walk(doc):
        if isinstance(value, float) and not allow_nan and not math.isfinite(value):
            raise SafeIOError(source, f"holds {value} (nan/inf); write a finite number")
        if isinstance(value, int) and not isinstance(value, bool) and not TOML_INT_MIN <= value <= TOML_INT_MAX:
            raise SafeIOError(source, f"holds the integer {value}, outside TOML's 64-bit range")
    return doc


def read_toml(path: str | Path, *, limit: int | None = None, root: str | Path | None = None,
              allow_nan: bool = False, max_depth: int = TOML_DEPTH) -> dict[str, Any]:
    """One TOML document from a regular file (the checks of :func:`loads_toml`; default 4 MiB)."""
    data = read_bytes(path, limit=LIMITS["toml"] if limit is None else limit, root=root)
    return loads_toml(data, path, allow_nan=allow_nan, max_depth=max_depth)


def read_csv(path: str | Path, *, limit: int | None = None, root: str | Path | None = None,
             dialect: str = "excel") -> list[list[str]]:
    """The rows of a CSV file (strict UTF-8, default 256 MiB), each a list of cells."""
    text = read_text(path, limit=LIMITS["csv"] if limit is None else limit, root=root)
    try:
        return list(csv.reader(io.StringIO(text, newline=""), dialect=dialect))
    except csv.Error as exc:
        raise SafeIOError(path, f"is not valid CSV: {exc}") from None


def read_tail(path: str | Path, size: int) -> bytes:
    """The last ``size`` bytes of a regular file (a log's tail), without reading the rest."""
    fd, total = open_regular(path, LIMITS["bytes"] << 10)
    try:
        return os.pread(fd, size, max(0, total - size))
    except BlockingIOError:
        raise SafeIOError(path, "would block when read; make it a regular file") from None
    finally:
        os.close(fd)
