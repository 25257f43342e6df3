"""The v2 fixture: determinism, planted-value invariants, placement, size, committed files."""

from __future__ import annotations

import hashlib
import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.runner.fixture import (
    DEFAULT_SPECS,
    FixtureError,
    FixtureSpec,
    build_fixture,
    load_fixture,
)
from analysis.runner.sizing import estimate_tokens
from support.paths import REPO

FIXTURE_DIR = REPO / "analysis" / "runner" / "fixture_files"
GRADED_CLASSES = ["port", "port", "path", "count", "uuid", "timestamp", "timestamp", "timestamp", "url",
                  "dns_zone", "key_id", "handle", "release_tag", "department_cyrillic"]


@pytest.fixture(scope="module")
def big():
    return build_fixture(DEFAULT_SPECS[0])


def _all_values(fx):
    return [p.value for p in fx.graded] + [p.value for p in fx.distractors]


def test_fifty_values_fourteen_graded_of_the_paper_classes(big):
    assert len(big.graded) == 14 and len(big.distractors) == 36
    assert [p.value_class for p in big.graded] == GRADED_CLASSES
    assert {p.value_class for p in big.distractors} == {"cluster_id", "tenant_code", "licence_key", "image_digest"}
    assert all(p.label is None and not p.graded for p in big.distractors)
    assert len(set(big.labels)) == 14


def test_value_shapes(big):
    v = {p.key: p.value for p in big.graded}
    assert re.fullmatch(r"\d+ shards", v["shard_count"])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", v["batch_uuid"])
    stamps = [p.value for p in big.graded if p.value_class == "timestamp"]
    assert sum(s.endswith(" UTC") for s in stamps) == 2 and stamps[0].endswith("Z")
    assert re.fullmatch(r"[А-ЯЁ][а-яё]+ [а-яё]+ [а-яё]+", v["department"])
    assert v["cache_origin"].startswith("https://") and v["oncall_handle"].startswith("@")
    ports = [int(p.value) for p in big.graded if p.value_class == "port"]
    assert all(20000 <= p < 65000 for p in ports) and abs(ports[0] - ports[1]) > 999


def test_every_planted_value_exactly_once_and_no_substrings(big):
    text = big.full_text
    values = _all_values(big)
    for value in values:
        assert text.count(value) == 1, value
    for a in values:
        for b in values:
            assert a == b or a not in b, (a, b)


def test_labels_are_not_substrings_of_each_other(big):
    labels = [x.lower() for x in big.labels]
    assert not any(a != b and a in b for a in labels for b in labels)


def test_facts_land_in_the_declared_folds(big):
    spec = big.spec
    for p in big.graded:
        assert p.chunk == spec.placement[p.segment]
        assert p.value in big.chunks[p.chunk].text
    assert [c.segments for c in big.chunks] == [(0,), (1,), (2,), (3,), (4,)]
    assert len({p.chunk for p in big.graded}) == 5 and spec.distributed


def test_single_chunk_scenario_from_the_same_generator():
    s1 = build_fixture(DEFAULT_SPECS[1])
    s5 = build_fixture(DEFAULT_SPECS[0])
    assert s1.spec.scenario == "S1" and not s1.spec.distributed
    assert {p.chunk for p in s1.graded} == {4}
    # same seed, same values: only where they land differs
    assert [p.value for p in s1.graded] == [p.value for p in s5.graded]


def test_size_within_two_percent_of_target(big):
    assert abs(big.tokens_est - 150_000) <= 0.02 * 150_000
    assert abs(estimate_tokens(big.full_text) - 150_000) <= 0.02 * 150_000
    small = build_fixture(DEFAULT_SPECS[2])
    assert abs(small.tokens_est - small.spec.total_tokens) <= 0.02 * small.spec.total_tokens
    assert max(c.tokens_est for c in small.chunks) <= 900


def test_session_has_operator_assistant_tool_turns(big):
    roles = {t.role for c in big.chunks for t in c.turns}
    assert roles == {"operator", "assistant", "tool"}
    assert any('"name": "run_shell"' in t.text for c in big.chunks for t in c.turns if t.role == "assistant")


def test_deterministic_by_seed_and_sensitive_to_it():
    spec = DEFAULT_SPECS[2]
    a, b = build_fixture(spec), build_fixture(spec)
    assert a.to_json() == b.to_json() and a.digest == b.digest
    other = build_fixture(FixtureSpec(spec.name, seed=spec.seed + 1, total_tokens=spec.total_tokens))
    assert [p.value for p in other.graded] != [p.value for p in a.graded]


def test_generation_of_the_150k_session_under_one_second():
    t0 = time.perf_counter()
    build_fixture(DEFAULT_SPECS[0])
    assert time.perf_counter() - t0 < 1.0


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n_chunks=st.integers(1, 7),
    per_chunk=st.integers(600, 3000),
    data=st.data(),
)
def test_invariants_hold_for_any_seed_and_placement(seed, n_chunks, per_chunk, data):
    n_seg = data.draw(st.integers(1, 6))
    placement = tuple(data.draw(st.lists(st.integers(0, n_chunks - 1), min_size=n_seg, max_size=n_seg)))
    total = max(2_500, per_chunk * n_chunks)  # fifty planted values need ~1,500 tokens
    spec = FixtureSpec("h", seed=seed, total_tokens=total, n_chunks=n_chunks, placement=placement)
    fx = build_fixture(spec)
    text = fx.full_text
    assert all(text.count(v) == 1 for v in _all_values(fx))
    assert all(p.chunk == placement[p.segment] for p in fx.graded)
    assert abs(fx.tokens_est - spec.total_tokens) <= 0.02 * spec.total_tokens


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"n_chunks": 0, "placement": (0,)}, "n_chunks"),
        ({"n_chunks": 3, "placement": (0, 3)}, "outside"),
        ({"n_chunks": 2, "placement": ()}, "segments"),
        ({"n_chunks": 5, "total_tokens": 1000}, "too small"),
        ({"n_chunks": 2, "total_tokens": 1000, "placement": (0, 1)}, "raise total_tokens"),
    ],
)
def test_bad_specs_say_the_fix(kwargs, needle):
    with pytest.raises(FixtureError, match=needle):
        build_fixture(FixtureSpec("bad", **kwargs))


def test_committed_fixture_set_matches_the_generator_and_its_lock():
    lock = json.loads((FIXTURE_DIR / "provenance.lock").read_text())
    assert sorted(lock["files"]) == sorted(f"{s.name}.json" for s in DEFAULT_SPECS)
    for spec in DEFAULT_SPECS:
        path = FIXTURE_DIR / f"{spec.name}.json"
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == lock["files"][path.name]
        assert len(data) < 2_000_000
        assert data.decode("utf-8") == build_fixture(spec).to_json(), f"{path.name} is stale; regenerate it"
        loaded = load_fixture(path)
        assert loaded.to_json() == data.decode("utf-8")
