"""Replies of any shape (issue 31, item 4): every field is type-checked before use.

A reply whose `refusal` was a JSON object or list reached the protocol as is and raised
AttributeError (protocol.py, `(reply.refusal or "").strip()`), so every resume died on the same
slot.  Now an unexpected type anywhere in a reply ends the attempt as an invalid infrastructure
row naming the field; the sweep goes on.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from analysis.runner.arm_order import arm_order
from analysis.runner.arms import load_arms
from analysis.runner.bounded_http import BoundedTransport, http
from analysis.runner.cli import main as runner_main
from analysis.runner.client import CallResult, EndpointClient, EndpointConfig, InfraFault
from analysis.runner.ledger import Ledger, evidence_rows, read_records
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.pinning import Pin
from analysis.runner.protocol import ChatReply, InfrastructureFault, RunSettings, checked_reply, run_trajectory
from analysis.runner.sweep import SweepSpec, plan_slots, protocol_trajectory, run_sweep
from support.scripted_server import MemorizingModel, Reply, ScriptedServer
from support.sweep_args import strict_json_line as _strict
from support.sweep_args import sweep_args as _sweep

FIXTURE = load_fixture_arg("small")
ARMS = load_arms()


def _body(message: Any) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()


@pytest.mark.parametrize("refusal", [{"reason": "no"}, ["no"], 7, True])
def test_a_refusal_that_is_not_a_string_makes_an_invalid_row_not_a_crash(tmp_path: Path, refusal: Any) -> None:
    model = MemorizingModel(FIXTURE)

    def responder(body: dict, index: int) -> Reply:
        if index == 1:  # the second fold of the first trajectory
            return Reply(raw_body=_body({"role": "assistant", "content": "", "refusal": refusal}))
        return model(body, index)

    arms = {"j": ARMS["j"]}
    with ScriptedServer(responder, model="m") as srv:
        cfg = EndpointConfig(base_url=srv.base_url, model="m", api_key_env=None)
        slots = plan_slots(arm_order(["j"], 1), scenario=FIXTURE.spec.scenario, configuration="c", execution_group="g")
        spec = SweepSpec(tuple(slots), {FIXTURE.spec.scenario: len(FIXTURE.graded)}, {"j": None}, concurrency=1)

        async def go() -> dict:
            client = EndpointClient(cfg)
            try:
                with Ledger(tmp_path / "ledger.jsonl") as led:
                    return await run_sweep(spec, led, client, Pin.from_config(cfg),
                                           protocol_trajectory(FIXTURE, arms, RunSettings()), progress=False)
            finally:
                await client.aclose()

        tally = asyncio.run(go())  # before the fix: AttributeError: 'dict' object has no attribute 'strip'
    assert tally["valid"] == 1 and tally["infra_failed"] == 1
    rows = evidence_rows(read_records(tmp_path / "ledger.jsonl")).rows
    bad = [r for r in rows if not r["valid"]]
    assert len(bad) == 1 and bad[0]["invalid_reason"] == "infrastructure"
    faults = [r for r in read_records(tmp_path / "ledger.jsonl") if r["kind"] == "response" and not r["ok"]]
    assert len(faults) == 1 and "refusal" in faults[0]["detail"] and "not a string" in faults[0]["detail"]


# ---------------------------------------------------------------- property: any reply shape
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
JSON = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                    max_leaves=8)
FIELD = st.one_of(st.none(), st.text(max_size=40), JSON)
MESSAGE = st.one_of(JSON, st.fixed_dictionaries(
    {}, optional={"role": FIELD, "content": FIELD, "refusal": FIELD, "reasoning": FIELD,
                  "reasoning_content": FIELD, "tool_calls": JSON}))
CHOICE = st.one_of(JSON, st.fixed_dictionaries({}, optional={"index": JSON, "message": MESSAGE,
                                                             "finish_reason": FIELD}))
REPLY = st.one_of(JSON, st.fixed_dictionaries(
    {"id": st.just("c"), "object": st.just("chat.completion"), "created": st.just(1)},
    optional={"model": FIELD, "choices": st.one_of(JSON, st.lists(CHOICE, min_size=1, max_size=2)),
              "usage": st.one_of(JSON, st.fixed_dictionaries({}, optional={"prompt_tokens": JSON,
                                                                           "completion_tokens": JSON})),
              "provider": FIELD}))


class _Canned:
    """A reply body served by an in-process transport under the runner's bounded transport."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.client = EndpointClient(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=None))
        inner = http.MockTransport(lambda _req: http.Response(
            200, stream=http.ByteStream(self.body), headers={"content-type": "application/json"}))
        self.client._client = AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1", max_retries=0,
                                          http_client=http.AsyncClient(transport=BoundedTransport(inner)))


class _Backend:
    def __init__(self, reply: ChatReply) -> None:
        self.reply = reply

    async def complete(self, _request: Any) -> ChatReply:
        return self.reply


def _is_count(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


GOOD = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=REPLY)
@example(doc=GOOD)
@example(doc={**GOOD, "choices": [{"message": {"content": "", "refusal": {"r": 1}}, "finish_reason": "stop"}]})
def test_any_reply_shape_is_a_typed_result_or_an_infrastructure_fault(doc: Any) -> None:
    canned = _Canned()
    canned.body = json.dumps(doc).encode()
    body = canned.client.request_body([{"role": "user", "content": "x"}], max_tokens=8)

    async def go() -> CallResult | InfraFault:
        try:
            return await canned.client.send(body)
        except InfraFault as exc:
            return exc

    res = asyncio.run(go())
    if isinstance(res, InfraFault):
        assert res.kind == "truncated" and res.detail
        return
    assert isinstance(res.text, str)
    for v in (res.finish_reason, res.served_model, res.served_provider, res.refusal):
        assert v is None or isinstance(v, str)
    assert _is_count(res.prompt_tokens) and _is_count(res.completion_tokens)
    assert isinstance(res.reasoning_chars, int) and not math.isnan(res.latency_s)
    # and the protocol takes what the client returned without an exception
    reply = ChatReply(text=res.text, finish_reason=res.finish_reason, served_model=res.served_model,
                      provider=res.served_provider, refusal=res.refusal)
    out = asyncio.run(run_trajectory(_Backend(reply), FIXTURE, ARMS["j"], RunSettings()))
    assert out.infrastructure_fault is None


@settings(max_examples=100, deadline=None)
@given(text=FIELD, refusal=FIELD, finish=FIELD, model=FIELD)
def test_the_protocol_checks_a_backend_reply_before_use(text: Any, refusal: Any, finish: Any, model: Any) -> None:
    reply = ChatReply(text=text, finish_reason=finish, served_model=model, refusal=refusal)
    well_typed = isinstance(text, str) and all(v is None or isinstance(v, str) for v in (refusal, finish, model))
    if not well_typed:
        with pytest.raises(InfrastructureFault, match="not a string"):
            checked_reply(reply)
    out = asyncio.run(run_trajectory(_Backend(reply), FIXTURE, ARMS["q"], RunSettings()))
    assert (out.infrastructure_fault is None) == well_typed


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
@pytest.mark.parametrize("value", [{"text": "x"}, ["x"], 7, True])
def test_reasoning_that_is_not_a_string_is_a_fault_naming_it(field: str, value: Any) -> None:
    canned = _Canned()
    message = {"role": "assistant", "content": "ok", field: value}
    canned.body = json.dumps({**GOOD, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
    body = canned.client.request_body([{"role": "user", "content": "x"}], max_tokens=8)
    # before: silently counted as no reasoning (0 characters), unlike every other field
    with pytest.raises(InfraFault, match=f"reply {field} is a JSON .*, not a string"):
        asyncio.run(canned.client.send(body))


def test_reasoning_as_a_string_is_counted() -> None:
    canned = _Canned()
    message = {"role": "assistant", "content": "ok", "reasoning_content": "abcd"}
    canned.body = json.dumps({**GOOD, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
    body = canned.client.request_body([{"role": "user", "content": "x"}], max_tokens=8)
    assert asyncio.run(canned.client.send(body)).reasoning_chars == 4




# ------------------------------------------------------------------ the server's replies



def _reply(content: Any, usage: str = '{"prompt_tokens": 1, "completion_tokens": 1}') -> bytes:
    return (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "scripted/model-1", '
            b'"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
            + content + b'}}], "usage": ' + usage.encode() + b"}")


BAD_REPLIES = {
    "nan usage": (_reply(b'"ok"', '{"prompt_tokens": NaN, "completion_tokens": Infinity}'), (), "not a JSON number"),
    "content list": (_reply(b'["a", "b"]'), (), "not a string"),
    "lone surrogate": (_reply(b'"\\ud800"'), (), "lone surrogate"),
    "deep reply": (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", (), "nested deeper"),
    "gzip bomb": (gzip.compress(b" " * (80 << 20), 9), (("Content-Encoding", "gzip"),), "when decompressed"),
    "redirect": (b"{}", (("Location", "http://elsewhere.example/v1"),), "redirect"),
}


# ------------------------------------------------------------------ every wrong type in a reply

SHAPES = {  # the fault names the field and its JSON type (issue 31: JSON's names, not Python's)
    b'{"choices": "x"}': "no choices",
    b'{"choices": [null]}': "choice is a JSON null",
    b'{"choices": [{"message": "str", "finish_reason": "stop"}]}': "message is a JSON string",
    b'{"choices": [{"message": {"content": ["a"]}, "finish_reason": "stop"}]}': "content is a JSON array",
    b'{"choices": [{"message": {"content": "ok"}, "finish_reason": 3}]}': "finish_reason is a JSON number",
    b'{"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "model": 5}': "model is a JSON number",
    b"[1, 2]": "no choices",
}


@pytest.mark.parametrize("case", sorted(BAD_REPLIES))
def test_a_bad_reply_is_an_infrastructure_fault_and_never_reaches_the_files(tmp_path: Path, case: str) -> None:
    body, headers, needle = BAD_REPLIES[case]
    model = MemorizingModel(load_fixture_arg("small"))

    def responder(req: dict[str, Any], index: int) -> Reply:
        if index == 0:
            return Reply(raw_body=body, headers=headers, status=307 if case == "redirect" else 200)
        return model(req, index)

    with ScriptedServer(responder) as srv:
        rc = runner_main(_sweep(srv.base_url, tmp_path / "o"))
    assert rc == 0
    ledger = (tmp_path / "o" / "ledger.jsonl").read_bytes()
    records = [_strict(x) for x in ledger.splitlines()]
    assert needle in ledger.decode() and any(r.get("kind") == "attempt_end" and not r["valid"] for r in records)
    for line in (tmp_path / "o" / "evidence" / "folds.jsonl").read_bytes().splitlines():
        _strict(line)


def test_the_body_limit_is_in_the_help() -> None:
    from analysis.runner.arguments import build_runner_parser
    from analysis.runner.bounded_http import MAX_BODY_BYTES

    sub = build_runner_parser()._subparsers._group_actions[0].choices["sweep"]  # type: ignore[union-attr]
    assert f"{MAX_BODY_BYTES >> 20} MiB" in " ".join(sub.format_help().split())


def test_each_wrong_type_in_a_reply_is_a_named_fault() -> None:
    import asyncio

    from analysis.runner.client import EndpointClient, InfraFault

    bodies = list(SHAPES)

    async def ask(url: str) -> list[str]:
        client = EndpointClient(EndpointConfig(base_url=url, model="m"))
        found = []
        try:
            for _ in bodies:
                try:
                    await client.chat([{"role": "user", "content": "hi"}], max_tokens=5)
                    found.append("accepted")
                except InfraFault as exc:
                    found.append(exc.detail)
        finally:
            await client.aclose()
        return found

    with ScriptedServer(lambda _body, index: Reply(raw_body=bodies[index])) as srv:
        details = asyncio.run(ask(srv.base_url))
    for body, detail in zip(bodies, details, strict=True):
        assert SHAPES[body] in detail, (body, detail)

