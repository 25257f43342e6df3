"""Sealed preregistration: plan.toml -> plan.lock, checked by the runner and reported by the analysis.

Methods note. A plan directory holds `plan.toml` (what will be run and how it will be analysed,
see docs/PREREGISTRATION.md) and, once sealed, `plan.lock` (JSON): the SHA-256 of plan.toml's
bytes (the *plan digest*), the fixture, arms and analysis-parameter digests the plan names
(each recomputed at sealing and required to match), the SHA-256 of the analysis code
(every analysis/**/*.py, path and bytes) and the UTC time of sealing. What a local seal proves:
that plan.toml was not changed after the lock was written, and, through the ledger's own
timestamps, the order of sealing and running *on one machine*. It does not prove when the
seal was made: only a copy of the plan digest published elsewhere before the run (a public
commit, a registry entry) does that.

It lives in the runner because a seal pins what the runner will run (its fixture and arms) and
the runner's `sweep --plan` checks it; `python generate.py plan seal|check` (analysis.plan.cli)
and the results' preregistration block (analysis.plan.report_blocks) call it from above.

Digests: fixture = Fixture.digest (the runner's); arms = SHA-256 of the canonical JSON
{code: arm_record(arm)} of the plan's arms; params = SHA-256 of the canonical JSON of the
analysis Params the plan implies (DEFAULT_PARAMS with the plan's alpha, thresholds, min_pairs).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.digest import file_sha256
from analysis.evidence.provenance import sha256_bytes
from analysis.invocation import analysis_command, doc_command
from analysis.locations import package_path
from analysis.safeio import LIMITS, SafeIOError, loads_json, loads_toml, read_bytes, read_text, write_json

PLAN_FILE = "plan.toml"
LOCK_FILE = "plan.lock"
LOCK_VERSION = 1
REQUIRED_PLAN_KEYS = ("estimand", "control", "treatment", "scenario", "arms", "recency_cutoff",
                      "configurations", "repeats", "alpha")
REQUIRED_DIGESTS = ("fixture", "arms", "params")
MAX_CONFIGURATIONS = 100_000
"""Most configurations a plan may name (the runner sweeps one target per configuration)."""
MAX_PLAN_REPEATS = 10**6
"""Most repeats a plan may name: the runner's --repeats bound (analysis.runner.preflight.MAX_REPEATS)."""
CLOCK_SKEW = dt.timedelta(minutes=5)
"""How far in the future a plan lock's sealed_at may lie (clock differences between machines)."""
_ANALYSIS = package_path()


class PlanError(ValueError):
    """A plan directory, plan.toml or plan.lock is unusable; the message says the fix."""


class PlanDigestMismatch(PlanError):
    """A digest named by the plan differs from what is about to be used (both are in the message)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A parsed plan.toml."""

    path: Path
    """The plan.toml file."""
    text: str
    """Its exact text."""
    digest: str
    """SHA-256 of its bytes: the plan digest."""
    estimand: str
    """The primary estimand in words."""
    control: str
    """Control arm code."""
    treatment: str
    """Treatment arm code."""
    scenario: str
    """Primary scenario."""
    arms: tuple[str, ...]
    """Arms that will be run."""
    recency_cutoff: dt.date
    """Panel rule: configurations published on or after this date."""
    configurations: int
    """Planned panel configurations K."""
    repeats: int
    """Planned paired repeats per configuration R."""
    alpha: float
    """Two-sided level of the dispersion interval."""
    thresholds: Mapping[str, float]
    """partial / full recall thresholds."""
    min_pairs: int
    """Sparse-cell rule."""
    fixture: str
    """Fixture name (small/default/...) or path the sweep must use."""
    digests: Mapping[str, str]
    """fixture, arms, params digests the plan names."""
    targets: tuple[Mapping[str, Any], ...] = field(default=())
    """Optional [[configurations]] endpoint tables (the runner's sweep plan format)."""

    def params(self) -> Any:
        """The analysis Params this plan implies."""
        from analysis.params import DEFAULT_PARAMS

        return DEFAULT_PARAMS.replace(alpha=self.alpha, min_pairs=self.min_pairs,
                                      threshold_partial=float(self.thresholds.get("partial", 0.5)),
                                      threshold_full=float(self.thresholds.get("full", 1.0)))


def canonical_digest(doc: Any) -> str:
    """SHA-256 of canonical JSON (sorted keys, no spaces)."""
    return sha256_bytes(json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())


def params_digest(params: Any) -> str:
    """Digest of analysis Params (their to_dict)."""
    return canonical_digest(params.to_dict())


def arms_digest(codes: Sequence[str], arms: Mapping[str, Any] | None = None) -> str:
    """Digest of the named arms' records (prompt, schema, budgets)."""
    from analysis.runner.arms import arm_record, load_arms

    arms = arms if arms is not None else load_arms()
    unknown = [c for c in codes if c not in arms]
    if unknown:
        raise PlanError(f"unknown arm code(s) {unknown}; known arms: {', '.join(sorted(arms))}")
    return canonical_digest({c: arm_record(arms[c]) for c in sorted(set(codes))})


def code_digest(root: Path = _ANALYSIS) -> str:
    """Digest over every analysis/**/*.py file (relative path and bytes)."""
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        h.update(f"{f.relative_to(root).as_posix()}:{file_sha256(f)}\n".encode())
    return h.hexdigest()


def fixture_digest(name: str) -> str:
    """Digest of the fixture the runner would load for `name`."""
    from analysis.runner.named_fixtures import FixtureArgError, load_fixture_arg

    try:
        return load_fixture_arg(name).digest
    except FixtureArgError as exc:
        raise PlanError(f"plan fixture: {exc}") from None


def _need(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, hint: str) -> Any:
    if key not in table:
        raise PlanError(f"{where}: missing key {key!r}; add it ({hint})")
    value = table[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise PlanError(f"{where}: {key} = {value!r} has the wrong type; {hint}")
    if not isinstance(value, kind):
        raise PlanError(f"{where}: {key} = {value!r} has the wrong type; {hint}")
    return value


def load_plan(plan_dir: Path, *, require_digests: bool = True) -> Plan:
    """Parse and validate PLAN_DIR/plan.toml (named errors for missing keys and unknown arms)."""
    plan_dir = Path(plan_dir)
    path = plan_dir / PLAN_FILE
    if not plan_dir.is_dir():
        raise PlanError(f"{plan_dir} is not a directory; pass the directory holding {PLAN_FILE}")
    try:
        raw = read_bytes(path, limit=LIMITS["toml"])
    except SafeIOError as exc:
        raise PlanError(f"{exc}; write plan.toml as a regular file in the plan directory") from None
    except OSError:
        raise PlanError(f"{path} not found; write the plan there (see {doc_command('preregistration')})") from None
    return parse_plan(raw, path, require_digests=require_digests)


def parse_plan(raw: bytes, path: Path, *, require_digests: bool = True) -> Plan:
    """Parse plan.toml bytes (`path` names it in messages); the checks run in the order of the fields."""
    try:
        doc = loads_toml(raw, path)
    except SafeIOError as exc:
        raise PlanError(f"{exc}; fix the TOML") from None
    text = raw.decode("utf-8")
    where = f"{path} [plan]"
    p = _plan_table(doc, path, where)
    estimand = _need(p, "estimand", str, where, "a sentence")
    control = _need(p, "control", str, where, "an arm code, e.g. \"j\"")
    treatment = _need(p, "treatment", str, where, "an arm code, e.g. \"q\"")
    scenario = _need(p, "scenario", str, where, "a scenario code, e.g. \"S5\"")
    arms = _need(p, "arms", list, where, "a list of arm codes, e.g. [\"j\", \"q\"]")
    if not arms or not all(isinstance(a, str) for a in arms):
        raise PlanError(f"{where}: arms must be a non-empty list of arm codes")
    cutoff = _need(p, "recency_cutoff", dt.date, where, "an unquoted TOML date, e.g. 2026-01-28")
    if isinstance(cutoff, dt.datetime):
        raise PlanError(f"{where}: recency_cutoff must be a date, not a date-time")
    k, r, alpha = _plan_size(p, where)
    min_pairs = p.get("min_pairs", 4)
    if isinstance(min_pairs, bool) or not isinstance(min_pairs, int) or not 1 <= min_pairs <= MAX_PLAN_REPEATS:
        raise PlanError(f"{where}: min_pairs = {min_pairs!r}; write an integer from 1 to {MAX_PLAN_REPEATS}")
    _check_plan_arms(arms, (control, treatment), where)
    thresholds = p.get("thresholds", {"partial": 0.5, "full": 1.0})
    if not isinstance(thresholds, dict) or not all(isinstance(v, (int, float)) for v in thresholds.values()):
        raise PlanError(f"{where}: thresholds must be a table of numbers, e.g. {{partial = 0.5, full = 1.0}}")
    digests = _plan_digests(doc, path, require_digests)
    targets = doc.get("configurations", [])
    if not isinstance(targets, list):
        raise PlanError(f"{path}: configurations must be [[configurations]] tables")
    return Plan(path=path, text=text, digest=sha256_bytes(raw), estimand=estimand, control=control,
                treatment=treatment, scenario=scenario, arms=tuple(arms), recency_cutoff=cutoff,
                configurations=k, repeats=r, alpha=float(alpha),
                thresholds={str(a): float(b) for a, b in thresholds.items()},
                min_pairs=min_pairs, fixture=str(p.get("fixture", "default")),
                digests={k: str(digests[k]) for k in REQUIRED_DIGESTS}, targets=tuple(targets))


def _plan_table(doc: Mapping[str, Any], path: Path, where: str) -> Mapping[str, Any]:
    """The [plan] table, holding every required key."""
    p = doc.get("plan")
    if not isinstance(p, dict):
        raise PlanError(f"{path}: no [plan] table; add one with {', '.join(REQUIRED_PLAN_KEYS)}")
    missing = [k for k in REQUIRED_PLAN_KEYS if k not in p]
    if missing:
        raise PlanError(f"{where}: missing key(s) {', '.join(missing)}; "
                        f"add them (see {doc_command('preregistration')})")
    return p


def _plan_size(p: Mapping[str, Any], where: str) -> tuple[int, int, int | float]:
    """Planned configurations K, repeats R and alpha, within what the runner runs."""
    k = _need(p, "configurations", int, where, "the planned number of configurations, an integer >= 2")
    r = _need(p, "repeats", int, where, "the planned repeats per configuration, an integer >= 1")
    alpha = _need(p, "alpha", (int, float), where, "a level such as 0.05")
    if k < 2 or r < 1 or not 0 < float(alpha) < 1:
        raise PlanError(f"{where}: need configurations >= 2, repeats >= 1 and 0 < alpha < 1")
    if k > MAX_CONFIGURATIONS or r > MAX_PLAN_REPEATS:  # what the runner would refuse is never sealed
        raise PlanError(f"{where}: configurations = {k} and repeats = {r}; the runner runs at most "
                        f"{MAX_CONFIGURATIONS} configurations and {MAX_PLAN_REPEATS} repeats; plan fewer")
    return k, r, alpha


def _check_plan_arms(arms: Sequence[str], contrast: Sequence[str], where: str) -> None:
    """The control and treatment are among the plan's arms, and every arm is one the runner knows."""
    for code in contrast:
        if code not in arms:
            raise PlanError(f"{where}: arm {code!r} (control/treatment) is not in arms {arms}; add it")
    from analysis.runner.arms import load_arms

    known = load_arms()
    unknown = [a for a in arms if a not in known]
    if unknown:
        raise PlanError(f"{where}: unknown arm code(s) {unknown}; known arms: {', '.join(sorted(known))}")


def _plan_digests(doc: Mapping[str, Any], path: Path, require_digests: bool) -> Mapping[str, Any]:
    """The [digests] table: fixture, arms and params (empty strings for the ones missing when not required)."""
    plan_dir = path.parent
    digests = doc.get("digests")
    if not require_digests:
        digests = {k: str(v) for k, v in (digests if isinstance(digests, dict) else {}).items()}
        digests = {k: digests.get(k, "") for k in REQUIRED_DIGESTS}
    if not isinstance(digests, dict):
        raise PlanError(f"{path}: no [digests] table; add fixture, arms and params digests "
                        f"(`{analysis_command()} plan check {plan_dir}` prints the current ones)")
    missing_d = [k for k in REQUIRED_DIGESTS if not isinstance(digests.get(k), str)]
    if missing_d:
        raise PlanError(f"{path} [digests]: missing {', '.join(missing_d)}; "
                        f"`{analysis_command()} plan check {plan_dir}` prints the current values")
    return digests


def current_digests(plan: Plan) -> dict[str, str]:
    """Fixture, arms and params digests of what the plan names, computed now."""
    return {"fixture": fixture_digest(plan.fixture), "arms": arms_digest(plan.arms),
            "params": params_digest(plan.params())}


def compare_digests(named: Mapping[str, str], actual: Mapping[str, str], what: str) -> None:
    """Raise PlanDigestMismatch listing every digest that differs (both values)."""
    bad = [k for k in REQUIRED_DIGESTS if named.get(k) != actual.get(k)]
    if bad:
        lines = "; ".join(f"{k}: plan {named.get(k)} vs {what} {actual.get(k)}" for k in bad)
        raise PlanDigestMismatch(f"digest mismatch ({lines}); run with the plan's fixture/arms/params, "
                                 "or write and seal a new plan")


def seal_plan(plan_dir: Path, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """Validate the plan, check its digests against the current fixture/arms/params, write plan.lock."""
    plan = load_plan(plan_dir)
    lock_path = Path(plan_dir) / LOCK_FILE
    if os.path.lexists(lock_path):  # a dangling symbolic link too: never written through
        raise PlanError(f"{lock_path} exists{' (a symbolic link)' if lock_path.is_symlink() else ''}: "
                        "a sealed plan is never resealed; write a new plan directory")
    compare_digests(plan.digests, current_digests(plan), "current")
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    lock = {"version": LOCK_VERSION, "algorithm": "sha256", "plan_digest": plan.digest,
            "fixture_digest": plan.digests["fixture"], "arms_digest": plan.digests["arms"],
            "params_digest": plan.digests["params"], "code_digest": code_digest(),
            "sealed_at": when.isoformat(timespec="microseconds").replace("+00:00", "Z")}
    try:
        write_json(lock_path, lock, durable=True)
    except SafeIOError as exc:
        raise PlanError(str(exc)) from None
    return lock


@dataclass(frozen=True, slots=True)
class PlanStatus:
    """Whether a plan directory's seal holds."""

    intact: bool
    """plan.lock exists, parses, and plan.toml's digest equals the locked one."""
    problems: tuple[str, ...]
    """What is wrong, one line each."""
    plan: Plan | None
    """The parsed plan (None when it does not parse)."""
    lock: Mapping[str, Any] | None
    """The parsed lock."""
    current: Mapping[str, str] = field(default_factory=dict)
    """Current fixture/arms/params digests (when computable)."""

    def lines(self) -> list[str]:
        out = [f"plan {'intact' if self.intact else 'NOT intact'}"]
        if self.lock:
            out.append(f"plan digest {self.lock.get('plan_digest')} sealed at {self.lock.get('sealed_at')}")
        for k, v in self.current.items():
            out.append(f"current {k} digest: {v}")
        return out + [f"problem: {p}" for p in self.problems]


def read_plan_lock(text: str, source: str, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """Parse plan.lock JSON and check its fields (sealed_at: a UTC time, not in the future)."""
    try:
        lock = loads_json(text, source)
    except SafeIOError as exc:
        raise PlanError(f"{source}: not usable JSON ({exc.message})") from None
    need = ("plan_digest", "fixture_digest", "arms_digest", "params_digest", "code_digest", "sealed_at")
    if not isinstance(lock, dict) or any(not isinstance(lock.get(k), str) for k in need):
        raise PlanError(f"{source}: a plan lock needs string fields {', '.join(need)}")
    sealed_at_problem(lock["sealed_at"], source, now)
    return lock


def sealed_at_problem(text: str, source: str, now: dt.datetime | None = None) -> None:
    """PlanError unless ``text`` is an ISO 8601 UTC time (``...Z`` or ``+00:00``) not in the future."""
    try:
        when = (dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text.endswith(("Z", "+00:00"))
                else None)
    except ValueError:
        when = None
    if when is None or when.utcoffset() != dt.timedelta(0):
        raise PlanError(f"{source}: sealed_at {text!r} is not a UTC time such as 2026-01-28T09:00:00.000000Z; "
                        "the lock was not written by `plan seal`: seal the plan again in a new directory")
    limit = (now or dt.datetime.now(dt.UTC)) + CLOCK_SKEW
    if when > limit:
        raise PlanError(f"{source}: sealed_at {text} lies in the future; a lock cannot be sealed later than "
                        "now: check the clock, or seal the plan again in a new directory")


def verify_sealed(plan: Plan, lock: Mapping[str, Any]) -> list[str]:
    """Problems with a (plan, lock) pair: changed plan bytes or digests that disagree."""
    problems = []
    if lock.get("plan_digest") != plan.digest:
        problems.append(f"plan.toml changed after sealing: locked {lock.get('plan_digest')}, now {plan.digest}")
    for k in REQUIRED_DIGESTS:
        if lock.get(f"{k}_digest") != plan.digests.get(k):
            problems.append(f"{k} digest in the lock ({lock.get(f'{k}_digest')}) differs from plan.toml's "
                            f"({plan.digests.get(k)})")
    return problems


def check_plan(plan_dir: Path) -> PlanStatus:
    """Load the plan and its lock; report every problem instead of stopping at the first."""
    plan_dir = Path(plan_dir)
    try:
        plan = load_plan(plan_dir)
    except PlanError as exc:
        try:  # still show the current digests, so a new plan can be completed
            loose = load_plan(plan_dir, require_digests=False)
            now = current_digests(loose)
        except PlanError:
            now = {}
        return PlanStatus(False, (str(exc),), None, None, now)
    current: dict[str, str] = {}
    problems: list[str] = []
    try:
        current = current_digests(plan)
    except PlanError as exc:
        problems.append(str(exc))
    lock_path = plan_dir / LOCK_FILE
    if not lock_path.is_file():
        return PlanStatus(False, (*problems, f"{lock_path} not found: the plan is not sealed "
                                  f"({analysis_command()} plan seal {plan_dir})"), plan, None, current)
    try:
        lock = read_plan_lock(read_text(lock_path, limit=1 << 20), str(lock_path))
    except SafeIOError as exc:
        return PlanStatus(False, (*problems, str(exc)), plan, None, current)
    except PlanError as exc:
        return PlanStatus(False, (*problems, str(exc)), plan, None, current)
    problems += verify_sealed(plan, lock)
    intact = not verify_sealed(plan, lock)
    for k, v in current.items():
        if v != plan.digests[k]:
            problems.append(f"current {k} digest {v} differs from the plan's {plan.digests[k]}")
    return PlanStatus(intact, tuple(problems), plan, lock, current)
