"""Arm descriptions as data (paper section 3.2), used by tables, figures and the report."""

from __future__ import annotations

ARM_LABELS: dict[str, str] = {
    "f": "deployed shape: shared schema, one summary string",
    "n": "shared schema, ceiling lifted",
    "j": "one opaque field",
    "p": "one field, expanded description",
    "q": "five named fields",
    "k": "named-field JSON",
    "o": "plain text, no headings",
    "m": "plain text, five headings",
    "t": "one field, declared ceiling halved",
    "u": "plain headings, reduced carry cap",
    "l": "plain headings at the deployed fold budget",
    "g": "deployed schema, parsed",
}
"""Short description of every known arm code; unknown codes print as themselves."""

SUPPORTING_ARMS: tuple[str, ...] = ("f", "n", "k", "l", "m")
"""Arms of the supporting sweep (paper Table 1), in column order."""

SCENARIO_ARMS: tuple[str, ...] = ("j", "p", "q", "o", "m")
"""Arms of the scenario comparison (paper section 4.4), in row order."""

CEILING_ARMS: tuple[str, ...] = ("j", "t", "m", "u")
"""Arms of the reduced-ceiling comparison (paper section 4.5), in row order."""

PLAIN_ARM = "m"
"""The plain-heading control arm, top rung of the assigned-policy ladder."""

REDUCED_CEILING_ARM = "t"
"""The arm whose declared ceiling is halved (reduced-ceiling tables)."""

DESCRIBED_ARM = "p"
"""The single field with an expanded description (fill examples)."""


def arm_label(arm: str) -> str:
    """``j one opaque field``-style label for an arm code."""
    desc = ARM_LABELS.get(arm)
    return f"{arm} ({desc})" if desc else arm
