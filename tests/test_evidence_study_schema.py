"""study.toml's structural checks run through its JSON Schema (analysis.evidence.study_schema).

Each test names the fault it catches ("Plant: ..."). The oracle for the messages is the hand-made
package's study.toml (tests/fixtures/handmade), whose line numbers are counted by hand below.
"""
from __future__ import annotations

from pathlib import Path

from jsonschema import Draft202012Validator

from analysis.evidence.schema import MAX_COUNT, MAX_TOKENS
from analysis.evidence.study import parse_study
from analysis.evidence.study_schema import STUDY_SCHEMA

HANDMADE_STUDY = (Path(__file__).parent / "fixtures" / "handmade" / "study.toml").read_bytes()


def _problems(old: bytes, new: bytes, extra: bytes = b"") -> list[tuple[int | None, str | None, str]]:
    data = HANDMADE_STUDY.replace(old, new, 1) + extra
    assert data != HANDMADE_STUDY + extra or old == new
    parsed = parse_study(data)
    return [(p.line, p.column, p.message) for p in parsed.problems]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    # Plant: a misspelt keyword type ("minimun": ignored) is not caught by this; a wrong value type is
    # (e.g. "required": "name"). The oracle is the Draft 2020-12 meta-schema.
    Draft202012Validator.check_schema(STUDY_SCHEMA)


def test_a_float_is_not_an_integer_even_when_it_is_whole() -> None:
    # Plant: drop the strict `integer` type of study_schema._validator -> Draft 2020-12 accepts 3.0.
    # planned_repeats of the first [[partition_runs]] is on line 27 of the hand-made study.toml.
    assert _problems(b"planned_repeats = 3\n", b"planned_repeats = 3.0\n") == [
        (27, "partition_runs[0].planned_repeats", f"must be an integer in 1..{MAX_COUNT}, not 3.0")]


def test_a_configuration_name_ending_in_a_newline_is_refused() -> None:
    # Plant: drop `(?!\n)` from study_schema._pattern -> Python's `$` matches before a final newline.
    got = _problems(b'[configurations."acme/alpha-2"]', b'[configurations."acme/alpha-2\\n"]')
    assert got[0][1] == 'configurations."acme/alpha-2\n"'  # line: the scanner does not unescape keys
    assert got[0][2].startswith("configuration key 'acme/alpha-2\\n' is not an identifier")


def test_every_structural_problem_is_reported_at_its_line() -> None:
    # Plant: stop at the first schema error (validate instead of iter_errors) -> one problem, not three.
    data = (HANDMADE_STUDY.replace(b'control = "j"\n', b'control = "J"\n')
            .replace(b'kind = "fixture"\n', b'kind = "nonsense"\n')
            .replace(b'family = "beta"\n', b'family = ""\n'))
    got = [(p.line, p.column) for p in parse_study(data).problems]
    assert got == [(4, "study.control"), (7, "study.kind"), (20, 'configurations."beta/beta-1".family')]


def test_a_missing_required_key_names_the_key_and_the_fix() -> None:
    # Plant: drop "required" from study_schema.toml_table_schema -> a missing key passes silently.
    assert _problems(b'scenario = "S5"\n', b"") == [
        (1, "study.scenario", "required key 'scenario' is missing; add it")]


def test_a_runner_integer_outside_its_range_is_refused() -> None:
    # Plant: drop "runner" from STUDY_SCHEMA -> context_length = 0 is accepted.
    extra = b'\n[runner."acme/alpha-1"]\ncontext_length = 0\nfold_max_tokens = 4096\n'
    assert _problems(b"", b"", extra) == [
        (40, 'runner."acme/alpha-1".context_length',
         f"context_length is 0, not an integer in 1..{MAX_TOKENS}; write the value the endpoint really has, "
         "then re-lock")]
