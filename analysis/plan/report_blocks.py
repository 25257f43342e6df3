"""results.json blocks of issue 13: `preregistration` (plan present/intact, deviations) and `design`.

Methods note. `preregistration_block` reads the package's `[preregistration]` table in study.toml
and `preregistration.json` (both pinned by the package's provenance lock, which the loader
verified first). The plan is *intact* when the plan text's SHA-256 equals the lock's plan digest
and the study.toml digest, and the lock's fixture/arms/params digests equal the plan's. A
*deviation* is any difference between the plan and what was run or analysed: configurations in
the analysed panel vs planned K, each partition run's planned repeats vs planned R, the study's
recency cutoff, control, treatment, scenario and arms vs the plan's, the sweep's fixture and
arms digests vs the plan's, the analysis Params used now vs those the plan implies (each field
that differs), and the analysis code digest now vs at sealing. `design_block` reads OUT/design.json
written by `python generate.py plan` (the main build includes it when present in its OUT).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from analysis.evidence import EvidenceError
from analysis.evidence.provenance import KEEP_LIMIT
from analysis.runner.prereg import (
    PlanError,
    code_digest,
    params_digest,
    parse_plan,
    read_plan_lock,
    verify_sealed,
)
from analysis.safeio import SafeIOError, loads_json, loads_toml, read_bytes

DESIGN_LIMIT = 16 << 20
"""Largest OUT/design.json read."""
STATEMENT_NONE = ("the evidence package carries no sealed plan "
                  "(a runner sweep with --plan PLAN_DIR records one)")
STATEMENT_LIMITS = ("A local seal proves that plan.toml did not change after it was sealed and, through "
                    "the ledger's own clock, the order of sealing and running on one machine. It does not "
                    "prove when the seal was made: only the plan digest published elsewhere before the run "
                    "(a public commit, a registry entry) does.")


def _study_table(package: Any) -> dict[str, Any]:
    """The ``[preregistration]`` table of the verified study.toml bytes the package keeps."""
    data = package.verified_bytes("study.toml")
    try:
        table = loads_toml(data, "study.toml").get("preregistration") if data is not None else None
    except SafeIOError:
        return {}
    return table if isinstance(table, dict) else {}


def _utc_time(text: Any) -> Any:
    """An ISO 8601 time of the plan or ledger as an aware UTC datetime (a naive one is read as UTC), or None
    when it is not one: not text, longer than 64 characters, unparsable, or outside the years 1970..9999."""
    from datetime import UTC, datetime

    if not isinstance(text, str) or not text or len(text) > 64:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return when if 1970 <= when.year <= 9999 else None


def preregistration_block(package: Any, params: Any, panel_configurations: int | None) -> dict[str, Any]:
    """Plan presence, seal, timing and every deviation (see the module note)."""
    table = _study_table(package)
    if not table:
        return {"present": False, "intact": None, "statement": STATEMENT_NONE, "limits": STATEMENT_LIMITS,
                "deviations": []}
    name = str(table.get("file") or "preregistration.json")
    problems: list[str] = []
    try:
        if name not in package.digests:  # verify refuses this; never read a name the lock does not pin
            raise PlanError("is not a file the provenance lock pins")
        data = package.verified_bytes(name)  # the verified bytes, never the file on disk again
        if data is None:
            raise PlanError(f"is larger than the {KEEP_LIMIT >> 20} MiB a preregistration may have")
        doc = loads_json(data, name)
        plan = parse_plan(doc["plan_toml"].encode("utf-8"), Path("preregistration.json:plan.toml"))
        lock = read_plan_lock(json.dumps(doc["plan_lock"]), "preregistration.json:plan.lock")
    except (OSError, ValueError, KeyError, TypeError, PlanError, EvidenceError) as exc:
        return {"present": True, "intact": False, "problems": [f"{name}: {exc}"],
                "statement": "a preregistration is named but cannot be read", "limits": STATEMENT_LIMITS,
                "deviations": []}
    problems += verify_sealed(plan, lock)
    if table.get("plan_digest") != plan.digest:
        problems.append(f"study.toml names plan digest {table.get('plan_digest')}, "
                        f"the plan text hashes to {plan.digest}")
    sweep = doc.get("sweep") or {}
    study = package.study
    dev: list[dict[str, Any]] = []

    def differ(what: str, planned: Any, actual: Any, note: str = "") -> None:
        if planned != actual:
            dev.append({"what": what, "planned": planned, "actual": actual, "note": note})

    differ("configurations", plan.configurations, panel_configurations, "configurations in the analysed panel")
    if sweep.get("configurations") is not None:
        differ("configurations swept", plan.configurations, len(sweep["configurations"]))
    for run in study.partition_runs:
        differ(f"repeats of {run.configuration}", plan.repeats, int(run.planned_repeats))
    differ("recency cutoff", plan.recency_cutoff.isoformat(), study.recency_cutoff.isoformat())
    differ("control arm", plan.control, study.control)
    differ("treatment arm", plan.treatment, study.treatment)
    differ("scenario", plan.scenario, study.scenario)
    if sweep.get("arms") is not None:
        differ("arms run", sorted(plan.arms), sorted(sweep["arms"]))
    for key in ("fixture", "arms"):
        if sweep.get(f"{key}_digest") is not None:
            differ(f"{key} digest", plan.digests[key], sweep[f"{key}_digest"])
    planned_params = plan.params().to_dict()
    used = params.to_dict()
    for field in sorted(set(planned_params) | set(used)):
        differ(f"analysis parameter {field}", planned_params.get(field), used.get(field))
    now_code = code_digest()
    differ("analysis code digest", lock.get("code_digest"), now_code, "the analysis code changed after sealing")
    sealed, first = lock.get("sealed_at"), doc.get("first_ledger_record") or table.get("first_ledger_record")
    order = None
    sealed_t, first_t = _utc_time(sealed), _utc_time(first)
    if sealed_t is not None and first_t is not None:
        order = sealed_t <= first_t
    return {"present": True, "intact": not problems, "problems": problems, "plan_digest": plan.digest,
            "sealed_at": sealed, "first_ledger_record": first, "sealed_before_first_record": order,
            "plan": {"estimand": plan.estimand, "control": plan.control, "treatment": plan.treatment,
                     "scenario": plan.scenario, "arms": list(plan.arms),
                     "recency_cutoff": plan.recency_cutoff.isoformat(), "configurations": plan.configurations,
                     "repeats": plan.repeats, "alpha": plan.alpha, "thresholds": dict(plan.thresholds),
                     "min_pairs": plan.min_pairs, "digests": dict(plan.digests),
                     "params_digest_now": params_digest(params)},
            "deviations": dev, "statement": "preregistered", "limits": STATEMENT_LIMITS}


def read_design(out_dir: Path) -> tuple[str, dict[str, Any] | None]:
    """OUT/design.json (from `generate.py plan --out OUT`), read once: (its content key, its document).

    The key (SHA-256 of the bytes read; ``"none"`` when absent, ``"unreadable"``) enters the build's
    stage keys, and the same bytes give the ``design`` block: a declared input of the build, never
    read back later. The document is None unless the bytes are a version-1 JSON object."""
    path = Path(out_dir) / "design.json"
    if not path.is_file():
        return "none", None
    try:
        data = read_bytes(path, limit=DESIGN_LIMIT)
    except (OSError, SafeIOError):
        return "unreadable", None
    key = hashlib.sha256(data).hexdigest()
    try:
        doc = loads_json(data, path)
    except SafeIOError:
        return key, None
    return key, doc if isinstance(doc, dict) and doc.get("version") == 1 else None


def design_block(out_dir: Path) -> dict[str, Any] | None:
    """OUT/design.json (from `generate.py plan --out OUT`), or None when there is none."""
    return read_design(out_dir)[1]


def mix_design_key(keys: dict[str, str] | None, extra: str) -> dict[str, str] | None:
    """Stage keys with the design's content key ``extra`` (:func:`read_design`) mixed into results and
    every later stage."""
    if keys is None or extra == "none":
        return keys
    return {stage: (hashlib.sha256(f"{key}\ndesign:{extra}".encode()).hexdigest()
                    if stage != "verify" else key) for stage, key in keys.items()}
