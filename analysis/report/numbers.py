"""Numbers in the report text: formatting filters that record every number they emit.

Methods note: the templates may print a number only through these filters, one per number kind of
``analysis.tables.formatting`` (``num``, ``signed``, ``pct``, ``count``, ``pts``, ``g``; ``stated`` for
the ``st`` macro), each reading a computed value (results.json, params, table indexes) and printing it
exactly as a table cell prints it. The jinja ``finalize`` hook rejects a bare int or float, so a number cannot reach the
text unformatted; the filters record what they emit (``NumberTrace``), and
``unsourced_numbers`` finds numeric tokens of a rendered text that no filter emitted. Undefined
statistics print as an em dash with the reason available to the template, never as 0.

The same ``finalize`` hook is the Markdown output boundary: every plain string an expression
prints (a configuration, an arm, a path from the evidence) is escaped with
``analysis.escape.markdown``; only ``Markup`` (filter outputs, the report's own helpers and
macros) passes unchanged. The environment runs with autoescape on, so jinja wraps macro output
in ``Markup`` and applies no HTML escaping on top of what ``finalize`` returns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from analysis import escape
from analysis.tables.formatting import DASH, KINDS, UNDEFINED_WHY, formatted, is_missing, present, stated
from analysis.tables.spec import plural_noun

NUMBER_TOKEN = re.compile(r"(?<![\w.\-+−/])[+\-−]?\d(?:[\d,]*\d)?(?:\.\d+)?%?(?![\w])")
"""A numeric token standing on its own (not part of an identifier like S5, qwen3.5 or t3_panel); a
comma inside it is a thousands separator (1,534), a comma after it is punctuation (``seed 0,``)."""


class TemplateNumberError(TypeError):
    """A template printed a bare number; format it with a filter (num, signed, pct, count, pts)."""


def _value(x: Any) -> Any:
    """``x``, or None where a template reached an undefined name (jinja's Undefined): a missing value."""
    import jinja2

    return None if isinstance(x, jinja2.Undefined) else x


def _missing(x: Any) -> bool:
    return is_missing(_value(x))


@dataclass
class NumberTrace:
    """Every number string the filters emitted during one render."""

    emitted: list[str] = field(default_factory=list)
    """Filter outputs in emission order (em dashes excluded)."""
    strings: list[str] = field(default_factory=list)
    """Every non-number value printed by an expression (names, captions built by the code)."""

    def record(self, text: str) -> Markup:
        """Remember ``text`` as a sourced number and return it (Markdown-safe: digits and signs)."""
        if text != DASH:
            self.emitted.append(text)
        return Markup(text)

    def say(self, text: str) -> str:
        """Remember ``text`` as a printed string and return it escaped for Markdown (what ``finalize`` does)."""
        self.strings.append(text)
        return escape.markdown(text)

    def filters(self) -> dict[str, Callable[..., str]]:
        """The jinja filters bound to this trace: one per number kind of analysis.tables.formatting (``num``,
        ``signed``, ``pct``, ``count``, ``pts``, ``g``), ``stated`` (the ``st`` macro), and the word filters."""

        def number(kind: str) -> Callable[..., str]:
            def fmt(x: Any, decimals: int | None = None) -> str:
                return self.record(formatted(kind, _value(x), decimals))
            return fmt

        numbers = {kind: number(kind) for kind in KINDS}
        count = numbers["count"]

        def as_stated(x: Any, name: str, kind: str = "signed", why: str | None = None, eq: str = " = ") -> Markup:
            """``name = x`` (x printed as ``kind``), or ``name not computed (why)`` when x is missing."""
            x = _value(x)
            text = numbers[kind](x) if present(x) is not None else ""
            return Markup(stated(self.say(name), x, text, self.say(why or UNDEFINED_WHY), self.say(eq)))

        def code(x: Any) -> Markup:
            """An evidence string as inline code when it can be one safely, else escaped text."""
            text = str(x)
            self.strings.append(text)
            return Markup(escape.markdown_code(text))

        def as_sentence(x: Any) -> Markup:
            self.strings.append(str(x))
            return sentence(x)

        def plural(x: Any, singular: str, many: str | None = None) -> Markup:
            """A count with its noun in agreement: ``1 configuration``, ``3 configurations`` (never
            ``configuration(s)``); ``many`` names an irregular plural (``analysis``, ``analyses``)."""
            noun = escape.markdown(plural_noun(None if _missing(x) else int(x), singular, many))
            return Markup(f"an uncounted number of {noun}" if _missing(x) else f"{count(x)} {noun}")

        return {**numbers, "stated": as_stated, "code": code, "plural": plural,
                "noun": lambda x, singular, many=None: escape.markdown(
                    plural_noun(None if _missing(x) else int(x), singular, many)), "sentence": as_sentence}

    def finalize(self, value: Any) -> Any:
        """jinja finalize: reject bare numbers, escape and remember printed strings."""
        if isinstance(value, bool):
            raise TemplateNumberError(f"a template printed the boolean {value!r}; print words instead")
        if isinstance(value, (int, float)):
            raise TemplateNumberError(
                f"a template printed the bare number {value!r}; format it with a filter "
                "(num, signed, pct, count, pts, g) so the report can trace it")
        if value is None:
            return Markup("")
        if isinstance(value, Markup):
            return value
        text = str(value)
        self.strings.append(text)
        return Markup(escape.markdown(text))


def sentence(text: Any) -> Markup:
    """``text`` (escaped) with its first letter capitalised, the rest unchanged: a sentence start."""
    body = escape.markdown(str(text))
    return Markup(body[:1].upper() + body[1:])


def numeric_tokens(text: str) -> list[str]:
    """Every stand-alone numeric token of ``text`` (``+0.135``, ``81%``, ``1,534``)."""
    return NUMBER_TOKEN.findall(text)


def unsourced_numbers(text: str, trace: NumberTrace, allowed: Iterable[str] = ()) -> list[str]:
    """Numeric tokens of ``text`` that no filter emitted and no printed string contains.

    ``allowed`` is an explicit whitelist (e.g. the years of citations). Printed strings count
    as sources because they come from the data or from code (configuration names, table
    titles built from params), never from template text.
    """
    sources = set(trace.emitted) | set(allowed)
    for s in trace.strings:
        sources.update(numeric_tokens(s))
    norm = {t.replace("−", "-").lstrip("+") for t in sources}
    return [t for t in numeric_tokens(text)
            if t not in sources and t.replace("−", "-").lstrip("+") not in norm]
