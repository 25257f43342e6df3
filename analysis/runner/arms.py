"""Arms as data: representation, schema, prompt, budgets and carry policy.

Methods note. An arm is the policy under which the summariser writes and the
runtime carries its replacement memory (paper Section 3.2). The twelve arms
live in ``arms.toml``; this module only turns that data into typed, frozen
:class:`Arm` objects, builds each arm's JSON Schema from its field list (the
per-field ``maxLength`` is the declared character ceiling), hashes each
system prompt, and shapes the ``response_format`` a request carries in one of
three styles chosen per endpoint (OpenAI ``json_schema``, llama.cpp-style
``json_object`` with a ``schema``, or none). :func:`factorial` crosses
semantic labels x field boundaries x per-field ceilings x rendering x fold
depth, the design the paper says would separate its compound treatment.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from analysis.locations import package_path
from analysis.safeio import read_toml

__all__ = [
    "ARM_CODES",
    "FIXED_HEADINGS",
    "Arm",
    "ArmError",
    "DesignCell",
    "Field",
    "ResponseFormatStyle",
    "factorial",
    "load_arms",
    "response_format",
]

ARMS_FILE = package_path("runner", "arms.toml")
ARM_CODES: tuple[str, ...] = ("f", "n", "j", "p", "q", "k", "o", "m", "t", "u", "l", "g")
ResponseFormatStyle = Literal["json_schema", "json_object_schema", "json_object", "none"]
_CARRY = ("raw", "field", "headings", "plain")
_TYPES = {"string", "string_array", "boolean"}


class ArmError(ValueError):
    """An arm definition that cannot be used as written."""


@dataclass(frozen=True, slots=True)
class Field:
    """One schema field."""

    name: str
    """Property name in the JSON Schema."""
    type: str = "string"
    """``string``, ``string_array`` or ``boolean``."""
    max_length: int | None = None
    """Declared per-field character ceiling (``maxLength``); ``None`` for none."""
    description: str | None = None
    """The field's description sent in the schema."""

    def json_schema(self) -> dict[str, Any]:
        """The property's JSON Schema."""
        if self.type == "string":
            out: dict[str, Any] = {"type": "string"}
            if self.max_length is not None:
                out["maxLength"] = self.max_length
        elif self.type == "string_array":
            out = {"type": "array", "items": {"type": "string"}}
        else:
            out = {"type": "boolean"}
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class Arm:
    """One carrier policy."""

    code: str
    """Arm code (``j``, ``q`` ... or a generated factorial code)."""
    title: str
    """One-line description."""
    prompt_id: str
    """Key of the system prompt."""
    prompt: str
    """System prompt text, byte-exact."""
    representation: str
    """``schema`` or ``plain``."""
    carry: str
    """``raw``, ``field``, ``headings`` or ``plain`` (see arms.toml)."""
    output_tokens: int
    """API output-token budget per fold (``max_tokens``)."""
    carry_cap: int
    """Recursive carry cap in estimated tokens."""
    fields: tuple[Field, ...] = ()
    """Schema fields (empty for plain arms)."""
    carry_field: str | None = None
    """The field carried when ``carry == 'field'``."""
    headings: tuple[str, ...] = ()
    """Headings rendered for ``carry == 'headings'`` (one per string field, in order)."""

    @property
    def prompt_sha256(self) -> str:
        """SHA-256 of the system prompt's UTF-8 bytes."""
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()

    @property
    def is_schema(self) -> bool:
        """True when the arm requests structured output."""
        return self.representation == "schema"

    @property
    def declared_chars(self) -> int | None:
        """Declared total character allowance of the carried string fields; ``None`` if undeclared."""
        carried = [f for f in self.fields if f.type == "string"]
        if self.carry == "field":
            carried = [f for f in carried if f.name == self.carry_field]
        if not carried or any(f.max_length is None for f in carried):
            return None
        return sum(f.max_length or 0 for f in carried)

    def json_schema(self) -> dict[str, Any] | None:
        """The arm's JSON Schema, or ``None`` for plain arms."""
        if not self.is_schema:
            return None
        return {
            "type": "object",
            "properties": {f.name: f.json_schema() for f in self.fields},
            "required": [f.name for f in self.fields],
            "additionalProperties": False,
        }

    def validate(self) -> None:
        """Raise :class:`ArmError` naming the fix when the definition is inconsistent."""
        if self.carry not in _CARRY:
            raise ArmError(f"arm {self.code}: carry {self.carry!r} not in {_CARRY}")
        if self.representation not in ("schema", "plain"):
            raise ArmError(f"arm {self.code}: representation must be 'schema' or 'plain'")
        if self.is_schema and not self.fields:
            raise ArmError(f"arm {self.code}: a schema arm needs at least one field")
        if not self.is_schema and (self.fields or self.carry != "plain"):
            raise ArmError(f"arm {self.code}: a plain arm has no fields and carry = 'plain'")
        if self.is_schema and self.carry == "plain":
            raise ArmError(f"arm {self.code}: a schema arm carries 'raw', 'field' or 'headings'")
        for f in self.fields:
            if f.type not in _TYPES:
                raise ArmError(f"arm {self.code}: field {f.name} type {f.type!r} not in {sorted(_TYPES)}")
        names = [f.name for f in self.fields]
        if self.carry == "field" and self.carry_field not in names:
            raise ArmError(f"arm {self.code}: carry_field {self.carry_field!r} must name one of {names}")
        strings = [f for f in self.fields if f.type == "string"]
        if self.carry == "headings" and len(self.headings) != len(strings):
            raise ArmError(
                f"arm {self.code}: carry = 'headings' needs one heading per string field "
                f"({len(strings)} fields, {len(self.headings)} headings)"
            )
        if self.output_tokens < 1 or self.carry_cap < 1:
            raise ArmError(f"arm {self.code}: output_tokens and carry_cap must be positive")


def response_format(arm: Arm, style: ResponseFormatStyle, *, strict: bool = True) -> dict[str, Any] | None:
    """The ``response_format`` of a fold request for ``arm`` under an endpoint's style.

    ``json_schema``: OpenAI structured outputs; ``json_object_schema``: the shape
    llama.cpp's server accepts (``{"type": "json_object", "schema": ...}``);
    ``json_object``: JSON mode without a schema; ``none``: no response_format.
    With ``json_object`` and ``none`` the schema travels in the fold prompt
    instead. (llama-cpp-python 0.3.x cannot compile a grammar for a
    ``maxLength`` in the thousands, so its server needs ``json_object``.)
    Plain arms never send one.
    """
    schema = arm.json_schema()
    if schema is None or style == "none":
        return None
    if style == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": f"carrier_{arm.code}", "strict": strict, "schema": schema}}
    if style == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if style == "json_object":
        return {"type": "json_object"}
    raise ArmError(f"unknown response_format style {style!r}; use json_schema, json_object_schema, json_object or none")


def _arm_from_table(code: str, t: Mapping[str, Any], prompts: Mapping[str, str], headings: Sequence[str]) -> Arm:
    try:
        prompt = prompts[t["prompt"]]
    except KeyError as exc:
        raise ArmError(f"arm {code}: unknown prompt {t.get('prompt')!r}; define it under [prompts]") from exc
    fields = tuple(
        Field(f["name"], f.get("type", "string"), f.get("max_length"), f.get("description"))
        for f in t.get("fields", [])
    )
    carry = t["carry"]
    arm = Arm(
        code=code,
        title=t["title"],
        prompt_id=t["prompt"],
        prompt=prompt,
        representation=t["representation"],
        carry=carry,
        output_tokens=int(t["output_tokens"]),
        carry_cap=int(t["carry_cap"]),
        fields=fields,
        carry_field=t.get("carry_field"),
        headings=tuple(t.get("headings", headings)) if carry == "headings" else (),
    )
    arm.validate()
    return arm


@lru_cache(maxsize=8)
def _load(path: str) -> tuple[tuple[str, ...], dict[str, Arm]]:
    doc = read_toml(path)
    headings = tuple(doc["headings"])
    arms = {code: _arm_from_table(code, t, doc["prompts"], headings) for code, t in doc["arms"].items()}
    return headings, arms


def load_arms(path: str | Path = ARMS_FILE) -> dict[str, Arm]:
    """All arms defined in ``path`` (default: the packaged ``arms.toml``), by code."""
    return dict(_load(str(path))[1])


#: The five fixed headings (counted as ``headings_carried``).
FIXED_HEADINGS: tuple[str, ...] = _load(str(ARMS_FILE))[0]


# ---------------------------------------------------------------- factorial
@dataclass(frozen=True, slots=True)
class DesignCell:
    """One cell of the factorial design: an arm and the fold depth it runs at."""

    arm: Arm
    """The generated arm."""
    depth: int
    """Fold depth: number of chunks the session is cut into."""
    factors: Mapping[str, str]
    """The factor levels that produced this cell."""


def factorial(
    *,
    labels: Sequence[str] = ("semantic", "opaque"),
    boundaries: Sequence[int] = (1, 5),
    ceilings: Sequence[str] = ("split", "none"),
    renderings: Sequence[str] = ("headings", "raw"),
    depths: Sequence[int] = (1, 5),
    total_chars: int = 9_600,
    base: str = "j",
) -> tuple[DesignCell, ...]:
    """Cross semantic labels x field boundaries x per-field ceilings x rendering x fold depth.

    Every generated arm keeps the base arm's system prompt, output-token budget
    and carry cap, so only the crossed factors move. ``split`` divides
    ``total_chars`` evenly over the fields (capacity matched); ``none`` declares
    no ceiling. ``headings`` parses and renders the fields under their labels
    (semantic) or ``Part i`` (opaque); ``raw`` carries the reply JSON as is.
    """
    arms = load_arms()
    if base not in arms:
        raise ArmError(f"factorial base arm {base!r} is not defined; use one of {sorted(arms)}")
    b = arms[base]
    cells = []
    for lab, k, ceil, rend, depth in itertools.product(labels, boundaries, ceilings, renderings, depths):
        if lab not in ("semantic", "opaque") or ceil not in ("split", "none") or rend not in ("headings", "raw"):
            raise ArmError(f"unknown factor level in {(lab, k, ceil, rend)}; see factorial's docstring")
        if k < 1 or depth < 1:
            raise ArmError("boundaries and depths must be positive integers")
        names = _field_names(lab, k)
        heads = tuple(FIXED_HEADINGS[i] if lab == "semantic" and k == 5 else n.replace("_", " ").capitalize()
                      for i, n in enumerate(names))
        limit = total_chars // k if ceil == "split" else None
        fields = tuple(Field(n, "string", limit, h if lab == "semantic" else None)
                       for n, h in zip(names, heads, strict=True))
        code = f"x{lab[0]}{k}{ceil[0]}{rend[0]}"
        arm = replace(b, code=code, title=f"factorial {lab}/{k} fields/{ceil}/{rend}", fields=fields,
                      carry="headings" if rend == "headings" else "raw", carry_field=None,
                      headings=heads if rend == "headings" else ())
        arm.validate()
        cells.append(DesignCell(arm, depth, {"labels": lab, "boundaries": str(k), "ceiling": ceil,
                                             "rendering": rend, "depth": str(depth)}))
    return tuple(cells)


def _field_names(labels: str, k: int) -> tuple[str, ...]:
    if labels == "opaque":
        return tuple(f"part_{i + 1}" for i in range(k))
    if k == 1:
        return ("summary",)
    if k == 5:
        return tuple(h.lower().replace(" ", "_") for h in FIXED_HEADINGS)
    return tuple(f"{FIXED_HEADINGS[i % 5].lower().replace(' ', '_')}_{i // 5 + 1}" for i in range(k))


def arm_record(arm: Arm) -> dict[str, Any]:
    """A JSON-ready description of the arm (for manifests and packages)."""
    return {
        "code": arm.code,
        "title": arm.title,
        "prompt_id": arm.prompt_id,
        "prompt_sha256": arm.prompt_sha256,
        "representation": arm.representation,
        "carry": arm.carry,
        "output_tokens": arm.output_tokens,
        "carry_cap": arm.carry_cap,
        "declared_chars": arm.declared_chars,
        "schema": arm.json_schema(),
        "schema_sha256": hashlib.sha256(json.dumps(arm.json_schema(), sort_keys=True).encode()).hexdigest()
        if arm.is_schema else None,
    }


def arms_listing(arms: Mapping[str, Arm] | None = None) -> list[str]:
    """One line per arm for ``carriers-runner arms``: code, meaning, representation, carry and budget."""
    arms = load_arms() if arms is None else arms
    width = max((len(c) for c in arms), default=1)
    return [f"{code:<{width}}  {arm.title} ({arm.representation}, carries {arm.carry}, "
            f"{arm.output_tokens} output tokens per fold)" for code, arm in arms.items()]
