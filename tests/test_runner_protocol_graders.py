"""Label-bound whole-token grader and presence grader, with tricky answers.

Expected verdicts below are written by hand from the rule in analysis/runner/graders.py:
a check passes iff one answer line names the label, carries the value as a whole token and
carries no other graded value.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner.graders import GradedCheck, contains_token, grade_answer, line_identifies, recall_prompt

CHECKS = (
    GradedCheck("billing gateway port", "41432"),
    GradedCheck("telemetry relay port", "30116"),
    GradedCheck("search shard count", "46 shards"),
    GradedCheck("owning department", "Управление платёжной отчётности"),
    GradedCheck("hotfix release tag", "v11.47.364-hf8"),
    GradedCheck("failover drill time", "17:51 UTC"),
    GradedCheck("primary on-call handle", "@elka.okafor93"),
    GradedCheck("state lock path", "/var/opt/yarrow/amber-state/lumen.lock"),
)


def passed(answer: str, label: str, checks=CHECKS) -> bool:
    return {r.label: r.passed for r in grade_answer(answer, checks)}[label]


def test_clean_answer_passes_every_check():
    answer = "\n".join(f"{c.label}: {c.expected}" for c in CHECKS)
    results = grade_answer(answer, CHECKS, carrier=answer)
    assert all(r.passed and r.passed_presence and r.in_carrier for r in results)


def test_value_on_the_wrong_labels_line_fails():
    answer = "billing gateway port: 30116\ntelemetry relay port: 41432"
    assert not passed(answer, "billing gateway port")
    assert not passed(answer, "telemetry relay port")
    # ... while the presence grader still finds both values
    assert all(r.passed_presence for r in grade_answer(answer, CHECKS)[:2])


def test_a_line_carrying_another_graded_value_fails():
    answer = "billing gateway port: 41432 (the relay uses 30116)"
    assert not passed(answer, "billing gateway port")


def test_trailing_dot_and_bracketing_punctuation_pass():
    assert passed("The billing gateway port is 41432.", "billing gateway port")
    assert passed("billing gateway port: (41432)", "billing gateway port")
    assert passed("**Billing gateway port**: `41432`", "billing gateway port")
    assert passed("billing gateway port:41432", "billing gateway port")
    assert passed("state lock path: /var/opt/yarrow/amber-state/lumen.lock.", "state lock path")


@pytest.mark.parametrize("answer", [
    "billing gateway port: 414321",
    "billing gateway port: 141432",
    "billing gateway port: 41432.5",
    "billing gateway port: x-41432",
    "billing gateway port: 41432abc",
])
def test_substring_of_a_longer_token_fails(answer):
    assert not passed(answer, "billing gateway port")


def test_release_tag_inside_longer_tag_fails():
    assert not passed("hotfix release tag: v11.47.364-hf8x", "hotfix release tag")
    assert not passed("hotfix release tag: v11.47.364-hf8-rc1", "hotfix release tag")
    assert passed("hotfix release tag: v11.47.364-hf8", "hotfix release tag")


def test_cyrillic_name_in_another_case_fails_unless_declared():
    assert passed("owning department: Управление платёжной отчётности", "owning department")
    assert not passed("owning department: управление платёжной отчётности", "owning department")
    assert not passed("owning department: УПРАВЛЕНИЕ ПЛАТЁЖНОЙ ОТЧЁТНОСТИ", "owning department")
    relaxed = (GradedCheck("owning department", "Управление платёжной отчётности", case_sensitive=False),)
    assert passed("owning department: управление платёжной отчётности", "owning department", relaxed)


def test_cyrillic_in_decomposed_unicode_is_normalised():
    decomposed = "Управление платёжной отчётности".replace("ё", "е\u0308")
    assert passed(f"owning department: {decomposed}", "owning department")


def test_count_without_its_unit_fails():
    assert not passed("search shard count: 46", "search shard count")
    assert not passed("search shard count: 46 shard", "search shard count")
    assert passed("search shard count: 46 shards", "search shard count")
    assert passed("search shard count: 46\u00a0shards", "search shard count")  # NBSP collapsed


def test_timestamp_without_unit_word_fails():
    assert not passed("failover drill time: 17:51", "failover drill time")
    assert passed("failover drill time: 17:51 UTC", "failover drill time")


def test_label_identification_is_case_and_markdown_insensitive():
    assert line_identifies("3. **Primary On-Call Handle**: @elka.okafor93", "primary on-call handle")
    assert line_identifies("| primary on_call handle | x |", "primary on-call handle")
    assert not line_identifies("secondary handle: x", "primary on-call handle")
    assert passed("Primary on-call handle -> @elka.okafor93", "primary on-call handle")


def test_unknown_and_empty_answers_fail_without_error():
    assert not any(r.passed for r in grade_answer("", CHECKS))
    assert not passed("billing gateway port: unknown", "billing gateway port")


def test_repeated_appearances_add_nothing():
    answer = "billing gateway port: 41432\nbilling gateway port: 41432"
    results = grade_answer(answer, CHECKS)
    assert sum(r.passed for r in results) == 1


def test_in_carrier_is_none_without_a_carrier_and_uses_the_boundary_rule():
    results = grade_answer("billing gateway port: 41432", CHECKS)
    assert all(r.in_carrier is None for r in results)
    audited = grade_answer("", CHECKS, carrier="ports: 414320 and 30116.")
    assert [r.in_carrier for r in audited[:2]] == [False, True]


def test_recall_prompt_lists_every_label_once_in_order():
    labels = [c.label for c in CHECKS]
    text = recall_prompt("CARRIER", labels)
    assert text.startswith("Running summary of the session so far:\nCARRIER")
    positions = [text.index(f"{i}. {label}") for i, label in enumerate(labels, 1)]
    assert positions == sorted(positions)


@settings(max_examples=60, deadline=None)
@given(
    left=st.text(alphabet="abcXYZ019 -_.:/()", max_size=6),
    right=st.text(alphabet="abcXYZ019 -_.:/()", max_size=6),
)
def test_whole_token_matches_exactly_when_boundaries_are_clean(left, right):
    text = f"{left}41432{right}"
    # hand rule: no word char (alnum or '_') touching; a touching joiner is fine only when the
    # character beyond it is not a word char (':' is not a joiner before the value)
    def word(ch: str) -> bool:
        return ch.isalnum() or ch == "_"

    before_ok = not left or (not word(left[-1]) and not (left[-1] in "-./" and len(left) > 1 and word(left[-2])))
    after_ok = not right or (not word(right[0]) and not (right[0] in "-./:" and len(right) > 1 and word(right[1])))
    # the alphabet has no 2, 3 or 4, so the value occurs exactly once in ``text``
    assert contains_token(text, "41432") == (before_ok and after_ok)
