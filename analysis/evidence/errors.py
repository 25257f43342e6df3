"""Named errors of evidence loading.

Every error carries the list of :class:`Problem` found (file, line, column,
message), all at once, and its text says how to fix the package.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.invocation import analysis_command, doc_command
from analysis.safeio.errors import bounded

MAX_LISTED = 200  # problems spelled out in str(error); the rest are counted


def command_text(text: str) -> str:
    """``text`` with ``{cmd}`` the analysis command this install has and ``{format}`` the command that prints
    the evidence format (``carriers docs evidence_format``)."""
    return text.replace("{cmd}", analysis_command()).replace("{format}", doc_command("evidence_format"))


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with one place of a package."""

    file: str
    """File name relative to the package root (e.g. ``rows.csv``)."""
    line: int | None
    """1-based physical line in the file, or None when the problem is file-wide."""
    column: str | None
    """CSV column name, TOML key path or 1-based character column, or None."""
    message: str
    """What is wrong and how to fix it."""

    def __str__(self) -> str:
        where = bounded(self.file, 500)
        if self.line is not None:
            where += f":{self.line}"
        if self.column is not None:
            where += f" [{bounded(self.column, 500)}]"
        return f"{where}: {bounded(self.message)}"  # a value quoted from a hostile file stays short


class EvidenceError(Exception):
    """Base class: an evidence package cannot be used as it is."""

    summary = "the evidence package is not usable"
    fix = "fix the problems listed and run `{cmd} verify DIR` again"
    """The class's fix; ``{cmd}`` becomes the analysis command the user has (``carriers`` or ``python
    generate.py``, analysis.invocation) and ``{format}`` the command that prints the evidence format."""

    def __init__(self, problems: Sequence[Problem], summary: str | None = None, fix: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        if summary is not None:
            self.summary = summary
        if fix is not None:  # a fix that names the package (the class default says DIR)
            self.fix = fix
        else:
            self.fix = command_text(type(self).fix)
        super().__init__(self._render())

    def _render(self) -> str:
        n = len(self.problems)
        head = f"{self.summary}: {n} problem{'s' if n != 1 else ''}; {self.fix}"
        lines = [head] + [f"  {p}" for p in self.problems[:MAX_LISTED]]
        if n > MAX_LISTED:
            lines.append(f"  ... and {n - MAX_LISTED} more problems")
        return "\n".join(lines)


class PackageNotFoundError(EvidenceError):
    """The package directory does not exist or is not a directory."""

    summary = "no evidence package here"
    fix = "pass the directory that holds provenance.lock, study.toml, rows.csv and checks.csv"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A file whose bytes do not match the lock."""

    file: str
    """File name as written (or expected) in the lock."""
    expected: str | None
    """Digest the lock records (None when the lock does not name the file)."""
    actual: str | None
    """SHA-256 of the bytes on disk (None when the file is missing)."""


class ProvenanceError(EvidenceError):
    """The provenance lock does not match the files: nothing is parsed."""

    summary = "provenance check failed, nothing was read"
    fix = (
        "restore the original files, or if the change is intended re-lock with "
        "`{cmd} lock DIR`"
    )

    def __init__(
        self,
        problems: Sequence[Problem],
        mismatches: Sequence[Mismatch] = (),
        summary: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.mismatches: tuple[Mismatch, ...] = tuple(mismatches)
        super().__init__(problems, summary, fix)

    @property
    def file(self) -> str:
        """File of the first problem."""
        return self.mismatches[0].file if self.mismatches else self.problems[0].file

    @property
    def expected(self) -> str | None:
        """Expected digest of the first mismatch (None if not in the lock)."""
        return self.mismatches[0].expected if self.mismatches else None

    @property
    def actual(self) -> str | None:
        """Actual digest of the first mismatch (None if the file is missing)."""
        return self.mismatches[0].actual if self.mismatches else None


class LockFormatError(ProvenanceError):
    """provenance.lock itself is malformed (not JSON, bad digest, bad path)."""

    summary = "provenance.lock is malformed, nothing was read"
    fix = "write a fresh lock with `{cmd} lock DIR`"


class SchemaError(EvidenceError):
    """A CSV file breaks the format: structure, header, types or ranges."""

    summary = "the CSV files break the evidence format"
    fix = "correct the cells named below (the format: {format}), then re-lock the package"


class StudyError(EvidenceError):
    """study.toml is not valid TOML or breaks the study schema."""

    summary = "study.toml breaks the study format"
    fix = "correct the keys named below (the format: {format}), then re-lock the package"


class ConsistencyError(EvidenceError):
    """The files are each well-formed but contradict each other."""

    summary = "the package is inconsistent"
    fix = "correct the rows named below (the format: {format}), then re-lock the package"


class StudyWarning(UserWarning):
    """A key in study.toml that the analysis does not know and ignores."""


def raise_collected(buckets: dict[type[EvidenceError], list[Problem]]) -> None:
    """Raise one error holding every collected problem, if there is any.

    The error is of the problems' class when they are all of one kind, else
    the :class:`EvidenceError` base (so no problem is hidden).
    """
    kinds = [k for k, v in buckets.items() if v]
    if not kinds:
        return
    order = {"study.toml": 0, "rows.csv": 1, "checks.csv": 2}

    def key(p: Problem) -> tuple[int, str, bool, int]:  # by file, then line; file-wide notes last
        return (order.get(p.file, 3), p.file, p.line is None, p.line or 0)

    problems = [p for k in kinds for p in sorted(buckets[k], key=key)]
    if len(kinds) == 1:
        raise kinds[0](problems)
    raise EvidenceError(problems, summary="the evidence package breaks the format")
