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


# ---------------------------------------------------------------------------- labels are whole words
# Mistake caught: line_identifies matching the label as a plain substring (dropping the `(?<!\w)` or
# `(?!\w)` guard), so "export: 47311" names the label "port". The rule (graders.py module note): the
# label must appear as a phrase bounded by non-word characters. "export" has the word character "x"
# before "port", "portal" and "ports" have "a" / "s" after it, "sport_port" becomes "sport port"
# after `_` is replaced by a space, so there the second "port" stands alone.
@pytest.mark.parametrize(("line", "label", "expected"), [
    ("export: 47311", "port", False),            # word character before the label
    ("portal: 47311", "port", False),            # word character after the label
    ("ports: 47311", "port", False),
    ("telemetry relay portal: 30116", "relay port", False),
    ("export relay port: 30116", "relay port", True),  # the phrase itself is bounded
    ("port: 47311", "port", True),
    ("sport_port: 47311", "port", True),         # `_` is label punctuation -> "sport port"
])
def test_label_inside_another_word_does_not_identify_the_line(line, label, expected) -> None:
    assert line_identifies(line, label) is expected


def test_label_inside_another_word_fails_the_check() -> None:
    # End to end: the only line with the value names "export", not "port" -> not passed, although the
    # presence grader (no label rule) finds the value.
    (r,) = grade_answer("export: 47311", (GradedCheck("port", "47311"),))
    assert (r.passed, r.passed_presence) == (False, True)


# ---------------------------------------------------------------------------- in_carrier honours case
# Mistake caught: grade_answer auditing the carrier with `contains_token(carrier, expected)` and so
# ignoring the check's case_sensitive=False. The carrier below holds "helix-ops" in lower case; the
# planted value is "Helix-Ops". Declared case-insensitive, the value is in the carrier (True); the
# same check left case-sensitive (the default) is not (False). Both outcomes are fixed by hand from
# the module note: case is preserved unless the check declares otherwise.
def test_in_carrier_honours_case_insensitive_checks() -> None:
    carrier = "owning team: helix-ops (paged at 02:10 UTC)"
    relaxed = GradedCheck("owning team", "Helix-Ops", case_sensitive=False)
    strict = GradedCheck("owning team", "Helix-Ops")
    (r,) = grade_answer("", (relaxed,), carrier=carrier)
    assert r.in_carrier is True
    (s,) = grade_answer("", (strict,), carrier=carrier)
    assert s.in_carrier is False


# ---------------------------------------------------------------------------- grader case rule
def test_case_rule_on_latin_values_answer_and_carrier() -> None:
    # Second test of the case rule (the first uses a Cyrillic name): a Latin host name. Case is
    # preserved by default, so "ACME-Prod-7" does not match "acme-prod-7" in the answer, the presence
    # grader or the carrier; declared case-insensitive, all three match. Hand-derived from the rule.
    answer = "deploy target: acme-prod-7"
    strict = GradedCheck("deploy target", "ACME-Prod-7")
    relaxed = GradedCheck("deploy target", "ACME-Prod-7", case_sensitive=False)
    (s,) = grade_answer(answer, (strict,), carrier=answer)
    (r,) = grade_answer(answer, (relaxed,), carrier=answer)
    assert (s.passed, s.passed_presence, s.in_carrier) == (False, False, False)
    assert (r.passed, r.passed_presence, r.in_carrier) == (True, True, True)
    # Case folding never relaxes the whole-token rule: "acme-prod-70" still fails.
    assert not contains_token("acme-prod-70", "ACME-Prod-7", case_sensitive=False)


# ---------------------------------------------------------------------------- grader punctuation rules
@pytest.mark.parametrize(("text", "expected"), [
    # Value "47311". Before: a non-word character, or a joiner (-_./@+) not preceded by a word
    # character; ":" is not a joiner before the value. After: a non-word character, or a joiner
    # (-_./@:+) not followed by a word character.
    ("port=47311;", True),        # '=' and ';' are not word characters
    ("'47311'", True),
    ("[47311]", True),
    ("47311, then", True),
    ("port:47311", True),         # ':' before is allowed even after a word
    ("-47311", True),             # joiner at the start of the text, nothing before it
    ("47311:", True),             # joiner at the end of the text, nothing after it
    ("47311:x", False),           # joiner followed by a word character
    ("a/47311", False),           # joiner preceded by a word character
    ("47311_", False),            # '_' is a word character
    ("47311é", False),            # Unicode letters are word characters
])
def test_whole_token_punctuation_by_hand(text: str, expected: bool) -> None:
    assert contains_token(text, "47311") is expected


@pytest.mark.parametrize(("line", "expected"), [
    ("- `Telemetry_Relay-Port`: 30116", True),   # `, _ and - become spaces, case folded
    ("TELEMETRY  RELAY\tPORT = 30116", True),    # runs of spaces and tabs collapse
    ("*telemetry* *relay* *port*: 30116", True),
    ("telemetry.relay.port: 30116", False),      # '.' is not label punctuation: no phrase
    ("telemetry relayport: 30116", False),
])
def test_label_punctuation_by_hand(line: str, expected: bool) -> None:
    assert line_identifies(line, "telemetry relay port") is expected

