"""Redaction of registered keys: the longest secret is replaced first (issue 32)."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from analysis.runner import secrets


@pytest.fixture()
def registry() -> Iterator[None]:
    secrets.forget_secrets()
    yield
    secrets.forget_secrets()


@pytest.mark.parametrize("order", [("sk-abcd", "sk-abcd-EFGH-long"), ("sk-abcd-EFGH-long", "sk-abcd")])
def test_a_key_that_contains_another_key_is_never_half_redacted(registry: None, order: tuple[str, str]) -> None:
    # Plant: `sorted(_secrets, key=len)` (shortest first) in redact_text -> the short key is replaced
    # inside the long one and "-EFGH-long", a part of the long key, is written to disk.
    for key in order:
        secrets.register_secret(key)
    text = "auth: sk-abcd-EFGH-long; other: sk-abcd."
    assert secrets.redact_text(text) == "auth: [REDACTED]; other: [REDACTED]."
    assert secrets.redact({"k": [text]}) == {"k": ["auth: [REDACTED]; other: [REDACTED]."]}


# -------------------------------------------------------------------------------- key redaction
def test_redaction_covers_the_json_escaped_spelling_and_dict_keys_at_any_depth() -> None:
    # Plants: register_secret without json.dumps(value)[1:-1] -> the escaped spelling survived;
    # redact() without redact(k) for mapping keys -> a key used as a dict key survived.
    key = 'sk-"quoted"\\back'
    secrets.forget_secrets()
    try:
        secrets.register_secret(key)
        escaped = json.dumps(key)[1:-1]
        assert escaped != key
        assert secrets.redact_text(f"body: {escaped}") == "body: [REDACTED]"
        nested = {"a": [{"b": ({key: "v"},)}]}
        assert json.dumps(secrets.redact(nested)).count("REDACTED") == 1
        assert key not in json.dumps(secrets.redact(nested))
    finally:
        secrets.forget_secrets()

