"""The runner's command line: its subcommands, arguments, defaults and --help (``build_runner_parser``).

Parsing only; what each subcommand does is in analysis.runner.cli.
"""

from __future__ import annotations

import argparse

from analysis.invocation import analysis_command
from analysis.runner.arm_order import DESIGNS
from analysis.runner.bounded_http import MAX_BODY_BYTES

EMBEDDED_TEMPERATURE = 0.7
"""The default temperature of every subcommand (embedded, sweep, probe): with --seed-per-repeat (also the
default of sweep and embedded) repeats of a deterministic server (llama.cpp, vLLM) are different samples,
while both arms of a repeat share one seed. So the defaults never trigger the runner's own warning about
repeats that are copies (analysis.runner.preflight.notices)."""


def _bool(text: str) -> bool:
    if text.lower() in ("true", "yes", "1"):
        return True
    if text.lower() in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add_endpoint_args(p: argparse.ArgumentParser, *, remote: bool) -> None:
    if remote:
        p.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
        p.add_argument("--model", help="model id sent in every request")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY" if remote else "",
                   help="environment variable holding the API key (never written anywhere; '' for none)")
    p.add_argument("--provider-order", default="", help="gateway provider pin, comma-separated (OpenRouter-style)")
    p.add_argument("--allow-fallbacks", type=_bool, default=None,
                   help="gateway fallback setting sent with the pin (use false to pin strictly)")
    p.add_argument("--quantization", default=None, help="pinned/declared quantization, e.g. bf16")
    p.add_argument("--accept-served-model", default="", help="served model ids accepted besides --model")
    temp = EMBEDDED_TEMPERATURE
    p.add_argument("--temperature", type=float, default=temp,
                   help=f"fixed sampling temperature, the same for every arm (default {temp:g})")
    p.add_argument("--seed", type=int, default=0,
                   help="seed sent where the endpoint accepts one (recorded either way; a 64-bit integer)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="total deadline of one request in seconds, connect to last byte (default 600); a reply "
                        f"body above {MAX_BODY_BYTES >> 20} MiB, before or after gzip/deflate decompression, is "
                        "refused as an infrastructure fault, and so is a redirect")
    p.add_argument("--structured-mode", choices=("json_schema", "json_object_schema", "none"), default=None,
                   help="request shape for schema arms when --no-probe is given")
    p.add_argument("--reasoning-off", choices=("none", "openrouter", "effort", "chat_template"), default=None,
                   help="reasoning-disable dialect when --no-probe is given")
    p.add_argument("--context-length", type=int, default=None, help="declared context length if /models lacks it")


def _add_sweep_args(p: argparse.ArgumentParser, *, arms: str, repeats: int, concurrency: int,
                    seed_per_repeat: bool = False) -> None:
    p.add_argument("--arms", default=arms, help=f"arm codes, comma-separated (default {arms}; the list with "
                                                "each arm's meaning: the arms subcommand)")
    p.add_argument("--repeats", type=int, default=repeats, help=f"planned repeats (default {repeats})")
    p.add_argument("--concurrency", type=int, default=concurrency, help="trajectories in flight at once")
    p.add_argument("--out", required=True, help="sweep directory: ledger, manifest, evidence/ (resumable)")
    p.add_argument("--fold-max-tokens", type=int, default=None, metavar="N",
                   help="cap the fold reply budget (max_tokens) of every arm at N, the same cap for all arms "
                        "(arms.json records the budget used; default: each arm's own, 2,400 for j and q)")
    p.add_argument("--recall-max-tokens", type=int, default=1024, metavar="N",
                   help="reply budget of the recall turn (default 1024)")
    p.add_argument("--fixture", default="small", help="small | default | small-s1 | default-s1 | path to fixture JSON")
    p.add_argument("--ladder", default=None, metavar="RUNGS",
                   help="run load-ladder rungs instead of --fixture: comma-separated rung names "
                        "(e.g. g1-d0-c900-f2,g7-d0-c900-f2) or 'all' (analysis/runner/ladder.py)")
    p.add_argument("--design", choices=DESIGNS, default="williams", help="arm order per repeat (default williams)")
    p.add_argument("--execution-group", default="sweep-01", help="execution group id written into rows")
    p.add_argument("--configuration", default=None, help="study.toml configuration key (default: model@provider@quant)")
    p.add_argument("--family", default=None, help="model family for study.toml (default: prefix of the model id)")
    p.add_argument("--published", default=None, help="configuration publication date YYYY-MM-DD (required remotely)")
    p.add_argument("--price", default=None, help="price as given by the provider (free text, recorded)")
    p.add_argument("--study-name", default="v2 sweep", help="study name in study.toml")
    p.add_argument("--kind", choices=("pilot",), default=None,
                   help="declare the package a pilot in study.toml ([study] kind), so the analysis can report "
                        f"it beside other evidence ({analysis_command()} --companion DIR)")
    p.add_argument("--recency-cutoff", default=None,
                   help="study recency cutoff YYYY-MM-DD: configurations published on or after it form the primary "
                        "panel (default: six months before the run date, the paper's rule; recorded in study.toml)")
    p.add_argument("--control", default="j", help="control arm of the primary contrast")
    p.add_argument("--treatment", default="q", help="treatment arm of the primary contrast")
    p.add_argument("--max-attempts", type=int, default=4, help="attempts per slot ending in infrastructure faults")
    p.add_argument("--backoff", type=float, default=1.0, help="first retry backoff in seconds")
    p.add_argument("--backoff-cap", type=float, default=60.0, help="largest backoff (Retry-After included)")
    p.add_argument("--no-probe", action="store_true", help="skip the capability probe (use --structured-mode)")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    p.add_argument("--seed-per-repeat", action=argparse.BooleanOptionalAction, default=seed_per_repeat,
                   help="derive one seed per repeat block from --seed, shared by the block's arms, so sampled "
                        f"repeats differ while arms stay paired (default {'on' if seed_per_repeat else 'off'})")
    p.add_argument("--package-only", action="store_true",
                   help="rebuild OUT/evidence from the ledger without running the remaining slots")


EXIT_STATUS = """\
exit status: 0 done; 1 the endpoint or the evidence failed a check (an unreachable or unusable
endpoint, a ledger or file that cannot be used); 2 bad usage (a missing or wrong argument);
130 interrupted (re-run the same command to resume)."""


def build_runner_parser() -> argparse.ArgumentParser:
    """The runner's parser; ``prog`` is the name it was invoked by (carriers-runner or python -m analysis.runner)."""
    from analysis.invocation import doc_command, invoked_as
    from analysis.version import __version__

    prog = invoked_as("analysis.runner", "python -m analysis.runner")
    ap = argparse.ArgumentParser(
        prog=prog,
        description="Run the fold-and-recall protocol against an OpenAI-compatible endpoint and write an "
                    "evidence package. Re-running the same sweep command resumes it from its ledger.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=("""examples:
  # no endpoint: llama.cpp + SmolLM2-135M on loopback, small fixture, arms j,q, 2 repeats sampled at
  # temperature 0.7 with one seed per repeat (the embedded defaults)
  {prog} embedded --out runs/embedded
  # your vLLM server
  {prog} sweep --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B \\
      --published 2025-04-29 --api-key-env '' --arms j,q,m --repeats 4 --concurrency 8 --out runs/qwen3-8b
  # a hosted gateway, one provider pinned, fallbacks off
  OPENROUTER_API_KEY=... {prog} sweep --base-url https://openrouter.ai/api/v1 \\
      --api-key-env OPENROUTER_API_KEY --model qwen/qwen3-8b --provider-order DeepInfra \\
      --allow-fallbacks false --quantization fp8 --published 2025-04-29 --out runs/qwen3-8b-deepinfra
  # no model at all: a simulated summariser whose loss rates are planted ({analyse} docs simulation)
  {prog} simulate "$({analyse} docs truth/clear-effect --path)" \\
      --ladder g1-d0-c100-f1,g1-d0-c100-f3 --repeats 6 --out runs/simulated
  # only the capability verdicts
  {prog} probe --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen3-8B --api-key-env ''

The evidence package is OUT/evidence; analyse it with: {analyse} --evidence OUT/evidence --out OUT/analysis
(its report: OUT/analysis/report/index.html). Preregistration: {prereg}; every doc: {analyse} docs

""" + EXIT_STATUS).format(prog=prog, analyse=analysis_command(), prereg=doc_command("preregistration")))
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("arms", help="list the arm codes with each arm's meaning",
                   description="Every arm code --arms accepts, with its one-line meaning, representation, what it "
                               "carries and its output budget.")
    p = sub.add_parser("probe", help="capability probe of one endpoint under the exact request parameters")
    _add_endpoint_args(p, remote=True)
    p.add_argument("--max-declared", type=int, default=9600, help="largest per-field maxLength to test")
    s = sub.add_parser("sweep", help="configurations x arms x repeats against your endpoint (resumable)")
    _add_endpoint_args(s, remote=True)
    _add_sweep_args(s, arms="j,q", repeats=4, concurrency=4, seed_per_repeat=True)
    s.add_argument("--plan", default=None,
                   help=f"a sealed preregistration directory (plan.toml + plan.lock, {doc_command('preregistration')}; "
                        "digests checked before the start), or a "
                        "TOML with one [[configurations]] table per served configuration (base_url, model, "
                        "published, and optionally family, api_key_env, provider_order, allow_fallbacks, "
                        "quantization, price, key, execution_group, context_length): configurations x arms "
                        "x repeats in one sweep and one evidence package; replaces --base-url/--model")
    e = sub.add_parser("embedded", help="no endpoint needed: start llama.cpp with SmolLM2-135M, sweep, stop it")
    _add_endpoint_args(e, remote=False)
    _add_sweep_args(e, arms="j,q", repeats=2, concurrency=1, seed_per_repeat=True)
    e.add_argument("--n-threads", type=int, default=None, help="llama.cpp threads (default: its own choice)")
    m = sub.add_parser("simulate", help="no model: a simulated summariser playing a planted truth file on "
                                        f"loopback ({doc_command('simulation')}); the package is kind = \"simulation\"")
    m.add_argument("truth", help="truth TOML file: per-arm capture, keep and recall probabilities "
                                  f"({doc_command('simulation')}; examples: "
                                  f"{analysis_command()} docs truth/NAME --path)")
    _add_endpoint_args(m, remote=False)
    _add_sweep_args(m, arms="j,q", repeats=4, concurrency=4, seed_per_repeat=True)
    m.set_defaults(temperature=1.0, backoff=0.0, backoff_cap=0.0, study_name="v2 simulated sweep (planted truth)",
                   execution_group="sim-01")
    return ap
