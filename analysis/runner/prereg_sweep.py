"""The runner's side of a sealed preregistration (`python -m analysis.runner sweep --plan PLAN_DIR`).

Methods note. Before the sweep starts: the plan directory must hold an intact seal (plan.lock
matches plan.toml); options the user did not type (--arms, --repeats, --recency-cutoff,
--control, --treatment, --fixture) are taken from the plan; then the fixture, arms and analysis
params digests the sweep is about to use are compared with the plan's, and any difference
refuses the start with both digests. During the sweep every ledger record carries
`plan_digest`. The evidence package gets a `[preregistration]` table in study.toml (plan digest,
sealed-at, first ledger record) and `preregistration.json` (plan.toml text, plan.lock, what the
sweep actually used), both pinned by provenance.lock. Typed options that differ from the plan
(e.g. --repeats) are allowed: the analysis lists them as deviations.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.runner.prereg import (
    LOCK_FILE,
    PLAN_FILE,
    PlanError,
    arms_digest,
    check_plan,
    compare_digests,
    params_digest,
)

PREREG_FILE = "preregistration.json"
_OPTIONS = {"arms": "--arms", "repeats": "--repeats", "recency_cutoff": "--recency-cutoff",
            "control": "--control", "treatment": "--treatment", "fixture": "--fixture"}


def is_plan_dir(value: str | None) -> bool:
    """`--plan` names a preregistration directory (not the runner's endpoint TOML file)."""
    return value is not None and bool(value) and Path(value).is_dir()


def _typed(argv: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in argv)


def prepare_sweep(args: argparse.Namespace, argv: Sequence[str]) -> Path | None:
    """Check the seal and digests, fill untyped options from the plan, set `args.prereg`.

    Returns PLAN_DIR/plan.toml when it holds [[configurations]] endpoint tables (the runner reads
    them as its targets), else None. Raises PlanError (with the fix) when the sweep must not start.
    """
    plan_dir = Path(str(args.plan))
    status = check_plan(plan_dir)
    if status.plan is None or status.lock is None or not status.intact:
        raise PlanError(f"--plan {plan_dir}: the plan is not sealed and intact: " + "; ".join(status.problems))
    plan = status.plan
    values = {"arms": ",".join(plan.arms), "repeats": plan.repeats,
              "recency_cutoff": plan.recency_cutoff.isoformat(), "control": plan.control,
              "treatment": plan.treatment, "fixture": plan.fixture}
    for dest, flag in _OPTIONS.items():
        if not _typed(argv, flag):
            setattr(args, dest, values[dest])
    from analysis.runner.named_fixtures import FixtureArgError, load_fixture_arg

    try:
        fixture = load_fixture_arg(args.fixture)
    except FixtureArgError as exc:
        raise PlanError(str(exc)) from None
    codes = [c.strip() for c in str(args.arms).split(",") if c.strip()]
    actual = {"fixture": fixture.digest, "arms": arms_digest(codes), "params": params_digest(plan.params())}
    compare_digests(plan.digests, actual, "this sweep")
    args.prereg = {"plan_digest": plan.digest, "sealed_at": status.lock["sealed_at"],
                   "plan_toml": plan.text, "plan_lock": dict(status.lock),
                   "sweep": {"arms": codes, "repeats": int(args.repeats), "recency_cutoff": str(args.recency_cutoff),
                             "control": args.control, "treatment": args.treatment, "fixture": args.fixture,
                             "fixture_digest": actual["fixture"], "arms_digest": actual["arms"],
                             "params_digest": actual["params"]}}
    return plan.path if plan.targets else None


def first_record_time(records: Sequence[dict[str, Any]]) -> str | None:
    """UTC ISO time of the first ledger record (its `started` or `t`)."""
    for r in records:
        if isinstance(r.get("started"), str):
            return r["started"]
        if isinstance(r.get("t"), (int, float)):
            return dt.datetime.fromtimestamp(r["t"], dt.UTC).isoformat()
    return None


def package_extras(args: argparse.Namespace, records: Sequence[dict[str, Any]],
                   configurations: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """(study.toml appendix, {file name: JSON}) for the evidence package; empty without a plan."""
    prereg = getattr(args, "prereg", None)
    if not prereg:
        return "", {}
    first = first_record_time(records)
    doc = {**prereg, "first_ledger_record": first,
           "sweep": {**prereg["sweep"], "configurations": sorted(configurations)}}
    toml = ("[preregistration]\n"
            f"plan_digest = {json.dumps(prereg['plan_digest'])}\n"
            f"sealed_at = {json.dumps(prereg['sealed_at'])}\n"
            f"first_ledger_record = {json.dumps(first or '')}\n"
            f"file = {json.dumps(PREREG_FILE)}\n")
    return toml, {PREREG_FILE: doc}


__all__ = ["LOCK_FILE", "PLAN_FILE", "PREREG_FILE", "first_record_time", "is_plan_dir", "package_extras",
           "prepare_sweep"]
