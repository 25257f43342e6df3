"""The reconstruction's rules as data: which claims each rule READS and which it BUILDS or was FITTED to.

Methods note. Every rule of RECONSTRUCTION.md (R1..R25) is a ``Rule`` with three sets of claim ids
(fnmatch patterns allowed, each must match at least one claim):
- ``reads``: claims whose printed value the rule takes as input;
- ``builds``: claims the rule guarantees by construction (it places exactly the printed count, or a
  cell transcribed from it), so their recomputation cannot fail;
- ``fitted``: *derived* claims the rule was tuned to by a search (R2b/R2c: the ICC; R25: the grader
  agreement).
``TRANSCRIBED_FROM`` maps a primitive that the page does not print as a number to the claims it was
transcribed from (a rule reading the primitive reads them too).
The claims audit derives every status from these declarations (analysis.audit.derive); the build
checks them: ``validate_rules`` names any id no claim has, and ``TrackedClaims`` makes a rule that
reads a claim it does not declare fail with ``UndeclaredClaimRead``.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from analysis.reconstruct.claims import Claim, Claims, ClaimsError
from analysis.reconstruct.engine import ReconstructionError


class RuleDeclarationError(ClaimsError):
    """A rule declaration names a claim id the claims file does not have (the message names rule and id)."""


class UndeclaredClaimRead(ReconstructionError):
    """A rule read a claim its declaration does not list; add it to that rule's ``reads`` in rules.py."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the reconstruction and the claims it depends on."""

    id: str
    """Rule id as RECONSTRUCTION.md prints it (R1, R2b, R6-R8 ...)."""
    title: str
    """Short name."""
    reads: tuple[str, ...] = ()
    """Claim ids (or fnmatch patterns) whose printed values the rule takes as input."""
    builds: tuple[str, ...] = ()
    """Claim ids the rule makes hold by construction (placed exactly, or transcribed into an input)."""
    fitted: tuple[str, ...] = ()
    """Derived claim ids the rule was tuned to by a search."""


T3 = ("t3.*.j_mean", "t3.*.q_mean", "t3.*.paired_q_minus_j", "t3.*.j_rows", "t3.*.q_rows", "t3.*.complete_pairs")
T1 = tuple(f"t1.*.{a}" for a in "fnklm")

# Deep and borderline cells whose rows-above-half counts R2 solves together with Table 3.
_R2_DEEP_BORDERLINE = ("deep.granite_4_1_8b.q.rows_ge_half", "deep.ling_2_6_flash.j.rows_ge_half",
                       "deep.ling_2_6_flash.q.rows_ge_half", "borderline.glm_5_2.j_rows_ge_half",
                       "borderline.glm_5_2.q_rows_ge_half", "deep.granite_4_1_8b.j.rows_ge_half")

# The fabricated values of the 4.11 example, written into the fabricating answers by R21.
_FAB_EXAMPLE = ("fab.example.fabricated_port", "fab.example.fabricated_timestamp", "fab.example.fabricated_shards")

RULES: tuple[Rule, ...] = (
    Rule("R0", "layout constants transcribed into analysis/reconstruct/layout.py (panel, groups, arms, labels)",
         builds=("design.arms.[fnjpt].ceiling_chars", "design.arms.q.total_chars", "design.graded_facts",
                 "design.single_chunk.graded_facts", "design.recency_cutoff", "design.folds_per_run",
                 "design.endpoints_swept", "design.panel_configs", "design.supporting_configs", "design.ceiling_runs",
                 "design.ceiling2.glm_repeats_per_arm", "design.panel.min_complete_pairs", "ladder.sweeps",
                 "fab.example.planted_port", "fab.example.planted_timestamp", "design.graded.shard_count_value",
                 "design.standard.rows_per_arm", "design.deep.rows_per_arm", "design.families",
                 "design.out_of_window_configs")),
    Rule("R1", "planned repeats", reads=("design.standard.rows_per_arm", "design.deep.rows_per_arm")),
    Rule("R2", "outcomes of a cell (near-binary split, Table 3 solved jointly)",
         reads=(*T3, *_R2_DEEP_BORDERLINE), builds=(*T3, *_R2_DEEP_BORDERLINE)),
    Rule("R2b-R2c", "within-row dependence fitted to the printed ICC",
         reads=("icc.s5.icc", "icc.s5.design_effect"),
         fitted=("icc.s5.icc", "icc.s5.design_effect", "icc.s5.effective_obs_per_row")),
    Rule("R3", "missing slots and catch-up rows (the outcome rule was chosen to give the printed catch-up recalls)",
         builds=("catchup.rows", "catchup.?.rows", "catchup.plain.rows", "catchup.recall_?", "catchup.from_working_arm",
                 "catchup.from_failing_arms")),
    Rule("R4", "execution groups", builds=("ladder.sweeps",)),
    Rule("R5", "out-of-window configurations (arbitrary 7/14 rows)"),
    Rule("R6-R8", "anchor ladder and S1",
         reads=("ladder.mcnemar.both_full", "ladder.mcnemar.m_only_full", "ladder.mcnemar.q_only_full",
                "ladder.mcnemar.neither_full", "fillex.p_described.rows", "ladder.?.mean",
                "scenario.single_chunk.?"),
         builds=("ladder.mcnemar.both_full", "ladder.mcnemar.m_only_full", "ladder.mcnemar.q_only_full",
                 "ladder.mcnemar.neither_full", "fillex.p_described.rows", "ladder.?.mean",
                 "scenario.single_chunk.?", "ladder.n_paired_rows", "ladder.q.full_rows", "ladder.m.full_rows")),
    Rule("R9-R11", "reduced-ceiling runs",
         reads=("ceiling.?.n", "ceiling.?.mean", "ceiling.?.rows_recalled", "ceiling2.glm_5_2.j_rows",
                "ceiling2.glm_5_2.t_rows", "ceiling.mcnemar.both", "ceiling.mcnemar.j_only",
                "ceiling.mcnemar.t_only", "ceiling.mcnemar.neither"),
         builds=("ceiling.?.n", "ceiling.?.mean", "ceiling.?.rows_recalled", "ceiling2.glm_5_2.j_rows",
                 "ceiling2.glm_5_2.t_rows", "ceiling.mcnemar.both", "ceiling.mcnemar.j_only",
                 "ceiling.mcnemar.t_only", "ceiling.mcnemar.neither", "ceiling.mcnemar.unpartnered_t_rows")),
    Rule("R12", "Table 1 row counts (GRIM-chosen, not printed)", reads=T1),
    Rule("R13", "Table 1 cells", reads=T1, builds=T1),
    Rule("R14", "anchor j corpus", reads=("anchor.j_large_corpus.n", "anchor.j_large_corpus.mean",
                                          "ceiling2.qwen3_6_35b_a3b.j_rows"),
         builds=("anchor.j_large_corpus.n", "anchor.j_large_corpus.mean", "ceiling2.qwen3_6_35b_a3b.j_rows")),
    Rule("R15", "original 4-repeat runs",
         reads=("granite16.h?.rows", "granite16.h?.mean", "fillex.ling_2_6_flash.recall",
                "fillex.ling_2_6_flash.rows", "t3.granite_4_1_8b.j_rows", "t3.ling_2_6_flash.j_rows"),
         builds=("granite16.h?.mean", "fillex.ling_2_6_flash.recall", "fillex.ling_2_6_flash.rows")),
    Rule("R16", "carried characters",
         reads=("t3.*.j_fill", "fillex.*.carried_chars", "fillex.granite_4_1_8b.rows", "deep.*.q.fill",
                "ceiling.?.carried_chars", "anchor.j_large_corpus.n", "ceiling2.glm_5_2.j_fill",
                "carrier.t.rows_near_ceiling"),
         builds=("t3.*.j_fill", "fillex.*.carried_chars", "deep.*.q.fill", "ceiling.?.carried_chars",
                 "ceiling2.glm_5_2.j_fill", "carrier.t.rows_near_ceiling")),
    Rule("R17", "headings carried (rows the page describes)",
         reads=("granite16.h5.mean", "granite16.h5.rows", "deep.granite_4_1_8b.j.rows_h5"),
         builds=("granite16.h?.rows", "deep.*.?.rows_h?", "headings.deepseek_v4_pro.j.rows_h5",
                 "headings.gemma_4_31b_it.j.rows_h5", "headings.deepseek_v4_flash.j.headings_per_row")),
    Rule("R17b", "single-field headings fitted to the 4.8 tables (integer program)",
         reads=("headings.h?.rows", "headings.h?.mean", "headings.h?.rows_ge_half", "headings.j.rows_h?")),
    Rule("R18", "parse failures",
         reads=("ceiling.j.nonconforming_folds", "pf.single_field.valid", "pf.single_field.mean",
                "pf.all.valid", "pf.all.mean"),
         builds=("ceiling.j.nonconforming_folds", "pf.single_field.valid", "pf.single_field.mean",
                 "pf.all.valid", "pf.all.mean", "pf.single_field.rows", "pf.all.rows")),
    # R18/R19 defaults (5 folds a row, no clipping or failure outside the rows they place) give these printed counts
    Rule("R19", "folds and clipping", reads=("ceiling.j.folds_clipped", "ceiling.u.folds_clipped"),
         builds=("ceiling.?.folds_clipped", "ceiling.u.folds_total", "carrier.t.stop_calls",
                 "ceiling.t.nonconforming_folds")),
    Rule("R20", "prompt tokens (placeholder)", reads=("design.session_tokens",)),
    Rule("R21", "answers and fabrication (the printed fabricated example values, the printed answer prefix)",
         reads=("fab.?.silent_fabrication", "design.answer_prefix_chars", *_FAB_EXAMPLE),
         builds=("fab.?.silent_fabrication", *_FAB_EXAMPLE)),
    Rule("R22", "carrier audit", reads=("audit.?.rows", "audit.?.discrepant_rows"),
         builds=("audit.?.rows", "audit.?.discrepant_rows", "audit.answer_correct_carrier_absent")),
    Rule("R23", "positions (rotating Latin square, as the page describes the rotation)",
         builds=("t1.qwen3_6_flash.rotation.*",)),
    Rule("R24", "which checks pass"),
    Rule("R25", "presence grader disagreement", fitted=("scenario.grader_agreement.rows",)),
)

# Primitives the page does not print as numbers, and the printed claims they were transcribed from.
TRANSCRIBED_FROM: dict[str, tuple[str, ...]] = {
    "ladder.mcnemar.q_only_full": ("ladder.q.full_rows",),
}


def _expand(pattern: str, ids: tuple[str, ...]) -> tuple[str, ...]:
    if not any(ch in pattern for ch in "*?["):
        return (pattern,) if pattern in ids else ()
    return tuple(i for i in ids if fnmatch.fnmatchcase(i, pattern))


@dataclass(frozen=True, slots=True)
class ResolvedRule:
    """A Rule with its patterns expanded against one claims file."""

    id: str
    """Rule id."""
    title: str
    """Short name."""
    reads: frozenset[str]
    """Claim ids read (plus the claims a read primitive was transcribed from)."""
    builds: frozenset[str]
    """Claim ids that hold by construction."""
    fitted: frozenset[str]
    """Derived claim ids the rule was tuned to."""


def resolve_rules(claims: Claims, rules: tuple[Rule, ...] | None = None,
                  transcribed: Mapping[str, tuple[str, ...]] | None = None) -> dict[str, ResolvedRule]:
    """Expand every declaration against `claims`; raises RuleDeclarationError listing every unknown id.

    Defaults: the module's RULES and TRANSCRIBED_FROM (custom `rules` default to no transcriptions).
    """
    if rules is None:
        rules, transcribed = RULES, (TRANSCRIBED_FROM if transcribed is None else transcribed)
    transcribed = transcribed or {}
    ids = tuple(c.id for c in claims)
    problems: list[str] = []
    out: dict[str, ResolvedRule] = {}
    for src, dst in transcribed.items():
        for cid in (src, *dst):
            if cid not in ids:
                problems.append(f"TRANSCRIBED_FROM names unknown claim id {cid!r}")
    for r in rules:
        if r.id in out:
            problems.append(f"rule {r.id} is declared twice")
        sets = {}
        for field in ("reads", "builds", "fitted"):
            got: set[str] = set()
            for pat in getattr(r, field):
                hit = _expand(pat, ids)
                if not hit:
                    problems.append(f"rule {r.id} {field} names unknown claim id {pat!r}")
                got.update(hit)
            sets[field] = got
        reads = set(sets["reads"])
        for cid in sets["reads"]:
            reads.update(transcribed.get(cid, ()))
        out[r.id] = ResolvedRule(r.id, r.title, frozenset(reads), frozenset(sets["builds"]), frozenset(sets["fitted"]))
    if problems:
        raise RuleDeclarationError(f"{claims.source}: {len(problems)} problem(s) in the reconstruction's rule "
                                   f"declarations (analysis/reconstruct/rules.py):\n  " + "\n  ".join(problems)
                                   + "\n  fix the id (or the claims file) so every declared claim exists")
    return out


def validate_rules(claims: Claims, rules: tuple[Rule, ...] | None = None) -> dict[str, ResolvedRule]:
    """Build-time check of the declarations (alias of resolve_rules, named for the call site)."""
    return resolve_rules(claims, rules)


class _TrackedMap(Mapping[str, Claim]):
    def __init__(self, owner: TrackedClaims) -> None:
        self._owner = owner

    def __getitem__(self, cid: str) -> Claim:
        self._owner.touch(cid)
        return self._owner.inner_by_id[cid]

    def get(self, cid: str, default: object = None) -> object:  # type: ignore[override]
        if cid not in self._owner.inner_by_id:
            return default
        return self[cid]

    def __contains__(self, cid: object) -> bool:
        return cid in self._owner.inner_by_id

    def __iter__(self) -> Iterator[str]:
        raise UndeclaredClaimRead("a rule iterated over every claim; read the claims it declares by id")

    def __len__(self) -> int:
        return len(self._owner.inner_by_id)


class TrackedClaims(Claims):
    """Claims whose accessors check every read against the active rules' declarations.

    Reads happen inside ``with tracked.rule("R2", ...)``; a read outside any rule, or of an id none of the
    active rules declares, raises UndeclaredClaimRead. ``used`` records the reads per rule.
    """

    def __init__(self, claims: Claims, resolved: Mapping[str, ResolvedRule]) -> None:
        object.__setattr__(self, "items", claims.items)
        object.__setattr__(self, "source", claims.source)
        self.inner_by_id = {c.id: c for c in claims.items}
        self.resolved = dict(resolved)
        self.active: tuple[str, ...] = ()
        self.used: dict[str, set[str]] = {}

    __slots__ = ("active", "inner_by_id", "resolved", "used")

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    @contextmanager
    def rule(self, *ids: str) -> Iterator[None]:
        """Attribute the reads inside the block to rules `ids` (each must be declared)."""
        unknown = [i for i in ids if i not in self.resolved]
        if unknown:
            raise UndeclaredClaimRead(f"rule(s) {', '.join(unknown)} are not declared in analysis/reconstruct/rules.py")
        before = self.active
        self.active = ids
        try:
            yield
        finally:
            self.active = before

    def touch(self, cid: str) -> None:
        if not self.active:
            raise UndeclaredClaimRead(f"claim {cid!r} was read outside any rule; wrap the reading code in "
                                      f"TrackedClaims.rule(...) and declare the read")
        allowed = [r for r in self.active if cid in self.resolved[r].reads]
        if not allowed:
            raise UndeclaredClaimRead(f"rule {'/'.join(self.active)} read claim {cid!r}, which its declaration does "
                                      f"not list; add it to that rule's reads in analysis/reconstruct/rules.py")
        for r in allowed:
            self.used.setdefault(r, set()).add(cid)

    @property
    def by_id(self) -> Mapping[str, Claim]:
        return _TrackedMap(self)

    def __getitem__(self, cid: str) -> Claim:
        if cid not in self.inner_by_id:
            raise KeyError(f"no claim {cid!r} in {self.source}; check the id against the claims file")
        self.touch(cid)
        return self.inner_by_id[cid]

    def __iter__(self) -> Iterator[Claim]:
        raise UndeclaredClaimRead("a rule iterated over every claim; read the claims it declares by id")
