"""The planted truth of a simulated summariser, and what each estimator should find under it.

Methods note (ours). A truth file (docs/SIMULATION.md) is a small TOML document:

* ``[arms.<code>]`` — per arm, three probabilities: ``capture`` (a graded value in the fold's
  chunk enters the carrier that fold), ``keep`` (a value in the carrier survives the next fold)
  and ``recall`` (a value in the final carrier is answered with its label and value);
* ``[load]`` (optional) — multipliers in [0, 1] on ``capture`` per unit of a rung factor above the
  easy base: ``capture_per_extra_value`` (per graded value per chunk above 1),
  ``capture_per_extra_100_tokens`` (per 100 chunk tokens above 100), ``capture_per_distractor``;
* ``[faults]`` (optional) — per-call probabilities of a ``parse_failure`` (a schema reply whose
  closing brace is missing), a ``length_cut`` (the same, reported ``finish_reason = "length"``)
  and a ``server_error`` (HTTP 503, retried by the sweep). Faults change how a reply looks, never
  which values it holds, so the expected values below hold with faults on;
* ``description`` (optional) — one line of text.

Every draw is independent. Under that model, for a rung with ``g`` values per chunk and ``f``
folds, a value of chunk ``i`` (0-based) is in the final carrier with probability
``c * k^(f-1-i)`` (captured at its entry fold, then kept ``f-1-i`` times), so a row's expected
exact recall is ``c * r * (1/f) * sum_{j<f} k^j`` (``c`` the load-adjusted capture, ``k`` keep,
``r`` recall); the paired effect treatment - control is the difference of the arms' expected
recalls; and the Kaplan–Meier survival of captured values by folds since entry is
``S(t) = k^t`` (a lost value never comes back: it is in no later chunk). Hand derivation; the
calibration (analysis.plan.calibrate) checks the chain recovers them.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from analysis.invocation import doc_command
from analysis.safeio import SafeIOError, loads_toml

ARM_KEYS = ("capture", "keep", "recall")
LOAD_KEYS = ("capture_per_extra_value", "capture_per_extra_100_tokens", "capture_per_distractor")
FAULT_KEYS = ("parse_failure", "length_cut", "server_error")
TOP_KEYS = ("description", "arms", "load", "faults")
MAX_TRUTH_BYTES = 64 * 1024
"""Largest truth text recorded in study.toml."""
MAX_DESCRIPTION = 400
"""Longest ``description``."""


class TruthError(ValueError):
    """A truth file that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True, slots=True)
class ArmTruth:
    """The planted probabilities of one arm."""

    capture: float
    """P(a value of the fold's chunk enters the carrier), before the load effect."""
    keep: float
    """P(a value in the carrier survives the next fold)."""
    recall: float
    """P(a value in the final carrier is answered with label and value)."""


@dataclass(frozen=True)
class Truth:
    """A parsed truth file."""

    arms: Mapping[str, ArmTruth]
    """Arm code -> its probabilities."""
    load: Mapping[str, float]
    """:data:`LOAD_KEYS` -> multiplier (1.0 when absent)."""
    faults: Mapping[str, float]
    """:data:`FAULT_KEYS` -> per-call probability (0.0 when absent)."""
    description: str
    """The file's description ('' when absent)."""
    text: str
    """The file's text as read."""
    sha256: str
    """SHA-256 of the file's bytes."""

    def capture(self, arm: str, graded_per_chunk: int, chunk_tokens: int, distractors: int) -> float:
        """Load-adjusted capture probability of ``arm`` on a rung with these factors."""
        m = (self.load["capture_per_extra_value"] ** max(0, graded_per_chunk - 1)
             * self.load["capture_per_extra_100_tokens"] ** max(0.0, (chunk_tokens - 100) / 100)
             * self.load["capture_per_distractor"] ** max(0, distractors))
        return float(self.arms[arm].capture * m)

    def recall(self, arm: str, graded_per_chunk: int, chunk_tokens: int, distractors: int, folds: int) -> float:
        """Expected exact recall of one row: ``c * r * mean_{j<f} k^j``."""
        a = self.arms[arm]
        mean_keep = sum(a.keep ** j for j in range(folds)) / folds
        return self.capture(arm, graded_per_chunk, chunk_tokens, distractors) * a.recall * mean_keep

    def survival(self, arm: str, t: int) -> float:
        """Expected Kaplan–Meier survival ``S(t) = keep^t`` of a captured value, ``t`` folds after entry."""
        return self.arms[arm].keep ** t


_NOT_TEXT = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
"""Unicode categories refused in ``description``: controls (DEL and C1 too), format characters (bidi overrides
and isolates, zero-width), line and paragraph separators (U+2028, U+2029), surrogates, private use, unassigned."""
MAX_KEY_SHOWN = 40
"""Longest key echoed in an error."""


def _key(key: str) -> str:
    """A key as an error shows it: at most :data:`MAX_KEY_SHOWN` characters, control characters escaped."""
    short = key if len(key) <= MAX_KEY_SHOWN else key[:MAX_KEY_SHOWN] + "…"
    return short.encode("unicode_escape").decode("ascii") if not short.isprintable() else short


def _largest(data: bytes) -> str:
    """`` (KEY holds N characters)`` for the longest string key or value of an oversized file, '' if unparsable."""
    try:
        doc = loads_toml(data, "truth", allow_nan=True)
    except SafeIOError:
        return ""
    best: tuple[int, str] = (0, "")
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                best = max(best, (len(k), f"{path}{k}"))
                stack.append((f"{path}{k}.", v))
        elif isinstance(value, str):
            best = max(best, (len(value), path.rstrip(".")))
    return f" ({_key(best[1])} holds {best[0]} characters)" if best[0] else ""


def _prob(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TruthError(f"{key} = {value!r:.40}: must be a number in [0, 1]; write e.g. {key} = 0.9")
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise TruthError(f"{key} = {value!r}: must be a probability in [0, 1] (not NaN); write e.g. {key} = 0.9")
    return float(value)


def _table(key: str, value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TruthError(f"{key} must be a table ([{key}]), not {type(value).__name__}")
    for k in value:
        if k not in allowed:
            raise TruthError(f"{key}.{_key(k)}: unknown key; known keys of [{key}]: {', '.join(allowed)}")
    return value


def read_truth(path: str, known_arms: tuple[str, ...] | None = None) -> Truth:
    """Read and check a truth file (TruthError naming the problem: a missing file too)."""
    from analysis.safeio import read_bytes

    try:
        data = read_bytes(path, limit=4 * 1024 * 1024)
    except (OSError, SafeIOError) as exc:
        raise TruthError(f"truth file {path}: {getattr(exc, 'strerror', None) or exc}; give the path of a truth "
                         f"TOML file (see {doc_command('simulation')})") from None
    return parse_truth(data, str(path), known_arms)


def parse_truth(data: bytes, source: str, known_arms: tuple[str, ...] | None = None) -> Truth:
    """Parse and check a truth file's bytes (``known_arms``: the arm codes that exist, when known)."""
    if len(data) > MAX_TRUTH_BYTES:  # before any check that echoes a key or a value
        raise TruthError(f"{source}: {len(data)} bytes{_largest(data)}; a truth file is at most "
                         f"{MAX_TRUTH_BYTES} bytes (a few tables of probabilities)")
    if data.startswith(b"\xef\xbb\xbf"):
        raise TruthError(f"{source}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without a BOM")
    try:
        doc = loads_toml(data, source, allow_nan=True)
    except SafeIOError as exc:  # its message already names the source
        raise TruthError(str(exc) if str(exc).startswith(source) else f"{source}: {exc}") from None
    for k in doc:
        if k not in TOP_KEYS:
            raise TruthError(f"{_key(k)}: unknown key; a truth file has {', '.join(TOP_KEYS)}")
    desc = doc.get("description", "")
    bad = next((ch for ch in desc if unicodedata.category(ch) in _NOT_TEXT), None) if isinstance(desc, str) else None
    if bad is not None:
        raise TruthError(f"description: holds the control or direction character U+{ord(bad):04X}; write one line "
                         "of plain text")
    if not isinstance(desc, str) or len(desc) > MAX_DESCRIPTION:
        size = f" (it has {len(desc)})" if isinstance(desc, str) else ""
        raise TruthError(f"description: must be one line of text of at most {MAX_DESCRIPTION} characters{size}")
    arms_doc = doc.get("arms")
    if not isinstance(arms_doc, dict) or not arms_doc:
        raise TruthError("arms: missing; add one [arms.<code>] table per arm with capture, keep and recall")
    arms: dict[str, ArmTruth] = {}
    for code, table in arms_doc.items():
        if len(code) > 16 or not code.isascii() or not code.isalnum():
            raise TruthError(f"arms.{_key(code)}: an arm code is a short letter code, like j or q")
        if known_arms is not None and code not in known_arms:
            raise TruthError(f"arms.{code}: unknown arm; known arms: {', '.join(known_arms)}")
        t = _table(f"arms.{code}", table, ARM_KEYS)
        missing = [k for k in ARM_KEYS if k not in t]
        if missing:
            raise TruthError(f"arms.{code}.{missing[0]}: missing; give capture, keep and recall")
        arms[code] = ArmTruth(*(_prob(f"arms.{code}.{k}", t[k]) for k in ARM_KEYS))
    load = _table("load", doc.get("load", {}), LOAD_KEYS)
    faults = _table("faults", doc.get("faults", {}), FAULT_KEYS)
    return Truth(
        arms=MappingProxyType(arms),
        load=MappingProxyType({k: _prob(f"load.{k}", load[k]) if k in load else 1.0 for k in LOAD_KEYS}),
        faults=MappingProxyType({k: _prob(f"faults.{k}", faults[k]) if k in faults else 0.0 for k in FAULT_KEYS}),
        description=desc, text=data.decode("utf-8"), sha256=hashlib.sha256(data).hexdigest())
