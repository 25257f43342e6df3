"""The load ladder: named fixtures from "mostly kept" to "mostly lost", one load factor at a time.

Methods note. A rung is a :class:`~analysis.runner.fixture.FixtureSpec` built by the same
generator, grader and vocabulary as the v2 fixture, with four load factors: graded values per
chunk (``g``), distractors in the whole session (``d``), chunk length in estimated tokens
(``c``) and folds (``f``, one chunk per fold). Its name spells them, ``g2-d0-c900-f2``. Every
rung differs from its family's base rung in exactly one factor: the main family around :data:`BASE`
(:data:`AXES` lists each factor's levels) and the easy end around :data:`EASY_BASE` (one value per
~100-token chunk; :data:`EASY_AXES`), so a curve along one axis varies one thing (RULER and needle-in-a-haystack
studies vary context length the same way). The graded facts of a rung are the first
``g * f`` of ``fixture_text.GRADED_FACTS`` (one planted segment per chunk); distractors are taken
round-robin over their four classes. The rung name is the rows' scenario (a rung has its own
number of graded checks, and the evidence format fixes ``checks_total`` per scenario) and is
written into every row (``rung``) and into study.toml (``[ladder]``). The committed files are
``analysis/runner/fixture_files/ladder/ladder-<rung>.json`` with their ``provenance.lock``, regenerated
byte for byte by ``tests/test_runner_ladder.py``. The levels are data: add a level to
:data:`AXES` and regenerate with ``python -m analysis.runner.ladder``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.locations import package_path
from analysis.runner.fixture import Fixture, FixtureSpec, build_fixture, load_fixture, write_fixture_set

__all__ = ["AXES", "BASE", "EASY_AXES", "EASY_BASE", "FAMILIES", "LADDER_DIR", "LADDER_SPECS", "LadderError", "Rung",
           "base_for", "family", "ladder_toml", "parse_rungs", "rung_by_name", "rung_fixture", "rung_names", "rungs"]

LADDER_DIR = package_path("runner", "fixture_files", "ladder")
"""Where the committed rung fixtures live."""


class LadderError(ValueError):
    """An unknown rung name; the message lists the rungs."""


@dataclass(frozen=True, slots=True)
class Rung:
    """One load level: the four load factors of a rung."""

    graded_per_chunk: int
    """Graded values planted in each chunk (``g``)."""
    distractors: int
    """Distractors planted in the whole session (``d``, 0..36)."""
    chunk_tokens: int
    """Target size of one chunk in estimated tokens (``c``)."""
    folds: int
    """Chunks, i.e. folds of an undisturbed trajectory (``f``)."""

    @property
    def name(self) -> str:
        """``g<g>-d<d>-c<c>-f<f>``: the rung's name, scenario and file stem (without ``ladder-``)."""
        return f"g{self.graded_per_chunk}-d{self.distractors}-c{self.chunk_tokens}-f{self.folds}"

    def spec(self) -> FixtureSpec:
        """The fixture spec of the rung (seed and vocabulary of the v2 fixture)."""
        return FixtureSpec(
            f"ladder-{self.name}", self.name, total_tokens=self.chunk_tokens * self.folds, n_chunks=self.folds,
            placement=tuple(range(self.folds)), n_graded=self.graded_per_chunk * self.folds,
            n_distractors=self.distractors, rung=self.name)


#: The base rung; every other rung changes one of its factors.
BASE = Rung(graded_per_chunk=2, distractors=0, chunk_tokens=900, folds=2)

#: Each load factor's levels, easiest first (the base level included).
AXES: dict[str, tuple[int, ...]] = {
    "graded_per_chunk": (1, 2, 4, 7),
    "distractors": (0, 6, 18, 36),
    "chunk_tokens": (150, 300, 900),
    "folds": (1, 2, 3, 5),
}


#: The easy end (issue 24's embedded pilot): one graded value per ~100-token chunk, no distractor,
#: one fold, where SmolLM2-135M still copies a port into its carrier at temperature 0.7 (the base
#: rung's 900-token chunks and paths are already out of its reach). Its rungs vary one factor of it.
EASY_BASE = Rung(graded_per_chunk=1, distractors=0, chunk_tokens=100, folds=1)

#: The easy family's levels, easiest first (the easy base's level included).
EASY_AXES: dict[str, tuple[int, ...]] = {
    "folds": (1, 2, 3),
    "chunk_tokens": (100, 300, 900),
}

#: Each family of rungs: its base and its axes. Every rung differs from its family's base in one factor.
FAMILIES: tuple[tuple[Rung, dict[str, tuple[int, ...]]], ...] = ((BASE, AXES), (EASY_BASE, EASY_AXES))


def family(base: Rung, axes: dict[str, tuple[int, ...]]) -> tuple[Rung, ...]:
    """The base rung, then every level of every axis (one factor changed), axis by axis."""
    from dataclasses import replace

    out = [base]
    for axis, levels in axes.items():
        for level in levels:
            r = replace(base, **{axis: level})
            if r not in out:
                out.append(r)
    return tuple(out)


def rungs() -> tuple[Rung, ...]:
    """Every rung: each family in :data:`FAMILIES` order (its base first, then axis by axis in load
    order), each rung once."""
    out: list[Rung] = []
    for base, axes in FAMILIES:
        out += [r for r in family(base, axes) if r not in out]
    return tuple(out)


def base_for(names: Sequence[str]) -> Rung:
    """The base of the first family that holds every rung in ``names`` (:data:`BASE` when none does)."""
    for base, axes in FAMILIES:
        members = {r.name for r in family(base, axes)}
        if all(n in members for n in names):
            return base
    return BASE


LADDER_SPECS: tuple[FixtureSpec, ...] = tuple(r.spec() for r in rungs())
"""The committed rung fixtures (``analysis/runner/fixture_files/ladder/``, package data)."""


def rung_names() -> tuple[str, ...]:
    """The rung names, in :func:`rungs` order."""
    return tuple(r.name for r in rungs())


def rung_by_name(name: str) -> Rung:
    """The rung called ``name``; :class:`LadderError` listing the rungs when there is none."""
    for r in rungs():
        if r.name == name:
            return r
    raise LadderError(f"unknown rung {name!r}; the rungs are: {', '.join(rung_names())} "
                      "(g: graded values per chunk, d: distractors, c: tokens per chunk, f: folds)")


def rung_fixture(name: str) -> Fixture:
    """The fixture of rung ``name`` (the committed file when present, else built)."""
    r = rung_by_name(name)
    path = LADDER_DIR / f"ladder-{r.name}.json"
    return load_fixture(path) if path.exists() else build_fixture(r.spec())


def parse_rungs(text: str) -> tuple[str, ...]:
    """``--ladder`` text: comma-separated rung names, or ``all``; each checked (LadderError)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return rung_names()
    if not names:
        raise LadderError(f"--ladder names no rung; the rungs are: {', '.join(rung_names())}")
    for n in names:
        rung_by_name(n)
    if len(set(names)) != len(names):
        raise LadderError(f"--ladder names a rung twice ({text!r}); name each once")
    return tuple(names)


def ladder_toml(fixtures: Sequence[Fixture]) -> str:
    """The study.toml ``[ladder]`` table of a package run on these rung fixtures (docs/EVIDENCE_FORMAT.md)."""
    out = ["[ladder]", "rungs = [" + ", ".join(json.dumps(fx.spec.rung) for fx in fixtures) + "]",
           f"base = {json.dumps(base_for([fx.spec.rung for fx in fixtures]).name)}", ""]
    for fx in fixtures:
        r = rung_by_name(fx.spec.rung)
        out += [f"[ladder.rung.{json.dumps(r.name)}]", f"scenario = {json.dumps(fx.spec.scenario)}",
                f"graded_per_chunk = {r.graded_per_chunk}", f"distractors = {r.distractors}",
                f"chunk_tokens = {r.chunk_tokens}", f"folds = {r.folds}",
                f"fixture_digest = {json.dumps(fx.digest)}", ""]
    return "\n".join(out)


def write_ladder_set(out_dir: str | Path = LADDER_DIR, specs: Sequence[FixtureSpec] = LADDER_SPECS) -> list[str]:
    """Write every rung fixture plus ``provenance.lock``; return the file names."""
    return write_fixture_set(out_dir, specs)


if __name__ == "__main__":  # pragma: no cover - thin CLI
    import sys

    print("\n".join(write_ladder_set(sys.argv[1] if len(sys.argv) > 1 else LADDER_DIR)))
