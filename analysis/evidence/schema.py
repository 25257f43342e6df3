"""The evidence format declared as data: one table per CSV file.

Each :class:`Column` says its dtype, whether a value is required, and the
allowed values or range. Rules that tie two columns of one row together are
:class:`RowRule` entries. The loader and docs/EVIDENCE_FORMAT.md both follow
these tables (a test checks every column is documented).
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

TEXT, INT, BOOL = "text", "int", "bool"
DTYPES: dict[str, pl.DataType] = {TEXT: pl.String(), INT: pl.Int64(), BOOL: pl.Boolean()}


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
    Column("scenario", TEXT, True, doc="scenario code, e.g. S5"),
    Column("configuration", TEXT, True, doc="a key of [configurations] in study.toml"),
    Column("execution_group", TEXT, True, doc="the sweep the row ran in"),
    Column("repeat", INT, True, minimum=1, doc="planned repeat index, >= 1"),
    Column("arm", TEXT, True, doc="arm code"),
    Column("position", INT, False, minimum=1, doc="execution order inside the repeat block, 1-based"),
    Column("valid", BOOL, True, doc="validity verdict"),
    Column("invalid_reason", TEXT, False, doc="empty when valid, else why"),
    Column("checks_total", INT, True, minimum=1, doc="graded checks in the scenario"),
    Column("checks_passed", INT, False, minimum=0, doc="checks passed; empty = no outcome"),
    Column("parse_failures", INT, True, minimum=0, doc="folds whose reply did not parse"),
    Column("headings_carried", INT, False, minimum=0, maximum=5, doc="fixed headings carried (0-5)"),
    Column("carried_chars", INT, False, minimum=0, doc="characters in the final carrier"),
    Column("declared_chars", INT, False, minimum=0, doc="declared character allowance"),
    Column("folds", INT, True, minimum=0, doc="fold calls made"),
    Column("folds_clipped", INT, True, minimum=0, doc="folds clipped at the carry cap"),
    Column("finish_stop", INT, True, minimum=0, doc="fold calls finished with stop"),
    Column("finish_length", INT, True, minimum=0, doc="fold calls finished with length"),
    Column("prompt_tokens_est", INT, True, minimum=0, doc="estimated prompt tokens"),
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

# study.toml: key -> (python type name, required, doc)
STUDY_KEYS: dict[str, tuple[str, bool, str]] = {
    "name": ("text", True, "name of the study"),
    "recency_cutoff": ("date", True, "configurations published on/after it are in the panel"),
    "control": ("text", True, "control arm of the primary contrast"),
    "treatment": ("text", True, "treatment arm of the primary contrast"),
    "scenario": ("text", True, "scenario the primary contrast is read on"),
}
CONFIGURATION_KEYS: dict[str, tuple[str, bool, str]] = {
    "family": ("text", True, "model family"),
    "published": ("date", True, "publication date of the configuration"),
    "provider": ("text", False, "serving provider"),
    "quantization": ("text", False, "weight quantization"),
}
PARTITION_RUN_KEYS: dict[str, tuple[str, bool, str]] = {
    "configuration": ("text", True, "a key of [configurations]"),
    "execution_group": ("text", True, "the execution group of the run"),
    "planned_repeats": ("int>=1", True, "repeats planned for the run"),
}
