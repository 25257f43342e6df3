"""Property tests of the fold protocol under random per-fold behaviour (in-process zero-latency backend)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner.arms import load_arms
from analysis.runner.fixture import DEFAULT_SPECS, build_fixture
from analysis.runner.protocol import RunSettings, derive_carrier, run_trajectory
from analysis.runner.sizing import estimate_tokens
from support.paths import REPO
from support.scripted_server import InProcessBackend, MemorizingModel, Reply

ARMS = load_arms()
S5 = build_fixture(DEFAULT_SPECS[2])
LONG = "## Open work\n" + "all services were checked again and nothing changed in the meantime. " * 300
BEHAVIOURS = {
    "ok": None,
    "malformed": Reply('{"summary": "unterminated'),
    "empty": Reply(""),
    "length_empty": Reply("", finish_reason="length"),
    "refusal": Reply(None, refusal="I can't help with that."),
    "verbose": Reply(LONG),
}


def scripted(plan):
    calls = {"n": -1}

    def fault(body, index, purpose):
        if purpose != "fold":
            return None
        calls["n"] += 1
        return BEHAVIOURS[plan[calls["n"] % len(plan)]]

    return fault


@settings(max_examples=40, deadline=None)
@given(
    code=st.sampled_from(list("jqmufgk")),
    plan=st.lists(st.sampled_from(list(BEHAVIOURS)), min_size=6, max_size=6),
)
def test_protocol_invariants_under_random_behaviour(code, plan):
    arm = ARMS[code]
    backend = InProcessBackend(MemorizingModel(S5, faults=scripted(plan)))
    result = asyncio.run(run_trajectory(backend, S5, arm, RunSettings()))
    folds = result.folds
    n = len(S5.chunks)
    # every chunk is sent at least once; each call sends a contiguous run; a chunk is folded
    # successfully at most once, in order; all are folded unless the final catch-up is lost too
    sent = [c for f in folds for c in f.chunks]
    assert set(sent) == set(range(n))
    assert all(list(f.chunks) == list(range(f.chunks[0], f.chunks[-1] + 1)) for f in folds)
    folded = [c for f in folds if not f.lost for c in f.chunks]
    assert folded == sorted(set(folded))
    assert folded == list(range(n)) or folds[-1].lost
    assert len(folds) in (n, n + 1)
    assert result.catchup_folds == sum(1 for f in folds if len(f.chunks) > 1 or f.index >= n)
    previous = ""
    for f in folds:
        if f.lost:
            assert f.carrier == previous and f.parse_ok is None and not f.clipped
        else:
            assert estimate_tokens(f.carrier) <= arm.carry_cap
            text = f.reply_text if f.reply_text.strip() else (f.refusal or "")
            unclipped, ok = derive_carrier(arm, text)
            assert f.clipped == (estimate_tokens(unclipped) > arm.carry_cap)
            assert f.carrier == unclipped[: len(f.carrier)] and f.parse_ok == ok
        previous = f.carrier
    assert result.final_carrier == previous
    # the single validity rule: on a distributed scenario a catch-up invalidates, nothing else does
    assert result.verdict.valid == (result.catchup_folds == 0)
    assert result.verdict.has_outcome and len(result.checks) == 14
    # the scripted model answers only from its carrier: passed implies in_carrier
    assert all(c.in_carrier for c in result.checks if c.passed)
    assert result.parse_failures == sum(1 for f in folds if f.parse_ok is False)
    assert result.parse_failures == 0 or arm.is_schema


def test_the_protocol_library_has_no_network_client():
    import subprocess
    import sys

    code = ("import sys, analysis.runner.protocol, analysis.runner.package, analysis.runner.fixture; "
            "print(sorted(m for m in ('openai', 'httpx', 'requests', 'aiohttp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout.strip()
    assert out == "[]"
