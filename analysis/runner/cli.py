"""`python -m analysis.runner`: probe an endpoint, run a sweep, or run the embedded default.

Methods note: one sweep session into --out (the ledger, the probes, the run manifest and the
evidence package) is analysis.runner.session; this module turns a command line into its targets
and runs it.  API keys are read from the environment variable named by --api-key-env and
redacted from everything written (analysis.runner.secrets).  Every argument is checked, and the
pre-run notices printed (configurations outside the recency window, repeats that will be
copies), before a server starts or a request is sent (analysis.runner.preflight).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from analysis.escape import emit
from analysis.invocation import doc_command
from analysis.runner import interrupt
from analysis.runner.arguments import build_runner_parser
from analysis.runner.client import ClientConfigError, EndpointConfig, base_url_problem
from analysis.runner.named_fixtures import FixtureArgError
from analysis.runner.pinning import Pin, configuration_key
from analysis.runner.preflight import PreflightError, identifier_problem, run_date_of, validate
from analysis.runner.probe import ProbeReport, apply, failure_line, probe
from analysis.runner.secrets import api_key_env_problem, redact, redact_text
from analysis.runner.session import (  # RUNNER_LOCK: the lock of --out, importable from here as before
    RUNNER_LOCK as RUNNER_LOCK,
)
from analysis.runner.session import (
    EndpointCheckError,
    RunnerCliError,
    Target,
    announce_window,
    comma_list,
    run_sweep_command,
    say_redacted,
)
from analysis.runner.summary import session_summary_lines
from analysis.safeio import SafeIOError, read_toml

SMOLLM2_PUBLISHED = dt.date(2024, 11, 1)  # SmolLM2 public release (Hugging Face, 1 Nov 2024)


def endpoint_config(args: argparse.Namespace, base_url: str, model: str) -> EndpointConfig:
    """The endpoint configuration the command line describes, for one base URL and model."""
    return EndpointConfig(
        base_url=base_url, model=model, api_key_env=args.api_key_env or None, temperature=args.temperature,
        seed=args.seed, timeout_s=args.timeout, provider_order=comma_list(args.provider_order),
        allow_fallbacks=args.allow_fallbacks, quantization=args.quantization,
        accept_served_models=comma_list(args.accept_served_model),
        structured_mode=args.structured_mode or "json_schema", reasoning_off=args.reasoning_off or "none")


def out_line(message: str) -> None:
    """One line on stdout: redacted, control characters and newlines visible, the stream's encoding kept."""
    emit(redact_text(message), sys.stdout, one_line=True)


def load_plan_targets(path: str, args: argparse.Namespace) -> list[Target]:
    """Targets from a plan TOML: one [[configurations]] table per served configuration."""
    try:
        doc = read_toml(path)
    except (OSError, SafeIOError) as exc:
        raise RunnerCliError(f"--plan {path}: {exc}; write a TOML file with [[configurations]] tables") from None
    entries = doc.get("configurations")
    if not isinstance(entries, list) or not entries:
        raise RunnerCliError(f"--plan {path}: no [[configurations]] tables; add one per served configuration")
    targets = []
    for i, e in enumerate(entries, start=1):
        problem = _plan_entry_problem(e, i)
        if problem:
            raise RunnerCliError(f"--plan {path}: {problem}")
        cfg = EndpointConfig(
            base_url=e["base_url"], model=e["model"], api_key_env=e.get("api_key_env") or None,
            temperature=args.temperature, seed=args.seed, timeout_s=args.timeout,
            provider_order=tuple(e.get("provider_order", ())), allow_fallbacks=e.get("allow_fallbacks"),
            quantization=e.get("quantization"), accept_served_models=tuple(e.get("accept_served_models", ())),
            structured_mode=args.structured_mode or "json_schema", reasoning_off=args.reasoning_off or "none")
        targets.append(Target(cfg, e["base_url"], e.get("family") or _family(e["model"]), e["published"],
                              e.get("execution_group") or f"{args.execution_group}-{i:02d}", e.get("key"),
                              e.get("price"), e.get("context_length")))
    return targets


def _plan_entry_problem(e: Any, i: int) -> str | None:
    """What is wrong with the plan's configuration ``i`` (a table with usable fields), else None."""
    if not isinstance(e, dict):
        return f"configuration {i} is not a table; write [[configurations]] tables"
    problem = api_key_env_problem(e.get("api_key_env"), option=f"configuration {i} api_key_env")
    if problem:
        return problem
    missing = [k for k in ("base_url", "model", "published") if k not in e]
    if missing:
        return f"configuration {i} lacks {missing}; add them"
    if (problem := base_url_problem(e["base_url"])) is not None:
        return f"configuration {i}: {problem}"
    named = [(n, e.get(n)) for n in ("key", "model", "quantization", "execution_group")]
    named += [("provider_order", p) for p in (e.get("provider_order") or ())]
    for name, value in named:
        problem = identifier_problem(value if isinstance(value, str) or value is None else repr(value),
                                     f"configuration {i} {name}")
        if problem:
            return problem
    if not isinstance(e["published"], dt.date):
        return f"configuration {i} published must be an unquoted TOML date"
    return None


def _family(model: str) -> str:
    return model.split("/")[0] if "/" in model else model.split("-")[0]


def _published(args: argparse.Namespace, default: dt.date | None) -> dt.date:
    if args.published:
        try:
            return dt.date.fromisoformat(args.published)
        except ValueError as exc:
            raise RunnerCliError(f"--published {args.published!r} is not a date; write YYYY-MM-DD") from exc
    if default is None:
        raise RunnerCliError("--published is required for your own endpoint (the configuration's publication date, "
                             "YYYY-MM-DD); the primary panel applies the recency cutoff to it")
    return default


def cmd_embedded(args: argparse.Namespace) -> dict:
    from analysis.digest import file_sha256
    from analysis.runner.embedded import MODEL_ALIAS, EmbeddedServer
    from analysis.runner.ledger import read_records

    out = Path(args.out)
    key = args.configuration or configuration_key(Pin.from_config(endpoint_config(args, "loopback", MODEL_ALIAS)))
    announce_window(args, [(key, _published(args, SMOLLM2_PUBLISHED))], read_records(out / "ledger.jsonl"))
    server = EmbeddedServer(out / "llama_server.log", n_threads=args.n_threads)
    if args.context_length is None:
        args.context_length = server.n_ctx  # llama_cpp.server's /models does not report it
    model_sha = file_sha256(server.model)
    if args.package_only:  # no server needed: the ledger holds everything
        cfg = endpoint_config(args, "http://127.0.0.1/v1 (embedded, loopback)", MODEL_ALIAS)
        target = Target(cfg, f"embedded:{model_sha}", args.family or "smollm2", _published(args, SMOLLM2_PUBLISHED),
                        args.execution_group, args.configuration, args.price, args.context_length)
        return run_sweep_command(args, [target], extra_runner={
            "embedded_model_file": server.model.name, "embedded_model_sha256": model_sha,
            "embedded_server": "llama_cpp.server n_ctx=8192"})
    with server:
        def restart_if_dead() -> None:
            # llama.cpp may drop its worker on a schema it cannot compile (probe step max_length)
            if not server.answers():
                port = server.port
                server.stop()
                server.start(port)

        args.after_probe = restart_if_dead
        extra = {"embedded_model_file": server.model.name, "embedded_model_sha256": model_sha,
                 "embedded_server": "llama_cpp.server n_ctx=8192"}
        cfg = endpoint_config(args, server.base_url, MODEL_ALIAS)
        target = Target(cfg, f"embedded:{model_sha}", args.family or "smollm2",
                        _published(args, SMOLLM2_PUBLISHED), args.execution_group, args.configuration,
                        args.price, args.context_length)
        return run_sweep_command(args, [target], extra_runner=extra)


def cmd_simulate(args: argparse.Namespace) -> dict:
    """Sweep against the simulated summariser (analysis.runner.simulate), served on loopback for the session."""
    from analysis.runner.arms import load_arms
    from analysis.runner.simulate.command import SIM_MODEL, simulated_server, simulation_toml

    if args.kind not in (None, "simulation"):
        raise RunnerCliError(f"--kind {args.kind}: a simulated package is kind = \"simulation\", never a pilot; "
                             "drop --kind")
    args.kind = "simulation"
    arms = {c: a for c, a in load_arms().items() if c in comma_list(args.arms)}
    fixtures = args.ladder_fixtures or (args.fixture_obj,)
    with simulated_server(args.truth, fixtures, arms, salt=str(args.seed)) as (server, truth):
        args.simulation_toml = simulation_toml(args.truth, truth)
        cfg = endpoint_config(args, server.base_url, SIM_MODEL)
        target = Target(cfg, f"simulated:{truth.sha256}", args.family or "simulated",
                        _published(args, run_date_of(read_records_of(args.out))), args.execution_group,
                        args.configuration, args.price, args.context_length)
        return run_sweep_command(args, [target], extra_runner={"simulated_truth_sha256": truth.sha256})


def read_records_of(out: str) -> list[dict[str, Any]]:
    """The ledger records of --out (none for a new sweep)."""
    from analysis.runner.ledger import read_records

    return list(read_records(Path(out) / "ledger.jsonl"))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_runner_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.after_probe = None
    args.window = None
    # SIGTERM (and Ctrl-C) stop the command with one line: context managers stop the embedded
    # server; inside a sweep the loop is cancelled and wound down first (analysis.runner.interrupt)
    with interrupt.handling(ignore_after_stop=True):
        return _dispatch(args, argv)


def _targets(args: argparse.Namespace) -> list[Target]:
    if args.plan:
        return load_plan_targets(args.plan, args)
    if args.base_url and args.model:
        return [Target(endpoint_config(args, args.base_url, args.model), args.base_url,
                       args.family or _family(args.model), _published(args, None), args.execution_group,
                       args.configuration, args.price, args.context_length)]
    raise RunnerCliError("give --base-url and --model (one configuration) or --plan FILE (several)")


def _dispatch(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    try:
        return _run_subcommand(args, argv)
    except KeyboardInterrupt as exc:
        say_redacted("interrupted; re-run the same command to resume from the ledger")
        return exc.exit_code if isinstance(exc, interrupt.Interrupted) else 130
    except Exception as exc:
        return _error_status(exc)


def _run_subcommand(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Run the parsed subcommand (every argument validated first); its exit status."""
    if args.command == "sweep":
        from analysis.runner.prereg_sweep import is_plan_dir, prepare_sweep
        if is_plan_dir(args.plan):  # issue 13: a sealed preregistration directory
            plan_toml = prepare_sweep(args, sys.argv[1:] if argv is None else argv)
            args.plan = str(plan_toml) if plan_toml else None
    if args.command == "arms":
        from analysis.runner.arms import arms_listing

        for line in arms_listing():
            out_line(line)
        return 0
    validate(args)  # every argument, before a server starts or a request is sent
    if args.command == "probe":
        return _cmd_probe(args)
    if args.command == "sweep":
        _with_summary(args, lambda: run_sweep_command(args, _targets(args)))
        if not getattr(args, "prereg", None):
            say_redacted(f"not preregistered: no sealed --plan PLAN_DIR (see {doc_command('preregistration')})")
    elif args.command == "simulate":
        _with_summary(args, lambda: cmd_simulate(args))
        say_redacted("simulated, planted truth: this package is kind = \"simulation\", never a pilot")
    else:
        _with_summary(args, lambda: cmd_embedded(args))
    return 0


def _cmd_probe(args: argparse.Namespace) -> int:
    """Probe one endpoint: the report on stdout and the request shape on stderr (1, with what was observed,
    when the endpoint is unusable)."""
    if not (args.base_url and args.model):
        raise RunnerCliError("probe needs --base-url and --model")
    cfg = endpoint_config(args, args.base_url, args.model)
    report: ProbeReport = interrupt.run(probe(cfg, declared_context=args.context_length,
                                            max_declared=args.max_declared))
    if not report.usable:  # the outcome first, then only what was observed
        say_redacted(f"error: {failure_line(report.to_json())}")
        emit(redact_text(json.dumps(redact(report.observed_json()), indent=2, default=str)), sys.stdout)
        return 1
    emit(redact_text(json.dumps(redact(report.to_json()), indent=2, default=str)), sys.stdout)
    say_redacted(json.dumps({"request_shape": dataclasses.asdict(apply(cfg, report))}, default=str))
    return 0


def _with_summary(args: argparse.Namespace, command: Callable[[], dict]) -> None:
    """Run a sweeping command, then print the session summary of its package on stdout."""
    started = time.monotonic()
    m = command()
    for line in session_summary_lines(Path(args.out) / "evidence", m, time.monotonic() - started):
        out_line(line)


def _error_status(exc: Exception) -> int:
    """One line on stderr for a command that failed, and its exit status.

    Named errors: their message says the fix (never the class name). 1: the endpoint, the embedded server
    that died, the ledger or a file failed a check; 2: bad usage (an embedded model or server not installed
    too); 1 with the traceback for anything unforeseen.
    """
    from analysis.evidence.truth import TruthError
    from analysis.runner.embedded import EmbeddedError, EmbeddedServerFailed
    from analysis.runner.ledger import LedgerError
    from analysis.runner.prereg import PlanError

    if isinstance(exc, (EndpointCheckError, EmbeddedServerFailed, LedgerError, SafeIOError)):
        say_redacted(f"error: {exc}")
        return 1
    if isinstance(exc, (RunnerCliError, FixtureArgError, PreflightError, ClientConfigError, EmbeddedError,
                        PlanError, TruthError)):
        say_redacted(f"error: {exc}")
        return 2
    if isinstance(exc, OSError):  # a full disk, a permission: one line, never a traceback
        say_redacted(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return 1
    import traceback

    say_redacted(traceback.format_exc())
    return 1
