"""The simulated summariser: a responder that plays a planted truth (analysis.evidence.truth).

Methods note (ours). It answers the runner's real requests. A fold request names its arm by its
system prompt and schema (the arm's declared prompt, field names and descriptions); its user message
holds the previous carrier, then the chunk. For every graded value of the fixture (the fixture found
by the chunk header's "chunk k of n" and its k-th chunk's text): a value in the previous carrier is
kept with probability ``keep``; a value only in the chunk is captured with probability ``capture``
times the rung's load multipliers; the kept values are written one per line (``- label: value``)
under a first line naming the arm, in the shape the request asks (analysis.runner.simulate.replies).
The recall turn reads the arm from that first line of the carrier and answers every asked label with
its value, with probability ``recall``, when the value is in the carrier (of a label's values in all
fixtures, the one the carrier holds), else ``unknown``. Presence is the grader's whole-token rule
(analysis.evidence.tokens.contains_token).

Draws are seeded per call: the generator's seed is a SHA-256 of the salt, the truth's digest and
the request (seed sent, messages, response format, max_tokens; two arms with one system prompt
differ in their schema, so their draws are independent), so a call's reply is the same whenever it is sent,
whatever the concurrency; repeats differ when the sweep sends one seed per repeat. Fault draws
(``[faults]``) also count how often the same request was sent, so a retried call can succeed.
Faults never change which values a reply holds. Requests that are not the protocol's (the
capability probe's) get a well-formed reply of the shape asked, never a fault.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analysis.evidence.tokens import contains_token
from analysis.evidence.truth import Truth, TruthError
from analysis.runner.arms import Arm
from analysis.runner.fixture import Fixture
from analysis.runner.simulate.replies import Reply, purpose_of, request_schema, shape_reply

MARK = "(simulated summary, arm {code})"
_MARK_RE = re.compile(r"\(simulated summary, arm ([A-Za-z0-9]+)\)")
_ASK_RE = re.compile(r"^\d+\. (.+)$", re.MULTILINE)
_CHUNK_HEAD = "\n\nNext chunk"
_HEAD_RE = re.compile(r"s? of the session transcript \(chunks? (\d+)(?:-\d+)? of (\d+)\):")


def _factors(fx: Fixture) -> tuple[int, int, int]:
    """(graded values per chunk, chunk tokens, distractors) of a fixture, for the load effect."""
    if fx.spec.rung:
        from analysis.runner.ladder import rung_by_name

        r = rung_by_name(fx.spec.rung)
        return r.graded_per_chunk, r.chunk_tokens, r.distractors
    n = max(1, len(fx.chunks))
    return max(1, round(len(fx.graded) / n)), round(fx.spec.total_tokens / n), fx.spec.n_distractors


def _signature(prompt: str, schema: Mapping[str, Any] | None) -> tuple[str, tuple[str, ...]]:
    return prompt, tuple((schema or {}).get("properties", {}))


class SimulatedSummariser:
    """Responder ``(body, call_index) -> Reply`` playing ``truth`` on ``fixtures`` for ``arms``."""

    def __init__(self, truth: Truth, fixtures: Sequence[Fixture], arms: Mapping[str, Arm], *,
                 salt: str = "", model: str = "simulated/summariser") -> None:
        missing = [c for c in arms if c not in truth.arms]
        if missing:
            raise TruthError(f"arms.{missing[0]}: the sweep runs arm {missing[0]!r} but the truth file has no "
                             f"[arms.{missing[0]}] table; add it or drop the arm from --arms")
        self.truth, self.model, self.salt = truth, model, salt
        self.arms = dict(arms)
        self.fixtures = list(fixtures)
        self.factors = [_factors(fx) for fx in self.fixtures]
        self.facts = [[(p.label or "", p.value, p.case_sensitive) for p in fx.graded] for fx in self.fixtures]
        self.values: dict[str, list[tuple[str, bool]]] = {}  # label -> every (value, case) it has in any fixture
        for facts in self.facts:
            for label, value, cs in facts:
                if (value, cs) not in self.values.setdefault(label, []):
                    self.values[label].append((value, cs))
        self.by_signature: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for code, arm in self.arms.items():
            self.by_signature.setdefault(_signature(arm.prompt, arm.json_schema()), []).append(code)
        for codes in self.by_signature.values():
            if len({self.truth.arms[c] for c in codes}) > 1:
                raise TruthError(f"arms.{codes[1]}: arms {', '.join(codes)} send the same requests, so the "
                                 "simulation cannot tell them apart; give them the same probabilities or run one")
        self._sent: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self.faults_injected: dict[str, int] = {k: 0 for k in truth.faults}

    # ------------------------------------------------------------ draws
    def _digest(self, body: Mapping[str, Any]) -> bytes:
        key = json.dumps([self.salt, self.truth.sha256, body.get("seed"), body.get("messages"),
                          body.get("response_format"), body.get("max_tokens")], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()

    def _rngs(self, body: Mapping[str, Any]) -> tuple[np.random.Generator, np.random.Generator]:
        digest = self._digest(body)
        with self._lock:
            n = self._sent.get(digest, 0)
            self._sent[digest] = n + 1
        fault_seed = hashlib.sha256(digest + n.to_bytes(8, "little")).digest()
        return (np.random.default_rng(int.from_bytes(digest[:8], "little")),
                np.random.default_rng(int.from_bytes(fault_seed[:8], "little")))

    # ------------------------------------------------------------ replies
    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        if purpose_of(body) == "recall":
            return self._recall(body)
        code = self._arm_of(body)
        if code is None:  # the capability probe, or a request of no arm of this sweep
            return Reply(shape_reply(body, ["OK"]) if body.get("response_format") else "OK", model=self.model)
        return self._fold(body, code)

    def _arm_of(self, body: Mapping[str, Any]) -> str | None:
        codes = self.by_signature.get(_signature(body["messages"][0]["content"], request_schema(dict(body))))
        return codes[0] if codes else None

    def _fault(self, rng: np.random.Generator, *kinds: str) -> str | None:
        for kind in kinds:
            p = self.truth.faults[kind]
            if p > 0 and rng.random() < p:
                with self._lock:
                    self.faults_injected[kind] += 1
                return kind
        return None

    def _fold(self, body: dict[str, Any], code: str) -> Reply:
        rng, frng = self._rngs(body)
        if self._fault(frng, "server_error"):
            return Reply(status=503, model=self.model)
        user = body["messages"][-1]["content"]
        carrier, _, chunk = user.partition(_CHUNK_HEAD)
        which = self._fixture_of(chunk)
        facts = self.facts[which] if which is not None else []
        capture = self.truth.capture(code, *self.factors[which]) if which is not None else 0.0
        keep = self.truth.arms[code].keep
        draws = rng.random(len(facts))
        kept = []
        for (label, value, cs), u in zip(facts, draws, strict=True):
            if contains_token(carrier, value, case_sensitive=cs):
                if u < keep:
                    kept.append(f"- {label}: {value}")
            elif contains_token(chunk, value, case_sensitive=cs) and u < capture:
                kept.append(f"- {label}: {value}")
        text = shape_reply(body, kept, preface=MARK.format(code=code))
        schema = self.arms[code].is_schema
        fault = self._fault(frng, "parse_failure", "length_cut") if schema else self._fault(frng, "length_cut")
        if fault == "parse_failure":
            return Reply(text[:-1], model=self.model)
        if fault == "length_cut":
            return Reply(text[:-1] if schema else text + "\n(continued", finish_reason="length", model=self.model)
        return Reply(text, model=self.model)

    def _fixture_of(self, chunk: str) -> int | None:
        """The fixture whose chunk this is: the header's "chunk k of n" (k-th chunk, n chunks) and its text;
        without a header, any fixture holding the text."""
        head = _HEAD_RE.match(chunk)
        for i, fx in enumerate(self.fixtures):
            if head is not None:
                k, n = int(head.group(1)), int(head.group(2))
                if len(fx.chunks) == n and 1 <= k <= n and fx.chunks[k - 1].text and fx.chunks[k - 1].text in chunk:
                    return i
            elif any(c.text and c.text in chunk for c in fx.chunks):
                return i
        return None

    def _recall(self, body: dict[str, Any]) -> Reply:
        rng, frng = self._rngs(body)
        if self._fault(frng, "server_error"):
            return Reply(status=503, model=self.model)
        user = body["messages"][-1]["content"]
        carrier, _, asks = user.partition("\n\nAnswer each item below")
        mark = _MARK_RE.search(carrier)
        code = mark.group(1) if mark and mark.group(1) in self.truth.arms else None
        p = self.truth.arms[code].recall if code is not None else 0.0
        labels = _ASK_RE.findall(asks)
        draws = rng.random(len(labels))
        lines = []
        for label, u in zip(labels, draws, strict=True):
            # the label's value that this carrier holds (labels may repeat across fixtures with other values)
            value = next((v for v, cs in self.values.get(label, []) if contains_token(carrier, v, case_sensitive=cs)),
                         "")
            hit = bool(value) and u < p
            lines.append(f"{label}: {value if hit else 'unknown'}")
        return Reply("\n".join(lines), model=self.model)
