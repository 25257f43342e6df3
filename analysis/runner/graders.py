"""The recall turn and its graders.

Methods note. The recall turn asks for the graded labels, one per line. The
*label-bound whole-token* grader passes a check when some line of the answer
(i) identifies the check's label, (ii) contains the expected value as a whole
token and (iii) contains no other graded value as a whole token. The
*presence* grader drops (i) and (iii): the value anywhere as a whole token; it
is used for ``in_carrier`` (against the final carrier) and for the extra
``passed_presence`` column (against the answer).

Whole token and normalisation: the evidence format's presence rule,
``analysis.evidence.tokens.contains_token`` (NFC, space runs collapsed, word
boundaries with the joiner rule; case preserved unless the check declares
otherwise). A line identifies a label when its case-folded text, with ``*``,
`` ` ``, ``_`` and ``-`` replaced by spaces, contains the label as a phrase
bounded by non-word characters. Repeated appearances add nothing: each check is binary.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from analysis.evidence.tokens import SPACES, contains_token

__all__ = [
    "RECALL_SYSTEM_PROMPT",
    "CheckResult",
    "GradedCheck",
    "contains_token",
    "grade_answer",
    "line_identifies",
    "recall_prompt",
]

RECALL_SYSTEM_PROMPT = (
    "You are resuming a long agent session from its running summary. The summary is all that "
    "remains of the session. Answer from it exactly."
)

_LABEL_PUNCT = re.compile(r"[*`_\-]+")


@dataclass(frozen=True, slots=True)
class GradedCheck:
    """One graded fact as the grader sees it."""

    label: str
    """The label asked in the recall turn."""
    expected: str
    """The planted value."""
    case_sensitive: bool = True
    """Whether comparison preserves case (default: yes)."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check of one row."""

    label: str
    """The check's label."""
    expected: str
    """The planted value."""
    passed: bool
    """Label-bound whole-token verdict on the answer."""
    passed_presence: bool
    """Presence (whole-token, anywhere) verdict on the answer."""
    in_carrier: bool | None
    """Presence verdict on the final carrier; ``None`` if not audited."""


def recall_prompt(carrier: str, labels: Sequence[str]) -> str:
    """The user message of the recall turn: the final carrier, then the labels to answer."""
    asks = "\n".join(f"{i}. {label}" for i, label in enumerate(labels, 1))
    return (
        "Running summary of the session so far:\n"
        f"{carrier if carrier else '(empty)'}\n\n"
        "Answer each item below on its own line, in the form `label: value`, copying the value "
        "exactly as it appears in the summary. If the summary does not contain it, write "
        "`label: unknown`.\n"
        f"{asks}"
    )


def _label_key(text: str) -> str:
    return SPACES.sub(" ", _LABEL_PUNCT.sub(" ", unicodedata.normalize("NFC", text).casefold())).strip()


@lru_cache(maxsize=256)
def _label_re(label: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(_label_key(label)) + r"(?!\w)")


def line_identifies(line: str, label: str) -> bool:
    """Whether an answer line names ``label`` (case-folded phrase, markdown stripped, word-bounded)."""
    return _label_re(label).search(_label_key(line)) is not None


def grade_answer(
    answer: str,
    checks: Sequence[GradedCheck],
    *,
    carrier: str | None = None,
) -> tuple[CheckResult, ...]:
    """Grade one recall answer against ``checks`` (and audit ``carrier`` when given)."""
    lines = answer.splitlines()
    # per line: which graded values it carries as whole tokens
    carries = [
        {i for i, c in enumerate(checks) if contains_token(line, c.expected, case_sensitive=c.case_sensitive)}
        for line in lines
    ]
    out = []
    for i, c in enumerate(checks):
        passed = any(
            i in carried and carried == {i} and line_identifies(line, c.label)
            for line, carried in zip(lines, carries, strict=True)
        )
        presence = any(i in carried for carried in carries)
        in_carrier = (
            None if carrier is None else contains_token(carrier, c.expected, case_sensitive=c.case_sensitive)
        )
        out.append(CheckResult(c.label, c.expected, passed, presence, in_carrier))
    return tuple(out)
