"""The public v2 fixture: a deterministic synthetic long agent session.

Methods note. A session is a sequence of turns (operator prose, assistant turns
with tool calls, tool outputs of repetitive log lines) cut into ``n_chunks``
chunks of equal estimated size (frozen heuristic, :mod:`analysis.runner.sizing`).
Fifty values are planted: fourteen graded facts of the paper's classes and
thirty-six distractors (cluster ids, tenant codes, licence keys, image digests)
that are never asked. The graded facts are grouped into *segments* (fact ``i``
belongs to segment ``i mod n_segments``) and ``placement[s]`` names the chunk
that segment ``s`` lands in, so "five segments in five distinct folds" is a
declared choice (the paper's v1 put five segments into three folds by
accident). Every planted value occurs exactly once in the session and no
planted value is a substring of another; this is verified on every build and
a violation raises :class:`FixtureError`. Everything is drawn from
``random.Random(seed)``; the same spec always yields byte-identical JSON.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

from analysis.runner import fixture_text as T
from analysis.runner.sizing import HEURISTIC_ID, estimate_tokens
from analysis.safeio import SafeIOError, read_json, write_text

__all__ = [
    "DEFAULT_SPECS",
    "Chunk",
    "Fixture",
    "FixtureError",
    "FixtureSpec",
    "PlantedValue",
    "Turn",
    "build_fixture",
    "load_fixture",
    "write_fixture_set",
]

FORMAT_VERSION = 1
_MAX_TRIES = 200
N_DISTRACTORS = 9 * len(T.DISTRACTOR_CLASSES)
"""Distractors of a full fixture (nine per class)."""
_LADDER_FIELDS = {"n_graded": len(T.GRADED_FACTS), "n_distractors": N_DISTRACTORS, "rung": ""}
"""Spec fields added for the load ladder: left out of the JSON at their defaults, so the
fixtures written before the ladder keep every byte."""


class FixtureError(ValueError):
    """A fixture spec or build that violates the fixture's invariants."""


@dataclass(frozen=True, slots=True)
class FixtureSpec:
    """Parameters of one generated session."""

    name: str
    """File stem and identity of the fixture (e.g. ``s5-150k``)."""
    scenario: str = "S5"
    """Scenario code written into rows (``S5`` distributed, ``S1`` single chunk)."""
    seed: int = 20260601
    """Seed of ``random.Random``; determines every value and every filler line."""
    total_tokens: int = 150_000
    """Target estimated size of the whole session (frozen heuristic)."""
    n_chunks: int = 5
    """Number of chunks, i.e. folds of an undisturbed trajectory."""
    placement: tuple[int, ...] = (0, 1, 2, 3, 4)
    """``placement[s]`` is the chunk index of planted segment ``s``."""
    n_graded: int = len(T.GRADED_FACTS)
    """Graded facts planted: the first ``n_graded`` of ``fixture_text.GRADED_FACTS`` (load ladder)."""
    n_distractors: int = N_DISTRACTORS
    """Distractors planted (0..36), taken round-robin over the four distractor classes (load ladder)."""
    rung: str = ""
    """Name of the load-ladder rung this spec is (``""``: not a rung); written into every row."""

    def validate(self) -> None:
        """Raise :class:`FixtureError` naming the fix when the spec is unusable."""
        if self.n_chunks < 1:
            raise FixtureError(f"{self.name}: n_chunks must be >= 1, got {self.n_chunks}")
        if not 1 <= self.n_graded <= len(T.GRADED_FACTS):
            raise FixtureError(f"{self.name}: n_graded must be 1..{len(T.GRADED_FACTS)}, got {self.n_graded}")
        if not 0 <= self.n_distractors <= N_DISTRACTORS:
            raise FixtureError(f"{self.name}: n_distractors must be 0..{N_DISTRACTORS}, got {self.n_distractors}")
        if not 1 <= len(self.placement) <= self.n_graded:
            raise FixtureError(
                f"{self.name}: placement needs 1..{self.n_graded} segments (one graded fact at least "
                f"per segment), got {len(self.placement)}"
            )
        bad = [c for c in self.placement if not 0 <= c < self.n_chunks]
        if bad:
            raise FixtureError(
                f"{self.name}: placement chunk indices {bad} outside 0..{self.n_chunks - 1}; "
                "use indices of existing chunks"
            )
        per_chunk = self.total_tokens / self.n_chunks
        floor = max(60, 7 * (self.n_graded + self.n_distractors))  # 350 for the full fifty values
        if per_chunk < floor:
            raise FixtureError(
                f"{self.name}: {per_chunk:.0f} tokens per chunk is too small to hold planted "
                f"segments; raise total_tokens or lower n_chunks (>= {floor} tokens per chunk)"
            )

    @property
    def distributed(self) -> bool:
        """True when the graded facts arrive in more than one fold."""
        return len(set(self.placement)) > 1


@dataclass(frozen=True, slots=True)
class PlantedValue:
    """One planted value (graded fact or distractor)."""

    key: str
    """Stable key, e.g. ``billing_port`` or ``cluster_id_3``."""
    label: str | None
    """The label the recall turn asks for; ``None`` for distractors."""
    value: str
    """The exact planted string."""
    value_class: str
    """Class of value (``port``, ``uuid``, ``cluster_id`` ...)."""
    graded: bool
    """Whether the recall turn asks for it."""
    chunk: int
    """Index of the chunk that contains it."""
    segment: int | None
    """Planted segment of a graded fact; ``None`` for distractors."""
    case_sensitive: bool = True
    """Whether grading preserves case (all v2 facts do)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One rendered turn of the session."""

    role: str
    """``operator``, ``assistant`` or ``tool``."""
    text: str
    """Rendered text including its header line."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A contiguous run of turns, folded as one unit."""

    index: int
    """0-based chunk index (fold order)."""
    turns: tuple[Turn, ...]
    """The turns of the chunk."""
    segments: tuple[int, ...]
    """Planted segments that land in this chunk."""
    text: str = field(repr=False)
    """The chunk as sent to a fold (turns joined by blank lines)."""
    tokens_est: int = 0
    """Estimated tokens of ``text`` (frozen heuristic)."""


@dataclass(frozen=True)
class Fixture:
    """A built session with its planted values."""

    spec: FixtureSpec
    chunks: tuple[Chunk, ...]
    graded: tuple[PlantedValue, ...]
    distractors: tuple[PlantedValue, ...]
    heuristic: str = HEURISTIC_ID

    @property
    def tokens_est(self) -> int:
        """Estimated size of the whole session."""
        return sum(c.tokens_est for c in self.chunks)

    @property
    def labels(self) -> tuple[str, ...]:
        """Graded labels in recall order."""
        return tuple(p.label or "" for p in self.graded)

    @property
    def full_text(self) -> str:
        """The whole session as one text."""
        return "\n\n".join(c.text for c in self.chunks)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, UTF-8, trailing newline)."""
        doc = {
            "format_version": FORMAT_VERSION,
            "spec": {**{k: v for k, v in asdict(self.spec).items()
                        if k not in _LADDER_FIELDS or v != _LADDER_FIELDS[k]},
                     "placement": list(self.spec.placement)},
            "heuristic": self.heuristic,
            "tokens_est": self.tokens_est,
            "graded": [asdict(p) for p in self.graded],
            "distractors": [asdict(p) for p in self.distractors],
            "chunks": [
                {
                    "index": c.index,
                    "segments": list(c.segments),
                    "tokens_est": c.tokens_est,
                    "turns": [{"role": t.role, "text": t.text} for t in c.turns],
                }
                for c in self.chunks
            ],
        }
        return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=1) + "\n"

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- values
def _draw_value(rng: random.Random, cls: str, used_ports: set[int]) -> str:
    if cls == "port":
        while True:
            p = rng.randrange(20000, 65000)
            s = str(p)
            if len(set(s)) >= 4 and p % 100 and all(abs(p - q) > 999 for q in used_ports):
                used_ports.add(p)
                return s
    if cls == "path":
        a, b, c = rng.sample(T.WORDS, 3)
        return f"/var/opt/{a}/{b}-state/{c}.lock"
    if cls == "count":
        n = rng.choice([k for k in range(11, 98) if k % 5 and k not in (16, 32, 64)])
        return f"{n} shards"
    if cls == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if cls == "url":
        a, b, c = rng.sample(T.WORDS, 3)
        return f"https://{a}-origin.{b}cdn.net/{c}"
    if cls == "dns_zone":
        a, b = rng.sample(T.WORDS, 2)
        return f"{a}.{b}-ops.lan"
    if cls == "key_id":
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "sigk_" + "".join(rng.choice(alphabet) for _ in range(12))
    if cls == "handle":
        return f"@{rng.choice(T.FIRST_NAMES)}.{rng.choice(T.LAST_NAMES)}{rng.randrange(11, 99)}"
    if cls == "release_tag":
        return f"v{rng.randrange(3, 12)}.{rng.randrange(10, 60)}.{rng.randrange(101, 399)}-hf{rng.randrange(2, 9)}"
    if cls == "department_cyrillic":
        return f"{rng.choice(T.DEPT_PREFIX)} {rng.choice(T.DEPT_ADJ)} {rng.choice(T.DEPT_NOUN)}"
    if cls == "timestamp":
        raise FixtureError("timestamps are drawn by _draw_timestamps")
    if cls == "cluster_id":
        return "clu-" + "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(7))
    if cls == "tenant_code":
        letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(4))
        return f"TN-{letters}-{rng.randrange(10, 99)}"
    if cls == "licence_key":
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "-".join("".join(rng.choice(alphabet) for _ in range(5)) for _ in range(4))
    if cls == "image_digest":
        return "sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64))
    raise FixtureError(f"unknown value class {cls!r}")


def _draw_timestamps(rng: random.Random) -> list[str]:
    """Three unrelated UTC timestamps: ISO with Z, clock time with unit word, date+time with unit word."""
    months = rng.sample(range(3, 12), 2)
    hh = rng.sample(range(24), 3)
    mm = [rng.choice([m for m in range(1, 60) if m % 5]) for _ in range(3)]
    return [
        f"2026-{months[0]:02d}-{rng.randrange(1, 28):02d}T{hh[0]:02d}:{mm[0]:02d}:{rng.randrange(1, 60):02d}Z",
        f"{hh[1]:02d}:{mm[1]:02d} UTC",
        f"2026-{months[1]:02d}-{rng.randrange(1, 28):02d} {hh[2]:02d}:{mm[2]:02d} UTC",
    ]


def _round_robin(distractors: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Distractors interleaved over their classes: a rung with ``n < 36`` distractors plants the
    first ``n`` of this order (a full fixture keeps the drawn order)."""
    by_cls: dict[str, list[tuple[str, str]]] = {}
    for cls, v in distractors:
        by_cls.setdefault(cls, []).append((cls, v))
    return [d for row in zip(*by_cls.values(), strict=True) for d in row]


def _no_substring(values: Sequence[str]) -> bool:
    return not any(a != b and a in b for a in values for b in values)


def _draw_values(rng: random.Random) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str]]]:
    """Graded (key, label, class, value) and distractor (class, value), pairwise non-substring."""
    for _ in range(_MAX_TRIES):
        used: set[int] = set()
        stamps = iter(_draw_timestamps(rng))
        graded = []
        for key, label, cls, _tpl in T.GRADED_FACTS:
            v = next(stamps) if cls == "timestamp" else _draw_value(rng, cls, used)
            graded.append((key, label, cls, v))
        distractors = [
            (cls, _draw_value(rng, cls, used)) for cls, _tpl in T.DISTRACTOR_CLASSES for _ in range(9)
        ]
        if _no_substring([g[3] for g in graded] + [d[1] for d in distractors]):
            return graded, distractors
    raise FixtureError("could not draw non-substring planted values; try another seed")


# ---------------------------------------------------------------- filler
class _Filler:
    """Filler turns; never contain a planted value (see fixture_text)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.clock = 0.0

    def log_line(self) -> str:
        r = self.rng
        self.clock += r.uniform(0.05, 2.5)
        sec = self.clock % 10000.0
        req = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
        return (
            f"t+{sec:08.3f}s [{r.choice(T.LEVELS)}] {r.choice(T.SERVICES)} req={req} "
            f"status={r.choice(T.STATUSES)} latency={r.randrange(2, 900)}ms "
            f"path=/{r.choice(T.WORDS)}/{r.choice(T.WORDS)}"
        )

    def operator(self) -> Turn:
        r = self.rng
        text = r.choice(T.OPERATOR_FILLER).format(s=r.choice(T.SERVICES), w=r.choice(T.WORDS))
        return Turn("operator", f"[operator]\n{text}")

    def assistant_call(self) -> Turn:
        r = self.rng
        s = r.choice(T.SERVICES)
        say = r.choice(T.ASSISTANT_FILLER).format(s=s, w=r.choice(T.WORDS))
        cmd = r.choice(T.TOOL_COMMANDS).format(s=s, m=r.randrange(5, 90), n=r.randrange(50, 500))
        call = json.dumps({"name": "run_shell", "arguments": {"cmd": cmd}})
        return Turn("assistant", f"[assistant]\n{say}\n{call}")

    def tool_output(self, n_lines: int) -> Turn:
        lines = [self.log_line() for _ in range(n_lines)]
        return Turn("tool", "[tool run_shell]\n" + "\n".join(lines))


def _planted_turns(
    rng: random.Random, facts: list[tuple[str, str, str, str]], distractors: list[tuple[str, str]]
) -> list[Turn]:
    templates = {key: tpl for key, _l, _c, tpl in T.GRADED_FACTS}
    d_templates = dict(T.DISTRACTOR_CLASSES)
    sentences = [templates[k].format(v=v) for k, _l, _c, v in facts]
    sentences += [d_templates[c].format(v=v) for c, v in distractors]
    rng.shuffle(sentences)
    op = Turn("operator", "[operator]\nBefore we continue, some facts for the record.\n" + "\n".join(sentences))
    return [op, Turn("assistant", "[assistant]\n" + rng.choice(T.ASSISTANT_ACK))]


def _distractor_turn(rng: random.Random, cls: str, v: str) -> Turn:
    text = dict(T.DISTRACTOR_CLASSES)[cls].format(v=v)
    return Turn("operator", f"[operator]\n{text}")


def _join(turns: Sequence[Turn]) -> str:
    return "\n\n".join(t.text for t in turns)


def _fill_chunk(filler: _Filler, fixed: list[Turn], target: int, rng: random.Random) -> list[Turn]:
    """Surround ``fixed`` turns with filler until the chunk's estimate reaches ``target``."""
    body: list[Turn] = []
    used = estimate_tokens(_join(fixed)) + 2 * len(fixed)
    k = min(70, max(4, target // 400))
    while True:
        block = [filler.operator(), filler.assistant_call(), filler.tool_output(rng.randrange(k // 2, k))]
        cost = estimate_tokens(_join(block)) + 2
        if used + cost > target:
            break
        body.extend(block)
        used += cost
    # the fixed turns go in together at a seeded block boundary
    pos = rng.randrange(len(body) // 3 + 1) * 3
    turns = body[:pos] + fixed + body[pos:]
    # top up with one tool call whose output is cut to the remaining budget
    if target - estimate_tokens(_join(turns)) > 8:
        turns.append(filler.assistant_call())
        base = estimate_tokens(_join(turns))
        lines = ["[tool run_shell]"]
        while True:
            line = filler.log_line()
            lines.append(line)
            over = base + estimate_tokens("\n\n" + "\n".join(lines)) - target
            if over >= 0:
                if over > 0:
                    lines[-1] = line[: max(8, len(line) - int(over * 3.3))]
                break
        turns.append(Turn("tool", "\n".join(lines)))
    return turns


# ---------------------------------------------------------------- build
def _targets(spec: FixtureSpec, fixed_costs: Sequence[int]) -> list[int]:
    """Per-chunk targets summing to ``total_tokens``; a chunk whose planted content
    alone exceeds the equal share gets that content plus a small filler margin."""
    n = spec.n_chunks
    targets = [0] * n
    rest = list(range(n))
    budget = spec.total_tokens
    while True:
        share = budget / max(1, len(rest))
        big = [c for c in rest if fixed_costs[c] + 40 > share]
        if not big:
            break
        for c in big:
            targets[c] = fixed_costs[c] + 40
            budget -= targets[c]
            rest.remove(c)
    base = budget // max(1, len(rest))
    for c in rest:
        targets[c] = base
    if rest:
        targets[rest[-1]] += budget - base * len(rest)
    return targets


_Graded = tuple[str, str, str, str]
"""A graded value: (key, label, value class, value)."""
_Distractor = tuple[str, str]
"""A distractor: (value class, value)."""


def build_fixture(spec: FixtureSpec) -> Fixture:
    """Build the session described by ``spec`` (deterministic in ``spec``).

    The steps draw from one seeded generator in a fixed order (values, distractor placement, planted
    turns, filler), so a step may not be reordered without changing every fixture.
    """
    spec.validate()
    rng = random.Random(spec.seed)
    graded, distractors = _draw_values(rng)  # always all fifty, so a rung's values are the full set's
    graded = graded[: spec.n_graded]
    if spec.n_distractors < len(distractors):
        distractors = _round_robin(distractors)[: spec.n_distractors]
    n_seg = len(spec.placement)
    seg_of = [i % n_seg for i in range(len(graded))]
    fixed_by_chunk, segs_by_chunk = _fixed_turns(spec, rng, graded, seg_of, distractors)
    costs = [estimate_tokens(_join(f)) + 2 * len(f) for f in fixed_by_chunk]
    need = sum(costs) + 40 * spec.n_chunks
    if need > spec.total_tokens:
        raise FixtureError(
            f"{spec.name}: the planted content needs about {need} tokens but total_tokens is "
            f"{spec.total_tokens}; raise total_tokens"
        )
    chunks = _filled_chunks(spec, rng, fixed_by_chunk, segs_by_chunk, _targets(spec, costs))
    where = _where_planted(spec, chunks, [g[3] for g in graded] + [d[1] for d in distractors])
    graded_pv = tuple(
        PlantedValue(key=key, label=label, value=v, value_class=cls, graded=True,
                     chunk=where[v][0][0], segment=seg_of[i])
        for i, (key, label, cls, v) in enumerate(graded)
    )
    return Fixture(spec, tuple(chunks), graded_pv, _distractor_values(distractors, where))


def _fixed_turns(spec: FixtureSpec, rng: random.Random, graded: Sequence[_Graded], seg_of: Sequence[int],
                 distractors: Sequence[_Distractor]) -> tuple[list[list[Turn]], list[tuple[int, ...]]]:
    """Each chunk's planted turns (its segments' facts, two distractors riding in each segment, then the
    loose distractors scattered onto it) and the segments it holds."""
    n_seg = len(spec.placement)
    d_order = list(range(len(distractors)))
    rng.shuffle(d_order)
    seg_distractors = {s: [distractors[d_order.pop()] for _ in range(min(2, len(d_order)))] for s in range(n_seg)}
    loose = [distractors[i] for i in d_order]
    free = [c for c in range(spec.n_chunks) if c not in spec.placement] or list(range(spec.n_chunks))
    loose_chunk = [rng.choice(free) for _ in loose]

    fixed_by_chunk: list[list[Turn]] = []
    segs_by_chunk: list[tuple[int, ...]] = []
    for c in range(spec.n_chunks):
        fixed: list[Turn] = []
        segs = tuple(s for s in range(n_seg) if spec.placement[s] == c)
        for s in segs:
            facts = [g for g, sg in zip(graded, seg_of, strict=True) if sg == s]
            fixed += _planted_turns(rng, facts, seg_distractors[s])
        fixed += [_distractor_turn(rng, cls, v) for (cls, v), ch in zip(loose, loose_chunk, strict=True) if ch == c]
        fixed_by_chunk.append(fixed)
        segs_by_chunk.append(segs)
    return fixed_by_chunk, segs_by_chunk


def _filled_chunks(spec: FixtureSpec, rng: random.Random, fixed_by_chunk: Sequence[list[Turn]],
                   segs_by_chunk: Sequence[tuple[int, ...]], targets: Sequence[int]) -> list[Chunk]:
    """The chunks, each filled to its token target (a chunk's overshoot is taken off the next one's)."""
    filler = _Filler(rng)
    chunks: list[Chunk] = []
    carry = 0
    for c in range(spec.n_chunks):
        turns = _fill_chunk(filler, fixed_by_chunk[c], targets[c] - carry, rng)
        text = _join(turns)
        est = estimate_tokens(text)
        carry = est - (targets[c] - carry)
        chunks.append(Chunk(c, tuple(turns), segs_by_chunk[c], text, est))
    return chunks


def _where_planted(spec: FixtureSpec, chunks: Sequence[Chunk],
                   values: Sequence[str]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Value -> (chunk index, occurrences) of each chunk holding it; every value must occur exactly once."""
    where: dict[str, tuple[tuple[int, int], ...]] = {}
    for ch in chunks:
        for cls_v in values:
            n = ch.text.count(cls_v)
            if n:
                where[cls_v] = (*where.get(cls_v, ()), (ch.index, n))
    for v in values:
        hits = where.get(v, ())
        if sum(n for _c, n in hits) != 1:
            raise FixtureError(f"{spec.name}: planted value {v!r} occurs {hits}; expected exactly once")
    return where


def _distractor_values(distractors: Sequence[_Distractor],
                       where: dict[str, tuple[tuple[int, int], ...]]) -> tuple[PlantedValue, ...]:
    """The distractors as planted values, keyed by class and a count within the class (ipv4_1, ipv4_2, ...)."""
    counters: dict[str, int] = {}
    d_pv = []
    for cls, v in distractors:
        counters[cls] = counters.get(cls, 0) + 1
        d_pv.append(PlantedValue(key=f"{cls}_{counters[cls]}", label=None, value=v, value_class=cls,
                                 graded=False, chunk=where[v][0][0], segment=None))
    return tuple(d_pv)


def load_fixture(path: str | Path) -> Fixture:
    """Read a fixture JSON written by :meth:`Fixture.to_json` (round-trips byte-identically)."""
    try:
        doc = read_json(path)
    except SafeIOError as exc:
        raise FixtureError(f"{exc}; regenerate the fixture") from None
    if not isinstance(doc, dict):
        raise FixtureError(f"{path}: not a fixture (a JSON object); regenerate it")
    if doc.get("format_version") != FORMAT_VERSION:
        raise FixtureError(f"{path}: format_version {doc.get('format_version')} != {FORMAT_VERSION}; regenerate it")
    sd = doc["spec"]
    spec = FixtureSpec(**{**sd, "placement": tuple(sd["placement"])})
    chunks = []
    for c in doc["chunks"]:
        turns = tuple(Turn(t["role"], t["text"]) for t in c["turns"])
        chunks.append(Chunk(c["index"], turns, tuple(c["segments"]), _join(turns), c["tokens_est"]))
    graded = tuple(PlantedValue(**p) for p in doc["graded"])
    distractors = tuple(PlantedValue(**p) for p in doc["distractors"])
    return Fixture(spec, tuple(chunks), graded, distractors, doc["heuristic"])


#: The committed fixture set under ``analysis/runner/fixture_files/``.
DEFAULT_SPECS: tuple[FixtureSpec, ...] = (
    FixtureSpec("s5-150k", "S5"),
    FixtureSpec("s1-150k", "S1", placement=(4, 4, 4, 4, 4)),
    FixtureSpec("s5-small", "S5", total_tokens=3_200),
    FixtureSpec("s1-small", "S1", total_tokens=3_200, placement=(4, 4, 4, 4, 4)),
)


def write_fixture_set(out_dir: str | Path, specs: Sequence[FixtureSpec] = DEFAULT_SPECS) -> list[str]:
    """Write each spec as ``<name>.json`` plus ``provenance.lock``; return the file names."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for spec in specs:
        name = f"{spec.name}.json"
        write_text(out / name, build_fixture(spec).to_json())
        names.append(name)
    from analysis.evidence import write_lock

    write_lock(out, names, required=())  # the fixture set is not an evidence package
    return names


if __name__ == "__main__":  # pragma: no cover - thin CLI
    import sys

    from analysis.locations import package_path

    print("\n".join(write_fixture_set(sys.argv[1] if len(sys.argv) > 1 else package_path("runner", "fixture_files"))))
