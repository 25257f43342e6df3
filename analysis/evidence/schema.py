"""The evidence format declared as data: one table per CSV file.

Each :class:`Column` says its dtype, whether a value is required, and the
allowed values or range. Rules that tie two columns of one row together are
:class:`RowRule` entries. The loader and docs/EVIDENCE_FORMAT.md both follow
these tables (a test checks every column is documented).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

TEXT, INT, BOOL = "text", "int", "bool"
DTYPES: dict[str, pl.DataType] = {TEXT: pl.String(), INT: pl.Int64(), BOOL: pl.Boolean()}

MAX_COUNT = 10**6
"""Largest count anywhere in a package (repeats, folds, checks, positions, planned_repeats)."""
MAX_AMOUNT = 10**12
"""Largest character or token amount (carried_chars, declared_chars, prompt_tokens_est)."""
MAX_PLANNED_SLOTS = 10**6
"""Largest sum of planned_repeats over all partition runs (the bounds enumerate every slot)."""
MAX_TOKENS = (1 << 31) - 1
"""Largest token count the runner records in study.toml (``[runner."<key>"]`` ``context_length``,
``fold_max_tokens``, ``recall_max_tokens``): 2^31 - 1, far above any served context."""
RUNNER_INT_RANGES: dict[str, tuple[int, int]] = {
    "context_length": (1, MAX_TOKENS), "fold_max_tokens": (1, MAX_TOKENS), "recall_max_tokens": (1, MAX_TOKENS)}
"""The documented range of each integer of a ``[runner."<key>"]`` table that ``verify`` checks."""
MAX_TEXT = 1024
"""Longest free-text value of study.toml (study name, family, provider, quantization)."""

IDENTIFIER, ARM = "identifier", "arm"
IDENTIFIER_PATTERN = r"[A-Za-z0-9._\-/:+@#]{1,256}"
"""Identifiers (scenario, configuration, execution_group): ASCII letters, digits and ``. _ - / : + @ #``, 1-256."""
ARM_PATTERN = r"[a-z][a-z0-9_]{0,15}"
"""Arm codes: a lowercase ASCII letter, then up to 15 lowercase letters, digits or ``_``."""
CHARSETS: dict[str, tuple[str, str]] = {
    IDENTIFIER: (IDENTIFIER_PATTERN, "an identifier: 1-256 ASCII letters, digits and . _ - / : + @ #"),
    ARM: (ARM_PATTERN, "an arm code: a lowercase ASCII letter, then up to 15 of a-z, 0-9, _"),
}
"""Character set name -> (full-match regular expression, description for messages and docs)."""
EXTRA_PREFIX = "extra:"


def charset_problem(charset: str, value: object) -> str | None:
    """Why ``value`` is not in the named character set (for a message), or None when it is."""
    pattern, words = CHARSETS[charset]
    if isinstance(value, str) and re.fullmatch(pattern, value):
        return None
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return f"{shown} is not {words}"


def extra_column(name: str) -> str:
    """The loaded name of an extra (not in the schema) CSV column ``name``.

    Extra columns are kept as text under ``extra:<name>``, a namespace no internal column of the
    analysis uses, so a user's column can never collide with one (``__index``, ``first``, ...).
    """
    return EXTRA_PREFIX + name


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a CSV file of the format."""

    name: str
    """Header name."""
    kind: str
    """One of ``text``, ``int``, ``bool``."""
    required: bool
    """True when an empty field is an error."""
    minimum: int | None = None
    """Smallest allowed integer (ints only)."""
    maximum: int | None = None
    """Largest allowed integer (ints only)."""
    allowed: tuple[str, ...] | None = None
    """Allowed text values, or None for any."""
    charset: str | None = None
    """Character set of a text value (a key of CHARSETS), or None for any text."""
    doc: str = ""
    """One-line meaning, as in docs/EVIDENCE_FORMAT.md."""

    @property
    def dtype(self) -> pl.DataType:
        """The polars dtype of the loaded column."""
        return DTYPES[self.kind]


@dataclass(frozen=True, slots=True)
class RowRule:
    """A rule between columns of one row, checked where all its cells are present."""

    name: str
    """Short identifier of the rule."""
    kind: str
    """``le``: sum of ``left`` <= ``right``; ``reason``: invalid_reason given iff valid is false."""
    left: tuple[str, ...]
    """Columns on the left side; the problem is reported on the first."""
    right: str
    """Column on the right side."""
    message: str
    """What is wrong and how to fix it."""


ROWS_FILE, CHECKS_FILE, STUDY_FILE = "rows.csv", "checks.csv", "study.toml"

ROWS_COLUMNS: tuple[Column, ...] = (
    Column("row_id", TEXT, True, doc="unique within the package"),
    Column("scenario", TEXT, True, charset=IDENTIFIER, doc="scenario code, e.g. S5"),
    Column("configuration", TEXT, True, charset=IDENTIFIER, doc="a key of [configurations] in study.toml"),
    Column("execution_group", TEXT, True, charset=IDENTIFIER, doc="the sweep the row ran in"),
    Column("repeat", INT, True, minimum=1, maximum=MAX_COUNT, doc="planned repeat index, >= 1"),
    Column("arm", TEXT, True, charset=ARM, doc="arm code"),
    Column("position", INT, False, minimum=1, maximum=MAX_COUNT,
           doc="execution order inside the repeat block, 1-based"),
    Column("valid", BOOL, True, doc="validity verdict"),
    Column("invalid_reason", TEXT, False, doc="empty when valid, else why"),
    Column("checks_total", INT, True, minimum=1, maximum=MAX_COUNT, doc="graded checks in the scenario"),
    Column("checks_passed", INT, False, minimum=0, maximum=MAX_COUNT, doc="checks passed; empty = no outcome"),
    Column("parse_failures", INT, True, minimum=0, maximum=MAX_COUNT, doc="folds whose reply did not parse"),
    Column("headings_carried", INT, False, minimum=0, maximum=5, doc="fixed headings carried (0-5)"),
    Column("carried_chars", INT, False, minimum=0, maximum=MAX_AMOUNT, doc="characters in the final carrier"),
    Column("declared_chars", INT, False, minimum=0, maximum=MAX_AMOUNT, doc="declared character allowance"),
    Column("folds", INT, True, minimum=0, maximum=MAX_COUNT, doc="fold calls made"),
    Column("folds_clipped", INT, True, minimum=0, maximum=MAX_COUNT, doc="folds clipped at the carry cap"),
    Column("finish_stop", INT, True, minimum=0, maximum=MAX_COUNT, doc="fold calls finished with stop"),
    Column("finish_length", INT, True, minimum=0, maximum=MAX_COUNT, doc="fold calls finished with length"),
    Column("prompt_tokens_est", INT, True, minimum=0, maximum=MAX_AMOUNT, doc="estimated prompt tokens"),
    Column("answer", TEXT, False, doc="recall answer as retained"),
)

CHECKS_COLUMNS: tuple[Column, ...] = (
    Column("row_id", TEXT, True, doc="a row_id of rows.csv"),
    Column("check", TEXT, True, doc="the fact's label"),
    Column("expected", TEXT, True, doc="the planted value"),
    Column("passed", BOOL, True, doc="the label-bound whole-token check"),
    Column("in_carrier", BOOL, False, doc="value present in the final carrier; empty = not audited"),
)

ROWS_RULES: tuple[RowRule, ...] = (
    RowRule("passed_le_total", "le", ("checks_passed",), "checks_total",
            "checks_passed is larger than checks_total"),
    RowRule("clipped_le_folds", "le", ("folds_clipped",), "folds",
            "folds_clipped is larger than folds"),
    RowRule("parse_le_folds", "le", ("parse_failures",), "folds",
            "parse_failures is larger than folds"),
    RowRule("finishes_le_folds", "le", ("finish_stop", "finish_length"), "folds",
            "finish_stop + finish_length is larger than folds"),
    RowRule("reason_iff_invalid", "reason", ("invalid_reason",), "valid",
            "invalid_reason must be empty when valid is true and given when valid is false"),
)

SCHEMAS: dict[str, tuple[Column, ...]] = {ROWS_FILE: ROWS_COLUMNS, CHECKS_FILE: CHECKS_COLUMNS}
RULES: dict[str, tuple[RowRule, ...]] = {ROWS_FILE: ROWS_RULES, CHECKS_FILE: ()}

# study.toml: key -> (kind, required, doc). Kinds: text (free text, 1..MAX_TEXT characters, no
# control characters), identifier / arm (CHARSETS), date, count>=1 (1..MAX_COUNT), arm_list.
STUDY_KEYS: dict[str, tuple[str, bool, str]] = {
    "name": ("text", True, "name of the study"),
    "recency_cutoff": ("date", True, "configurations published on/after it are in the panel"),
    "control": (ARM, True, "control arm of the primary contrast"),
    "treatment": (ARM, True, "treatment arm of the primary contrast (differs from control)"),
    "scenario": (IDENTIFIER, True, "scenario the primary contrast is read on"),
    "arms": ("arm_list", False, "every arm of rows.csv; when given, a row with another arm is an error"),
    "kind": ("study_kind", False, "what the package is (STUDY_KINDS); absent: a study of its own"),
}
STUDY_KINDS: dict[str, str] = {
    "reconstruction": "a reconstruction of the published v1 study: reported with the claims audit",
    "pilot": "a small pilot run: reported on its own, or beside another package as its companion",
    "fixture": "a hand-made package with hand-derived values, for tests and examples",
    "simulation": "simulated, planted truth: a sweep against the simulated summariser (docs/SIMULATION.md), "
                  "never a real run or a pilot; study.toml [simulation] holds the truth file",
}
"""Values of ``[study] kind`` -> what they mean. An absent key means a study of its own."""
CONFIGURATION_KEYS: dict[str, tuple[str, bool, str]] = {
    "family": ("text", True, "model family"),
    "published": ("date", True, "publication date of the configuration"),
    "provider": ("text", False, "serving provider"),
    "quantization": ("text", False, "weight quantization"),
}
PARTITION_RUN_KEYS: dict[str, tuple[str, bool, str]] = {
    "configuration": (IDENTIFIER, True, "a key of [configurations]"),
    "execution_group": (IDENTIFIER, True, "the execution group of the run"),
    "planned_repeats": ("count>=1", True, "repeats planned for the run (1..MAX_COUNT)"),
}
LADDER_KEYS: dict[str, tuple[str, bool, str]] = {
    "rungs": ("identifier_list", True, "the rungs of the package, easiest first"),
    "base": (IDENTIFIER, False, "the ladder's base rung (each rung differs from it in one factor; need not be run)"),
}
"""Keys of study.toml ``[ladder]`` (the load ladder, our extension)."""
LADDER_RUNG_KEYS: dict[str, tuple[str, bool, str]] = {
    "scenario": (IDENTIFIER, True, "the scenario of the rung's rows"),
    "graded_per_chunk": ("count>=1", True, "graded values planted per chunk"),
    "distractors": ("count>=0", True, "distractors planted in the whole session"),
    "chunk_tokens": ("count>=1", True, "estimated tokens per chunk"),
    "folds": ("count>=1", True, "chunks, i.e. folds of an undisturbed trajectory"),
    "fixture_digest": ("text", False, "SHA-256 of the rung's fixture JSON"),
}
"""Keys of study.toml ``[ladder.rung."<name>"]``."""
