"""Replies of a summariser shaped like the runner's requests (shared with tests/support/scripted_server).

A fold request is answered in the shape it asks for: a JSON object for the schema in
``response_format`` (or, in JSON mode without a schema, the schema the fold prompt carries after
``Schema:``), five ``##`` headings when the system prompt asks for five headings, prose
otherwise. The kept lines go into the first string field (or the first heading); other string
fields read ``none``, arrays ``["maintenance"]``, booleans ``false``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from analysis.runner.graders import RECALL_SYSTEM_PROMPT
from analysis.safeio import loads_json

HEADINGS = (
    "Identifiers and values",
    "Configuration and endpoints",
    "People and ownership",
    "Schedule and deadlines",
    "Open work",
)
"""The five headings a plain fixed-headings reply writes."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP answer of a responder."""

    content: str | None = ""
    finish_reason: str = "stop"
    refusal: str | None = None
    status: int = 200
    model: str | None = None
    provider: str | None = None
    raw_body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()


def purpose_of(body: dict[str, Any]) -> str:
    """``recall`` for the runner's recall turn (its system prompt), else ``fold``."""
    return "recall" if body["messages"][0]["content"] == RECALL_SYSTEM_PROMPT else "fold"


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a fold request asks for (response_format or the prompt's ``Schema:``), or None."""
    rf = body.get("response_format")
    if rf is None:
        return None
    schema = rf.get("json_schema", {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
    if schema is None and "\nSchema:\n" in body["messages"][-1]["content"]:
        schema = loads_json(body["messages"][-1]["content"].split("\nSchema:\n", 1)[1], "fold prompt")
    return schema if isinstance(schema, dict) else None


def shape_reply(body: dict[str, Any], kept: list[str], *, preface: str = "") -> str:
    """A fold reply carrying the ``kept`` lines in the shape ``body`` asks for (``preface``: a first line)."""
    first = "\n".join([*([preface] if preface else []), *kept]) or "none"
    if body.get("response_format") is None:
        if "five headings" in body["messages"][0]["content"]:
            return "\n\n".join(f"## {h}\n{first if i == 0 else 'none'}" for i, h in enumerate(HEADINGS))
        return "So far the session recorded: " + "; ".join([*([preface] if preface else []),
                                                            *(k[2:] for k in kept)])
    schema = request_schema(body) or {"properties": {"summary": {"type": "string"}}}
    obj: dict[str, Any] = {}
    first_string = True
    for name, prop in schema["properties"].items():
        if prop.get("type") == "string":
            obj[name] = first if first_string else "none"
            first_string = False
        elif prop.get("type") == "array":
            obj[name] = ["maintenance"]
        else:
            obj[name] = False
    return json.dumps(obj, ensure_ascii=False)
