"""One sweep session into --out: the lock, the ledger, the probes, the slots, the sweep, the package.

Methods note: a sweep directory (--out) holds the append-only ledger, the run manifest and the
evidence package (OUT/evidence).  The first session probes the endpoint and records the verdicts
in the ledger; every later session with the same --out reuses those verdicts (the request shape
must not change mid-sweep) and refuses to continue if the sweep's identity (endpoint, model, pin,
fixture, arms, repeats, design, group, seed, temperature) differs.  The evidence package is
rebuilt from the ledger at the end of every session.  One runner holds --out's lock for the whole
session (RUNNER_LOCK).  The command line (analysis.runner.cli) checks every argument before it
calls run_sweep_command.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.escape import emit
from analysis.invocation import invoked_as
from analysis.runner import interrupt
from analysis.runner.arm_order import arm_order
from analysis.runner.client import EndpointClient, EndpointConfig
from analysis.runner.ledger import Ledger, evidence_rows, write_evidence
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.pinning import (
    Pin,
    Provenance,
    configuration_key,
    git_commit,
    package_versions,
    study_runner_toml,
)
from analysis.runner.preflight import notices, resolve_cutoff, run_date_of
from analysis.runner.probe import failure_line, probe
from analysis.runner.secrets import redact_text, write_redacted_text
from analysis.runner.sweep import (
    RetryPolicy,
    SweepSpec,
    plan_slots,
    protocol_trajectory,
    run_sweep,
)
from analysis.safeio import SafeIOError, loads_json, read_json
from analysis.safeio.lock import DirLock


class RunnerCliError(RuntimeError):
    """A command-line problem (bad usage, exit status 2); the message says the fix."""


class EndpointCheckError(RunnerCliError):
    """The endpoint failed a check (unreachable, or the probe found it unusable): exit status 1, as probe."""


def comma_list(text: str | None) -> tuple[str, ...]:
    """The items of a comma-separated option, stripped, empty ones left out."""
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """One served configuration of a sweep."""

    cfg: EndpointConfig
    """Endpoint configuration before the probe."""
    endpoint_id: str
    """Stable identity of the endpoint (base URL, or the embedded model's digest)."""
    family: str
    """Model family for study.toml."""
    published: dt.date
    """Publication date for study.toml."""
    execution_group: str
    """Execution group of this configuration's rows."""
    key: str | None = None
    """study.toml configuration key (default model@provider@quantization)."""
    price: str | None = None
    """Price as given."""
    context_length: int | None = None
    """Declared context length."""


def sweep_identity(args: argparse.Namespace, targets: Sequence[Target], fixture_digest: str) -> str:
    """SHA-256 over everything that defines the sweep's slots and requests (not concurrency)."""
    ident = {"fixture": fixture_digest, "arms": args.arms, "repeats": args.repeats, "design": args.design,
             "seed": args.seed, "temperature": args.temperature,
             **({"seed_per_repeat": True} if args.seed_per_repeat else {}),
             **({"fold_max_tokens": args.fold_max_tokens} if getattr(args, "fold_max_tokens", None) else {}),
             **({"recall_max_tokens": args.recall_max_tokens}
                if getattr(args, "recall_max_tokens", 1024) != 1024 else {}),
             **({"plan": args.prereg["plan_digest"]} if getattr(args, "prereg", None) else {}),
             "targets": [{"endpoint": t.endpoint_id, "model": t.cfg.model, "group": t.execution_group,
                          "provider_order": list(t.cfg.provider_order), "allow_fallbacks": t.cfg.allow_fallbacks,
                          "quantization": t.cfg.quantization, "key": t.key} for t in targets]}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def _probe_target(t: Target, args: argparse.Namespace, arms: dict[str, Any]) -> dict[str, Any]:
    if args.no_probe:
        return {"skipped": True, "structured_mode": t.cfg.structured_mode, "seed_accepted": t.cfg.send_seed,
                "reasoning_off": t.cfg.reasoning_off, "max_length_mode": t.cfg.max_length_mode,
                "context_length": t.context_length}
    max_decl = max((f.max_length or 0 for a in arms.values() for f in a.fields), default=0) or None
    report = interrupt.run(probe(t.cfg, declared_context=t.context_length, max_declared=max_decl)).to_json()
    if args.after_probe is not None:
        args.after_probe()
    return report


def run_sweep_command(args: argparse.Namespace, targets: Sequence[Target],
                      extra_runner: dict[str, Any] | None = None) -> dict:
    """Probe (first session only), sweep every target, and write one evidence package."""
    fixture = getattr(args, "fixture_obj", None) or load_fixture_arg(args.fixture)
    ladder = getattr(args, "ladder_fixtures", None)
    if ladder and getattr(args, "prereg", None):
        raise RunnerCliError("--ladder cannot run under a preregistration (--plan pins one fixture); drop one of them")
    fixtures = {fx.spec.scenario: fx for fx in (ladder or (fixture,))}
    codes = comma_list(args.arms)
    arms = _capped_arms(args, _chosen_arms(codes))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = _Sweep(args, targets, extra_runner, fixture, arms, codes, out, ladder, fixtures)
    with DirLock(out / RUNNER_LOCK, 0.0, on_busy=_busy(out)):  # one runner per --out at a time
        return _sweep_locked(run)


def _chosen_arms(codes: tuple[str, ...]) -> dict[str, Any]:
    """The arms named by --arms, in its order (an unknown code is refused with the known arms listed)."""
    from analysis.runner.arms import load_arms

    arms_all = load_arms()
    unknown = [c for c in codes if c not in arms_all]
    if unknown:
        from analysis.runner.arms import arms_listing

        raise RunnerCliError(f"unknown arm codes {unknown}; the known arms:\n  "
                             + "\n  ".join(arms_listing(arms_all)))
    return {c: arms_all[c] for c in codes}


def _capped_arms(args: argparse.Namespace, arms: dict[str, Any]) -> dict[str, Any]:
    """The arms with --fold-max-tokens applied (both token caps checked positive first)."""
    cap, recall_cap = getattr(args, "fold_max_tokens", None), getattr(args, "recall_max_tokens", 1024)
    if (cap is not None and cap < 1) or recall_cap < 1:
        raise RunnerCliError(f"--fold-max-tokens ({cap}) and --recall-max-tokens ({recall_cap}) must be positive "
                             "token counts; give e.g. --fold-max-tokens 256")
    if cap is not None:  # one cap for every arm: the arms' contrast stays as declared, only the budget moves
        arms = {c: dataclasses.replace(a, output_tokens=min(a.output_tokens, cap)) for c, a in arms.items()}
    return arms


RUNNER_LOCK = ".runner.lock"
"""The lock file in --out that one runner holds for the whole session (analysis.safeio.lock)."""


def _busy(out: Path) -> Any:
    def message(holder: str, _waited: float) -> BaseException:
        return RunnerCliError(f"another runner ({holder}) is running a sweep into {out}; two runners into one "
                              "--out would run every slot twice. Let it finish (then re-run to resume), or choose "
                              "another --out")
    return message


@dataclasses.dataclass(frozen=True, slots=True)
class _Sweep:
    """What run_sweep_command checked before taking --out's lock: the session's fixed inputs."""

    args: argparse.Namespace
    """The parsed command line (args.window is set by the session)."""
    targets: Sequence[Target]
    """The served configurations to sweep."""
    extra_runner: dict[str, Any] | None
    """Extra manifest and [runner] fields of the command (embedded model, simulated truth)."""
    fixture: Any
    """The fixture (the first rung's for a ladder)."""
    arms: dict[str, Any]
    """Arm code -> arm, token caps applied."""
    codes: tuple[str, ...]
    """Arm codes in --arms order."""
    out: Path
    """The sweep directory (--out)."""
    ladder: Any
    """The ladder's fixtures, or None for one fixture."""
    fixtures: dict[str, Any]
    """Scenario -> fixture, every fixture swept."""


_Shaped = tuple[Target, EndpointConfig, Pin, Provenance, str]
"""A target with its probed request shape, pin, provenance and configuration key."""


def _sweep_locked(run: _Sweep) -> dict:
    """One session under --out's lock: check the ledger, probe or reuse the probes, sweep, write the package."""
    args = run.args
    ident = sweep_identity(args, run.targets, run.fixture.digest if not run.ladder else
                           "ladder:" + ",".join(fx.digest for fx in run.ladder))
    order = arm_order(run.codes, args.repeats, args.design)
    with Ledger(run.out / "ledger.jsonl") as ledger:
        sessions = _open_sessions(run, ledger, ident)
        if getattr(args, "window", None) is None:
            announce_window(args, run.targets, ledger.records)
        reports = (sessions[0]["probes"] if sessions
                   else {t.endpoint_id + "|" + t.cfg.model: _probe_target(t, args, run.arms) for t in run.targets})
        prior = _prior_manifest(run.out)
        shaped = _shape_targets(run, reports, sessions, prior)
        slots = _planned_slots(run, order, shaped)
        if not args.package_only:
            _record_session(ledger, args, ident, reports, len(slots))
        spec, settings = _sweep_spec(run, shaped, slots)
        tally = ({"ran": 0, "package_only": 1} if args.package_only
                 else interrupt.run(_sweep_clients(run, ledger, shaped, spec, settings)))
        records = list(ledger.records)
    manifest = _manifest(run, ident, order, tally, records, len(slots), shaped)
    if args.package_only:
        manifest["rebuilt_from_ledger"] = {"command": list(sys.argv), "git": git_commit(),
                                           "at": dt.datetime.now(dt.UTC).isoformat()}
        manifest["last_session"] = prior.get("last_session", tally)
    write_sweep_package(run, records, slots, manifest, shaped)
    return manifest


def _open_sessions(run: _Sweep, ledger: Ledger, ident: str) -> list[dict[str, Any]]:
    """The ledger's session records, once the ledger is known to be this sweep's (stamped with a sealed plan)."""
    args = run.args
    if getattr(args, "prereg", None):  # issue 13: every new ledger record names the sealed plan
        ledger.stamp = {"plan_digest": args.prereg["plan_digest"]}
    sessions = [r for r in ledger.records if r.get("kind") == "session"]
    if sessions and sessions[0]["identity"] != ident:
        raise RunnerCliError(f"{run.out}/ledger.jsonl belongs to a different sweep (identity "
                             f"{sessions[0]['identity'][:12]}, this command {ident[:12]}); rerun the original "
                             "command or choose a new --out")
    if args.package_only and not sessions:
        raise RunnerCliError(f"--package-only needs an existing sweep in {run.out}; run the sweep first")
    return sessions


def _prior_manifest(out: Path) -> dict[str, Any]:
    """The manifest an earlier session wrote ({} when there is none or it is unreadable).

    Provenance of the run itself (not of a later --package-only rebuild): first session, else the
    manifest the run wrote, else now.
    """
    if not (out / "run_manifest.json").exists():
        return {}
    try:
        manifest_doc: Any = read_json(out / "run_manifest.json")
    except SafeIOError:
        manifest_doc = {}
    return manifest_doc if isinstance(manifest_doc, dict) else {}


def _shape_targets(run: _Sweep, reports: dict[str, Any], sessions: list[dict[str, Any]],
                   prior: dict[str, Any]) -> list[_Shaped]:
    """Every target shaped by its probe report; two targets may not share a configuration key."""
    shaped = [_shape_target(t, reports[t.endpoint_id + "|" + t.cfg.model], run.args, sessions, prior)
              for t in run.targets]
    keys = [k for *_, k in shaped]
    if len(set(keys)) != len(keys):
        raise RunnerCliError(f"two targets share the configuration key {keys}; give each a distinct `key`")
    return shaped


def _shape_target(t: Target, report: dict[str, Any], args: argparse.Namespace, sessions: list[dict[str, Any]],
                  prior: dict[str, Any]) -> _Shaped:
    """One target's request shape (from its probe), pin, key and provenance (carried over by --package-only)."""
    if report.get("usable") is False:
        raise EndpointCheckError(f"probe {failure_line(report)}")
    base = str(report["base_url"]) if args.package_only and report.get("base_url") else t.cfg.base_url
    cfg = dataclasses.replace(t.cfg, base_url=base, structured_mode=report["structured_mode"],
                              send_seed=report["seed_accepted"], reasoning_off=report["reasoning_off"],
                              max_length_mode=report["max_length_mode"])
    pin = Pin.from_config(cfg, context_length=report.get("context_length"), price=t.price)
    key = t.key or configuration_key(pin)
    run_prov = dict(prior.get("configurations", {}).get(key, {}))
    if sessions and sessions[0].get("git"):
        run_prov.update(git=sessions[0]["git"], command=sessions[0]["argv"], packages=sessions[0]["packages"])
    carried: dict[str, Any] = ({k: (tuple(v) if k == "command" else v) for k, v in run_prov.items()
                                if k in ("git", "command", "packages")} if args.package_only else {})
    prov = Provenance(pin=pin, family=t.family, published=t.published, temperature=cfg.temperature,
                      seed=cfg.seed, seed_sent=cfg.send_seed, structured_mode=cfg.structured_mode,
                      reasoning_off=cfg.reasoning_off, probe=report, **carried)
    return t, cfg, pin, prov, key


def _planned_slots(run: _Sweep, order: Any, shaped: Sequence[_Shaped]) -> list[Any]:
    """Every slot of the sweep: fixture by target by the arm order's rows (a ladder's by repeat, then rung)."""
    slots = [s for fx in run.fixtures.values() for t, _, _, _, key in shaped
             for s in plan_slots(order, scenario=fx.spec.scenario, configuration=key,
                                 execution_group=t.execution_group)]
    if run.ladder:  # repeat blocks rung by rung: an interrupted ladder sweep has every rung at equal depth
        rank = {sc: i for i, sc in enumerate(run.fixtures)}
        slots.sort(key=lambda s: (s.repeat, rank[s.scenario]))
    return slots


def _record_session(ledger: Ledger, args: argparse.Namespace, ident: str, reports: dict[str, Any],
                    n_slots: int) -> None:
    """The session record: identity, probes, start time, slot count and the command's provenance."""
    ledger.append_sync({"kind": "session", "identity": ident, "probes": reports,
                        "started": dt.datetime.now(dt.UTC).isoformat(), "n_slots": n_slots,
                        "git": git_commit(), "argv": list(sys.argv),
                        "args": list(getattr(args, "argv", sys.argv[1:])), "packages": package_versions()})


def _sweep_spec(run: _Sweep, shaped: Sequence[_Shaped], slots: Sequence[Any]) -> tuple[SweepSpec, dict[str, Any]]:
    """The sweep's spec (slots, budgets, concurrency, retry policy) and each configuration's run settings."""
    from analysis.runner.protocol import RunSettings

    args = run.args
    settings = {key: RunSettings(temperature=cfg.temperature, seed=cfg.seed,
                                 response_format_style=cfg.structured_mode,  # type: ignore[arg-type]
                                 recall_max_tokens=getattr(args, "recall_max_tokens", 1024))
                for _, cfg, _, _, key in shaped}
    spec = SweepSpec(tuple(slots), {sc: len(fx.graded) for sc, fx in run.fixtures.items()},
                     {c: a.declared_chars for c, a in run.arms.items()}, concurrency=args.concurrency,
                     retry=RetryPolicy(max_attempts=args.max_attempts, base_s=args.backoff, cap_s=args.backoff_cap),
                     calls_per_slot={sc: len(fx.chunks) + 1 for sc, fx in run.fixtures.items()})
    return spec, settings


async def _sweep_clients(run: _Sweep, ledger: Ledger, shaped: Sequence[_Shaped], spec: SweepSpec,
                         settings: dict[str, Any]) -> dict[str, int]:
    """Run the sweep with one client per configuration, every client closed at the end."""
    args = run.args
    clients = {key: EndpointClient(cfg) for _, cfg, _, _, key in shaped}
    try:
        return await run_sweep(spec, ledger, clients, {key: pin for _, _, pin, _, key in shaped},
                               protocol_trajectory(run.fixtures if run.ladder else run.fixture, run.arms, settings,
                                                   seed_per_repeat=args.seed_per_repeat),
                               progress=not args.quiet,
                               seed=args.seed or 0)
    finally:
        for c in clients.values():
            await c.aclose()


def _manifest(run: _Sweep, ident: str, order: Any, tally: dict[str, int], records: list[dict[str, Any]],
              n_slots: int, shaped: Sequence[_Shaped]) -> dict[str, Any]:
    """run_manifest.json of this session: the sweep's definition, the ledger's counts, the configurations."""
    args = run.args
    return {
        "identity": ident, "command": list(sys.argv), "last_session": tally,
        "fixture": {"name": run.fixture.spec.name, "digest": run.fixture.digest, "scenario": run.fixture.spec.scenario},
        **({"ladder": [{"rung": fx.spec.rung, "name": fx.spec.name, "digest": fx.digest} for fx in run.ladder]}
           if run.ladder else {}),
        "arms": {c: {"prompt_sha256": a.prompt_sha256, "declared_chars": a.declared_chars,
                     "output_tokens": a.output_tokens, "carry_cap": a.carry_cap} for c, a in run.arms.items()},
        "design": {"name": order.design, "rows": [list(r) for r in order.rows], "closes": order.closes},
        "repeats": args.repeats, **_ledger_counts(records, n_slots),
        "configurations": {key: {**prov.manifest(), "configuration": key, "endpoint_id": t.endpoint_id,
                                 "execution_group": t.execution_group} for t, _, _, prov, key in shaped},
        "recency": {"cutoff": args.window[0].isoformat(),
                    **{k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in args.window[1].items()}},
        **(run.extra_runner or {}),
    }


def _ledger_counts(records: list[dict[str, Any]], n_slots: int) -> dict[str, Any]:
    """The manifest's counts from the ledger: sessions, pin violations, open attempts, slots planned and finished."""
    started = {(r["slot"], r["attempt"]) for r in records if r.get("kind") == "attempt_start"}
    ended = {(r["slot"], r["attempt"]) for r in records if r.get("kind") == "attempt_end"}
    return {
        "sessions": sum(1 for r in records if r.get("kind") == "session"),
        "pin_violations": sum(1 for r in records if r.get("kind") == "response" and r.get("pin_violation")),
        "open_attempts": sorted(started - ended),
        "slots_planned": n_slots,
        "slots_finished": len({r["slot"] for r in records if r.get("kind") == "attempt_end" and not r.get("interrupted")
                               and (r.get("valid") or r.get("invalid_reason") != "infrastructure")}),
    }


def write_sweep_package(run: _Sweep, records: list[dict[str, Any]], slots: Sequence[Any], manifest: dict[str, Any],
                        shaped: Sequence[_Shaped]) -> Path:
    """OUT/evidence from the ledger, written by analysis.runner.package (pin tables appended, all locked)."""
    from analysis.evidence.model import Configuration, PartitionRun, Study
    from analysis.runner.arms import arm_record

    args, out = run.args, run.out
    ev = evidence_rows(records, {s.slot_id for s in slots})
    confs = {key: Configuration(key=key, family=prov.family, published=prov.published, provider=pin.provider,
                                quantization=pin.quantization) for _, _, pin, prov, key in shaped}
    runs = [PartitionRun(key, t.execution_group, args.repeats) for t, *_, key in shaped
            if args.control in run.codes and args.treatment in run.codes]
    runner = _runner_tables(run, records, shaped)
    study = Study(name=args.study_name, recency_cutoff=args.window[0],
                  control=args.control, treatment=args.treatment, scenario=run.fixture.spec.scenario,
                  configurations=confs, partition_runs=tuple(runs), kind=getattr(args, "kind", None))
    pkg = out / "evidence"
    text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"
    write_redacted_text(out / "run_manifest.json", text)
    from analysis.runner.prereg_sweep import package_extras  # issue 13: [preregistration] + preregistration.json
    prereg_toml, prereg_json = package_extras(args, records, list(confs))
    write_evidence(pkg, study, ev, study_appendix="\n".join([*runner, *([prereg_toml] if prereg_toml else [])]),
                   extra_json={"run_manifest.json": loads_json(text, out / "run_manifest.json"),
                               "arms.json": {c: arm_record(a) for c, a in run.arms.items()}, **prereg_json})
    return pkg


def _runner_tables(run: _Sweep, records: list[dict[str, Any]], shaped: Sequence[_Shaped]) -> list[str]:
    """study.toml's runner tables: [runner] (the recency window and the first session's command), one pin
    table per configuration, then the ladder's and the simulation's tables when there are any."""
    args = run.args
    runner = []
    for t, _, pin, prov, key in shaped:
        extra = {"max_length_mode": prov.probe.get("max_length_mode"), "design": args.design,
                 "execution_group": t.execution_group,
                 **({"fold_max_tokens": args.fold_max_tokens} if getattr(args, "fold_max_tokens", None) else {}),
                 **({"recall_max_tokens": args.recall_max_tokens}
                    if getattr(args, "recall_max_tokens", 1024) != 1024 else {}),
                 **{k: v for k, v in (run.extra_runner or {}).items() if isinstance(v, (str, int, float, bool))}}
        runner.append(study_runner_toml(prov, extra).replace(json.dumps(configuration_key(pin)), json.dumps(key), 1))
    recency = _with_first_command(args.window[1], records)
    runner.insert(0, "[runner]\n" + "\n".join(f"{k} = {v.isoformat() if isinstance(v, dt.date) else json.dumps(v)}"
                                               for k, v in recency.items()) + "\n")
    if getattr(args, "ladder_fixtures", None):
        from analysis.runner.ladder import ladder_toml

        runner.append(ladder_toml(args.ladder_fixtures))
    if getattr(args, "simulation_toml", None):  # issue 35: the planted truth of a simulated package
        runner.append(args.simulation_toml)
    return runner


def _with_first_command(recency: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The recency fields, with the command of the sweep's first session as the user typed it (when recorded)."""
    first = next((r for r in records if r.get("kind") == "session"), None)
    if first is not None and first.get("args") is not None:
        argv0 = (first.get("argv") or [None])[0]  # the program the user ran: carriers-runner, python -m ...
        typed = invoked_as("analysis.runner", "python -m analysis.runner", argv0 if isinstance(argv0, str) else None)
        recency = {**recency, "command": " ".join([typed, *(shlex.quote(a) for a in first["args"])])}
    return recency


def announce_window(args: argparse.Namespace, targets: Sequence[tuple[str, dt.date]] | Sequence[Target],
                    records: Sequence[dict[str, Any]]) -> None:
    """Fix the study's recency window (args.window) and print the pre-run notices on stderr."""
    cutoff, recency = resolve_cutoff(args.recency_cutoff, run_date_of(records))
    args.window = (cutoff, recency)
    pairs = [(t.key or configuration_key(Pin.from_config(t.cfg)), t.published) if isinstance(t, Target) else t
             for t in targets]
    if args.package_only:
        return
    for line in notices(pairs, cutoff, recency, temperature=args.temperature, repeats=args.repeats,
                        seed=args.seed, seed_per_repeat=args.seed_per_repeat):
        say_redacted(line)


def say_redacted(message: str) -> None:
    """One message on stderr, redacted and with control characters made visible (never an encoding error)."""
    emit(redact_text(message), sys.stderr)

