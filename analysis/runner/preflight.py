"""Everything checked and said before a sweep sends its first request.

Methods note: `validate` checks every argument of `probe`, `sweep` and `embedded` (ranges, the
key's environment variable, the fixture, the arms and design, the output directory, dates)
before any server is started or any request sent, and raises PreflightError naming the fix.

The recency window of a new study is the study's own (paper 3.1: "publication on or after 28
January 2026, six months before the study date").  Unless --recency-cutoff is given, the cutoff
is the run date minus six calendar months (day clamped to the month's end), where the run date
is the UTC date of the sweep's first session as its ledger records it, so a sweep resumed on a
later day keeps its window.  The rule and the run date are recorded with the value in study.toml
(`[runner]` table: `recency_rule`, `recency_run_date`, `recency_cutoff_source`).

`notices` lists what will leave a report empty or repeats uninformative: each configuration
published before the cutoff (outside the primary panel; its pairs are shown in the out-of-window
table), and repeats that a deterministic server will make identical (temperature 0, or one seed
for every repeat block).
"""

from __future__ import annotations

import argparse
import calendar
import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.evidence.schema import ARM, IDENTIFIER, MAX_TOKENS, charset_problem
from analysis.invocation import doc_command
from analysis.runner.secrets import api_key_env_problem

RECENCY_MONTHS = 6
RECENCY_RULE = "six months before the run date (the paper's publication-date rule: published on or after the cutoff)"
MAX_REPEATS = 10**6
MAX_CONCURRENCY = 4096


class PreflightError(ValueError):
    """An argument is unusable; the message says the fix."""


def months_before(day: dt.date, months: int) -> dt.date:
    """`day` minus `months` calendar months, the day clamped to the target month's length."""
    y, m = divmod(day.year * 12 + (day.month - 1) - months, 12)
    return dt.date(y, m + 1, min(day.day, calendar.monthrange(y, m + 1)[1]))


def default_cutoff(run_date: dt.date) -> dt.date:
    """The paper's rule applied to a run date: six months before it."""
    return months_before(run_date, RECENCY_MONTHS)


def parse_date(text: str, option: str) -> dt.date:
    """A YYYY-MM-DD date, or PreflightError naming the option."""
    try:
        return dt.date.fromisoformat(str(text).strip())
    except ValueError:
        raise PreflightError(f"{option} {text!r} is not a date; write YYYY-MM-DD") from None


def _number(args: argparse.Namespace, name: str, *, lo: float, hi: float = math.inf,
            lo_open: bool = False, hint: str = "") -> None:
    val = getattr(args, name, None)
    if val is None:
        return
    opt = "--" + name.replace("_", "-")
    finite = isinstance(val, int) or math.isfinite(val)  # an int of any size compares exactly (no float())
    bad = not finite or val > hi or (val <= lo if lo_open else val < lo)
    if bad:
        rng = f"> {_num(lo)}" if lo_open else f">= {_num(lo)}"
        if hi != math.inf:
            rng = f"<= {_num(hi)}" if lo == -math.inf else f"{rng} and <= {_num(hi)}"
        raise PreflightError(f"{opt} {_num(val)} is out of range; it must be {rng}{hint}")


def _num(x: float) -> str:
    """A number for a message: exact for an int (a bounded one: its bit length beyond 40 digits)."""
    if isinstance(x, int):
        return str(x) if abs(x) < 10**40 else f"(a {x.bit_length()}-bit integer)"
    return f"{x:g}"


def check_out_dir(out: str) -> Path:
    """--out must name a directory (existing or creatable), never a file or ''."""
    if not str(out).strip():
        raise PreflightError("--out is empty; name the sweep directory, e.g. --out runs/my-sweep")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise PreflightError(f"--out {out} is a file, not a directory; choose a directory for the ledger and "
                             "evidence, e.g. --out runs/my-sweep")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise PreflightError(f"--out {out}: {parent} is a file, so the directory cannot be created")
            break
    return path


def identifier_problem(value: str | None, option: str) -> str | None:
    """Why ``value`` of ``option`` is not an evidence identifier (the schema's one rule), or None."""
    if value is None or value == "":
        return None
    why = charset_problem(IDENTIFIER, value)
    return None if why is None else (f"{option}: {why}; the evidence format refuses other names "
                                     f"(see {doc_command('evidence_format')}, 'Identifiers')")


def check_names(args: argparse.Namespace) -> None:
    """Configuration, model, provider, quantization and execution-group names are evidence identifiers.

    They become study.toml keys and rows.csv cells (the configuration key is model@provider@quant),
    so a name the evidence format would refuse is refused here, before the first request.
    """
    names = [("--configuration", getattr(args, "configuration", None)),
             ("--model", getattr(args, "model", None)),
             ("--quantization", getattr(args, "quantization", None)),
             ("--execution-group", getattr(args, "execution_group", None))]
    names += [("--provider-order", p.strip()) for p in str(getattr(args, "provider_order", "") or "").split(",")]
    for option, value in names:
        problem = identifier_problem(value, option)
        if problem:
            raise PreflightError(problem)
    control, treatment = getattr(args, "control", None), getattr(args, "treatment", None)
    for option, arm in (("--control", control), ("--treatment", treatment)):
        if arm is not None and (why := charset_problem(ARM, arm)) is not None:
            raise PreflightError(f"{option}: {why}")
    if control is not None and control == treatment:
        raise PreflightError(f"--control and --treatment are both {control!r}; the primary contrast needs "
                             "two different arms")


def validate(args: argparse.Namespace) -> None:
    """Check every argument before anything runs (stores the loaded fixture as args.fixture_obj)."""
    # with --plan each configuration names its own key variable (checked by cli.load_plan_targets)
    problem = None if getattr(args, "plan", None) else api_key_env_problem(getattr(args, "api_key_env", None))
    if problem:
        raise PreflightError(problem)
    check_names(args)
    _number(args, "timeout", lo=0, lo_open=True, hint=" seconds (the total deadline of one request)")
    _number(args, "temperature", lo=0, hi=2)
    _number(args, "seed", lo=-(1 << 63), hi=(1 << 63) - 1,
            hint=" (a 64-bit integer: study.toml records it, and TOML holds no larger one)")
    _number(args, "context_length", lo=1, hi=MAX_TOKENS, hint=" tokens (study.toml's documented range)")
    for budget in ("fold_max_tokens", "recall_max_tokens"):  # below 1: cli.sweep says they must be positive
        _number(args, budget, lo=-math.inf, hi=MAX_TOKENS, hint=" tokens (study.toml's documented range)")
    _number(args, "max_declared", lo=1)
    if args.command == "probe":
        return
    _number(args, "repeats", lo=1, hi=MAX_REPEATS, hint="; a paired contrast needs at least 1 (4 or more advised)")
    _number(args, "concurrency", lo=1, hi=MAX_CONCURRENCY, hint=" (trajectories in flight at once)")
    _number(args, "max_attempts", lo=1, hi=1000)
    _number(args, "backoff", lo=0, hi=86400)
    _number(args, "backoff_cap", lo=0, hi=86400)
    _number(args, "n_threads", lo=1, hi=1024)
    check_out_dir(args.out)
    if args.recency_cutoff is not None:
        parse_date(args.recency_cutoff, "--recency-cutoff")
    if args.published is not None:
        parse_date(args.published, "--published")
    from analysis.runner.arm_order import DesignError, arm_order
    from analysis.runner.arms import ArmError, load_arms

    try:
        arms = load_arms()
    except ArmError as exc:
        raise PreflightError(str(exc)) from exc
    codes = [c.strip() for c in (args.arms or "").split(",") if c.strip()]
    unknown = [c for c in codes if c not in arms]
    if not codes or unknown:
        from analysis.runner.arms import arms_listing

        raise PreflightError(f"--arms {args.arms!r}: unknown or no arm codes {unknown}; the known arms:\n  "
                             + "\n  ".join(arms_listing(arms)))
    try:
        arm_order(codes, args.repeats, args.design)
    except DesignError as exc:
        raise PreflightError(str(exc)) from exc
    args.fixture_obj = load_fixture_checked(args.fixture)
    args.ladder_fixtures = None
    if getattr(args, "ladder", None):
        from analysis.runner.ladder import LadderError, parse_rungs, rung_fixture

        try:
            args.ladder_fixtures = tuple(rung_fixture(n) for n in parse_rungs(args.ladder))
        except LadderError as exc:
            raise PreflightError(str(exc)) from exc
        # the study's scenario (primary contrast, fact survival) is the deepest rung, the first of those with
        # the most folds: the one rung where a captured value can still be lost at a later fold (as S5, the
        # distributed scenario, is the paper's)
        args.fixture_obj = max(args.ladder_fixtures, key=lambda fx: len(fx.chunks))


def load_fixture_checked(name: str) -> Any:
    """The fixture named by --fixture, or PreflightError saying what is wrong with the file."""
    from analysis.runner.named_fixtures import FixtureArgError, load_fixture_arg

    try:
        return load_fixture_arg(name)
    except FixtureArgError as exc:
        raise PreflightError(str(exc)) from exc
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise PreflightError(f"--fixture {name}: not a fixture JSON file ({type(exc).__name__}: {str(exc)[:200]}); "
                             "pass small, default, small-s1, default-s1 or a file written by "
                             "analysis.runner.fixture") from exc


def run_date_of(records: Sequence[dict[str, Any]]) -> dt.date:
    """UTC date of the sweep's first session (today for a new sweep)."""
    for r in records:
        if r.get("kind") == "session" and isinstance(r.get("started"), str):
            try:
                return dt.datetime.fromisoformat(r["started"]).astimezone(dt.UTC).date()
            except ValueError:
                break
    return dt.datetime.now(dt.UTC).date()


def resolve_cutoff(given: str | None, run_date: dt.date) -> tuple[dt.date, dict[str, Any]]:
    """The study's recency cutoff and the record of how it was set (for study.toml's [runner])."""
    if given is not None:
        cutoff = parse_date(given, "--recency-cutoff")
        return cutoff, {"recency_rule": "given with --recency-cutoff", "recency_cutoff_source": "argument",
                        "recency_run_date": run_date}
    return default_cutoff(run_date), {"recency_rule": RECENCY_RULE, "recency_cutoff_source": "derived",
                                      "recency_run_date": run_date}


def notices(configurations: Sequence[tuple[str, dt.date]], cutoff: dt.date, rule: dict[str, Any], *,
            temperature: float, repeats: int, seed: int | None, seed_per_repeat: bool) -> list[str]:
    """Pre-run lines: configurations outside the window, repeats that will be copies."""
    out = []
    how = ("derived: six months before the run date " + str(rule["recency_run_date"])
           if rule["recency_cutoff_source"] == "derived" else "given with --recency-cutoff")
    for key, published in configurations:
        if published < cutoff:
            out.append(f"note: configuration {key} (published {published}) is outside the recency window "
                       f"(cutoff {cutoff}, {how}): the primary panel will not include it and its paired effect "
                       f"goes to the out-of-window table; to include it, pass --recency-cutoff {published} "
                       "(or earlier)")
    if repeats > 1 and temperature == 0:
        out.append(f"warning: temperature 0 with --repeats {repeats}: on a deterministic server (llama.cpp, "
                   "vLLM greedy decoding) every repeat is an exact copy of the first, so repeats carry no "
                   "information about run-to-run variation; pass e.g. --temperature 0.7 --seed-per-repeat")
    elif repeats > 1 and not seed_per_repeat and seed is not None:
        out.append(f"warning: every repeat sends the same seed {seed}: a server that honours seeds repeats the "
                   "same samples, so repeats will be identical; add --seed-per-repeat (one seed per repeat "
                   "block, shared by its arms)")
    return out
