"""Full fold-and-recall trajectories driven through the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json

import pytest

from analysis.runner.arms import ARM_CODES, load_arms
from analysis.runner.fixture import DEFAULT_SPECS, build_fixture
from analysis.runner.protocol import RunSettings, run_trajectory
from analysis.runner.sizing import MESSAGE_OVERHEAD_TOKENS, estimate_tokens
from support.scripted_server import MemorizingModel, OpenAIBackend, Reply, ScriptedServer

ARMS = load_arms()
S5 = build_fixture(DEFAULT_SPECS[2])
S1 = build_fixture(DEFAULT_SPECS[3])


JSON_SCHEMA_SETTINGS = RunSettings(seed=11, response_format_style="json_schema")


def run(fixture, code, model, settings=JSON_SCHEMA_SETTINGS):
    async def go():
        with ScriptedServer(model) as server:
            backend = OpenAIBackend(server.base_url)
            try:
                result = await run_trajectory(backend, fixture, ARMS[code], settings)
            finally:
                await backend.aclose()
            assert not server.errors, server.errors
            return result, server.requests

    return asyncio.run(go())


def fold_fault(fold_no, reply):
    """Override the reply of the fold call with 0-based index ``fold_no``."""
    state = {"n": -1}

    def fault(body, index, purpose):
        if purpose != "fold":
            return None
        state["n"] += 1
        return reply if state["n"] == fold_no else None

    return fault


@pytest.mark.parametrize("code", ARM_CODES)
def test_every_arm_recalls_everything_from_a_perfect_memorizer(code):
    result, requests = run(S5, code, MemorizingModel(S5))
    assert result.verdict.valid and result.checks_passed == 14 and result.checks_total == 14
    assert len(result.folds) == 5 and len(requests) == 6
    assert result.finish_count("stop") == 5 and result.parse_failures == 0 and result.folds_clipped == 0
    assert all(c.in_carrier and c.passed_presence for c in result.checks)
    assert result.headings_carried == (5 if ARMS[code].carry == "headings" or code in "mul" else 0)
    fold_bodies = requests[:5]
    rf = fold_bodies[0].get("response_format")
    assert (rf is not None) == ARMS[code].is_schema
    assert all(b["max_tokens"] == ARMS[code].output_tokens for b in fold_bodies)
    assert all(b["seed"] == 11 and b["temperature"] == 0.0 for b in requests)
    assert requests[0]["messages"][0]["content"] == ARMS[code].prompt


def test_each_fold_sends_the_previous_carrier_and_exactly_one_chunk():
    result, requests = run(S5, "q", MemorizingModel(S5))
    for i, body in enumerate(requests[:5]):
        user = body["messages"][1]["content"]
        assert S5.chunks[i].text in user
        assert all(S5.chunks[k].text not in user for k in range(5) if k != i)
        previous = result.folds[i - 1].carrier if i else "(none yet"
        assert previous in user
        assert f"(chunk {i + 1} of 5)" in user
    recall_user = requests[5]["messages"][1]["content"]
    assert result.final_carrier in recall_user
    assert all(c.text not in recall_user for c in S5.chunks)  # nothing re-reads the transcript
    assert [f.carrier for f in result.folds][-1] == result.final_carrier


def test_prompt_token_estimates_are_additive_and_close_to_a_direct_estimate():
    result, requests = run(S5, "j", MemorizingModel(S5))
    assert len(requests) == len(result.folds) + 1  # one request per fold, then the recall
    for fold, body in zip(result.folds, requests[:-1], strict=True):
        direct = sum(estimate_tokens(m["content"]) for m in body["messages"]) + 2 * MESSAGE_OVERHEAD_TOKENS
        direct += estimate_tokens(json.dumps(body["response_format"], ensure_ascii=False))
        assert abs(fold.prompt_tokens_est - direct) <= max(3, 0.01 * direct)
    assert result.prompt_tokens_est == sum(f.prompt_tokens_est for f in result.folds) + result.recall_prompt_tokens_est


def test_json_object_schema_style_for_llama_cpp():
    settings = RunSettings(response_format_style="json_object_schema")
    result, requests = run(S5, "q", MemorizingModel(S5), settings)
    assert requests[0]["response_format"] == {"type": "json_object", "schema": ARMS["q"].json_schema()}
    assert "seed" not in requests[0] and result.checks_passed == 14


def test_json_mode_without_schema_puts_the_schema_in_the_prompt():
    result, requests = run(S5, "q", MemorizingModel(S5), RunSettings(response_format_style="json_object"))
    assert requests[0]["response_format"] == {"type": "json_object"}
    assert '"maxLength": 1920' in requests[0]["messages"][1]["content"]
    assert result.checks_passed == 14 and result.parse_failures == 0


def test_style_none_puts_the_schema_in_the_prompt():
    _result, requests = run(S5, "j", MemorizingModel(S5), RunSettings(response_format_style="none"))
    assert "response_format" not in requests[0]
    assert '"maxLength": 9600' in requests[0]["messages"][1]["content"]


def test_malformed_json_is_carried_raw_and_counted():
    bad = '{"summary": "- billing gateway port: 41432 and then'
    result, _ = run(S5, "j", MemorizingModel(S5, faults=fold_fault(2, Reply(bad))))
    fold = result.folds[2]
    assert fold.parse_ok is False and fold.carrier == bad
    assert result.parse_failures == 1 and result.verdict.valid  # arm behaviour stays in the data
    # the facts of chunks 0-2 that the raw text lost are gone; chunks 3-4 are still carried
    assert 0 < result.checks_passed < 14


def test_length_cut_reply_counts_finish_length_and_parse_failure():
    cut = Reply('{"identifiers_and_values": "- telemetry relay port: 30', finish_reason="length")
    result, _ = run(S5, "q", MemorizingModel(S5, faults=fold_fault(1, cut)))
    assert result.finish_count("length") == 1 and result.finish_count("stop") == 4
    assert result.parse_failures == 1 and result.verdict.valid
    assert result.folds[1].carrier == cut.content


def test_refusal_in_a_fold_and_in_the_answer_stays_valid():
    refuse = Reply(None, refusal="I can't help with that request.")
    result, _ = run(S5, "j", MemorizingModel(S5, faults=fold_fault(4, refuse)))
    assert result.folds[4].refusal and result.folds[4].carrier == "I can't help with that request."
    assert result.verdict.valid and result.checks_passed == 0 and result.parse_failures == 1

    def refuse_answer(body, index, purpose):
        return Reply("I'm sorry, I can't share those values.") if purpose == "recall" else None

    result, _ = run(S5, "m", MemorizingModel(S5, faults=refuse_answer))
    assert result.verdict.valid and result.checks_passed == 0 and result.answer.startswith("I'm sorry")
    assert all(c.in_carrier for c in result.checks)  # carrier-present, answer-missed


def test_empty_answer_is_arm_behaviour_not_a_fault():
    def empty(body, index, purpose):
        return Reply("") if purpose == "recall" else None

    result, _ = run(S5, "q", MemorizingModel(S5, faults=empty))
    assert result.verdict.valid and result.checks_passed == 0 and result.answer == ""


def test_lost_fold_triggers_catch_up_and_invalidates_distributed_rows():
    result, requests = run(S5, "j", MemorizingModel(S5, faults=fold_fault(2, Reply(""))))
    assert [f.chunks for f in result.folds] == [(0,), (1,), (2,), (2, 3), (4,)]
    assert result.folds[2].lost and result.folds[2].carrier == result.folds[1].carrier
    user = requests[3]["messages"][1]["content"]
    assert S5.chunks[2].text in user and S5.chunks[3].text in user and "(chunks 3-4 of 5)" in user
    assert result.catchup_folds == 1
    assert not result.verdict.valid and result.verdict.reason == "catchup" and result.verdict.has_outcome
    assert result.checks_passed == 14  # the outcome is kept, the row is excluded by the rule


def test_catch_up_on_the_single_chunk_scenario_keeps_the_row_valid():
    result, _ = run(S1, "j", MemorizingModel(S1, faults=fold_fault(1, Reply(""))))
    assert result.catchup_folds == 1 and result.verdict.valid


def test_lost_last_fold_gets_one_catch_up_call():
    result, requests = run(S5, "m", MemorizingModel(S5, faults=fold_fault(4, Reply("", finish_reason="length"))))
    assert [f.chunks for f in result.folds] == [(0,), (1,), (2,), (3,), (4,), (4,)]
    assert result.catchup_folds == 1 and len(requests) == 7 and result.checks_passed == 14


@pytest.mark.parametrize("reply", [
    Reply(status=500), Reply(status=503), Reply(status=429, headers=(("Retry-After", "1"),)),
    Reply(raw_body=b'{"id": "x", "choi', status=200),
])
def test_infrastructure_faults_end_the_trajectory_without_an_outcome(reply):
    result, requests = run(S5, "q", MemorizingModel(S5, faults=fold_fault(3, reply)))
    assert len(result.folds) == 3 and len(requests) == 4
    v = result.verdict
    assert (v.valid, v.reason, v.retryable, v.has_outcome) == (False, "infrastructure", True, False)
    assert result.checks_passed is None and result.checks == () and result.answer is None


def test_recall_fault_is_infrastructure_too():
    def fail_recall(body, index, purpose):
        return Reply(status=502) if purpose == "recall" else None

    result, _ = run(S5, "m", MemorizingModel(S5, faults=fail_recall))
    assert result.verdict.reason == "infrastructure" and len(result.folds) == 5


def test_recursive_carry_cap_clips_and_records():
    long = "## Identifiers and values\n" + ("the operator checked the services again and all is well. " * 400)

    def verbose(body, index, purpose):
        return Reply(long) if purpose == "fold" else None

    result, _ = run(S5, "u", MemorizingModel(S5, faults=verbose))
    assert result.folds_clipped == 5
    for fold in result.folds:
        assert fold.clipped and fold.carrier_unclipped_chars == len(long.strip())
        assert estimate_tokens(fold.carrier) <= 1400 < estimate_tokens(long)
    m_result, _ = run(S5, "m", MemorizingModel(S5, faults=verbose))
    assert len(m_result.final_carrier) > len(result.final_carrier)  # cap 2,400 vs 1,400


def test_forgotten_and_unread_facts_separate_fold_loss_from_answer_loss():
    model = MemorizingModel(S5, forget=["owning department"], skip_in_answer=["billing gateway port"])
    result, _ = run(S5, "q", model)
    by = {c.label: c for c in result.checks}
    assert not by["owning department"].in_carrier and not by["owning department"].passed
    assert by["billing gateway port"].in_carrier and not by["billing gateway port"].passed
    assert result.checks_passed == 12


def test_served_model_and_provider_are_recorded_per_call():
    result, _ = run(S5, "j", MemorizingModel(S5, provider="acme-cloud"))
    assert result.served_models == ("scripted/model-1",) and result.providers == ("acme-cloud",)
    assert all(f.provider == "acme-cloud" and f.usage for f in result.folds)
