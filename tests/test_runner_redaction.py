"""Redaction of registered keys: the longest secret is replaced first (issue 32)."""
from __future__ import annotations

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
