"""The I/O door (lowest layer): every file the package reads or writes goes through here.

Read (:mod:`analysis.safeio.read`): :func:`read_bytes`, :func:`read_text`, :func:`read_json`,
:func:`iter_jsonl` / :func:`read_jsonl`, :func:`read_toml`, :func:`read_csv`; in-memory parsers
with the same checks: :func:`loads_json`, :func:`loads_toml`. Write
(:mod:`analysis.safeio.write`): :func:`write_bytes`, :func:`write_text`, :func:`write_json`,
:class:`AppendFile`, :func:`check_toml_int`. One error: :class:`SafeIOError`.
tests/test_safeio_door.py keeps the door shut (no other module opens files).
"""
from __future__ import annotations

from analysis.safeio.errors import SafeIOError
from analysis.safeio.read import (
    LIMITS,
    TOML_INT_MAX,
    TOML_INT_MIN,
    check_json_values,
    iter_chunks,
    iter_jsonl,
    iter_lines,
    loads_json,
    loads_toml,
    read_bytes,
    read_csv,
    read_json,
    read_jsonl,
    read_tail,
    read_text,
    read_toml,
)
from analysis.safeio.write import (
    AppendFile,
    check_toml_int,
    dumps_json,
    refuse_link,
    write_bytes,
    write_json,
    write_text,
)

__all__ = [
    "LIMITS", "TOML_INT_MAX", "TOML_INT_MIN", "AppendFile", "SafeIOError", "check_json_values", "check_toml_int",
    "dumps_json",
    "iter_chunks", "iter_jsonl", "iter_lines", "loads_json", "loads_toml", "read_bytes", "read_csv",
    "read_json", "read_jsonl", "read_tail", "read_text", "read_toml", "refuse_link", "write_bytes", "write_json",
    "write_text",
]
