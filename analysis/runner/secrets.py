"""API keys: read them in one place and redact them from everything the runner writes.

Methods note: the runner reads a key only through `read_api_key`, which registers its value here.
Every artefact the runner writes (ledger records, the evidence package, run_manifest.json, probe
output, terminal messages) passes through `redact` first, which replaces every occurrence of a
registered value by `[REDACTED]`: in strings at any depth of dicts, lists and tuples, and in the
key's JSON-escaped and URL-encoded spellings.  So a server that echoes the Authorization header
in an error body, or a key typed into the wrong argument, cannot put the key into a file.

`api_key_env_problem` is the check of an `--api-key-env` value: it must be the *name* of an
environment variable (letters, digits, underscore; not starting with a digit) that is set.  Its
messages never repeat the value unless it has the shape of a conventional variable name
(UPPER_CASE with an underscore), because a value of any other shape may be the key itself.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONVENTIONAL = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")
MIN_SECRET_CHARS = 4
"""Shorter values are not registered: redacting every 'abc' would destroy data and hide nothing."""

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact `value` (and its escaped spellings) from everything written from now on."""
    if not value or len(value) < MIN_SECRET_CHARS:
        return
    spellings = {value, json.dumps(value)[1:-1], urllib.parse.quote(value, safe=""),
                 urllib.parse.quote_plus(value)}
    with _lock:
        _secrets.update(s for s in spellings if len(s) >= MIN_SECRET_CHARS)


def forget_secrets() -> None:
    """Drop every registered value (tests)."""
    with _lock:
        _secrets.clear()


def redact_text(text: str) -> str:
    """`text` with every registered secret replaced by [REDACTED]."""
    if not _secrets or not text:
        return text
    with _lock:
        values = sorted(_secrets, key=len, reverse=True)
    for v in values:
        if v in text:
            text = text.replace(v, REDACTED)
    return text


def redact(obj: Any) -> Any:
    """A copy of `obj` (str, bytes, dict, list, tuple, scalars) with every secret redacted."""
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, bytes):
        return redact_text(obj.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    if isinstance(obj, Mapping):
        return {redact(k): redact(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(x) for x in obj]
    if isinstance(obj, tuple):
        return tuple(redact(x) for x in obj)
    return obj


def write_redacted_text(path: Any, text: str) -> None:
    """Write `text` (redacted) to `path` as UTF-8: the one way the runner writes a text file."""
    from analysis.safeio import write_text as door_write_text

    door_write_text(path, redact_text(text))  # atomic, never through a link, strict UTF-8


def looks_conventional(name: str) -> bool:
    """Whether `name` has the shape of a conventional variable name (safe to repeat in a message)."""
    return bool(_CONVENTIONAL.fullmatch(name)) and len(name) <= 64


def api_key_env_problem(name: object, *, option: str = "--api-key-env") -> str | None:
    """Why `name` cannot be used as the key's environment variable, or None when it can.

    '' / None means "no key" (keyless local servers) and is accepted.
    """
    if name is None or name == "":
        return None
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        return (f"{option} takes the NAME of an environment variable that holds the key (letters, digits and "
                "_), not the key itself; the value given is not a variable name and is not repeated here. "
                f"Run e.g. `export MY_API_KEY=...` and pass {option} MY_API_KEY, or {option} '' for a "
                "server without a key")
    if os.environ.get(name) in (None, ""):
        shown = name if looks_conventional(name) else "(the name given; not repeated in case it is a key)"
        return (f"{option} names an environment variable that is not set or empty: {shown}. Export it "
                f"(`export {name if looks_conventional(name) else 'NAME'}=...`) before running, or pass "
                f"{option} '' for a server without a key")
    return None


def read_api_key(name: str | None) -> str | None:
    """The key held by environment variable `name` (None for ''/None or unset), registered for redaction."""
    if not name:
        return None
    key = os.environ.get(name) or None
    register_secret(key)
    return key
