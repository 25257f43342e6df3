"""`python generate.py plan ...`: design a v2 study from evidence, or seal a preregistration.

    python generate.py plan --evidence data/v1 --out plans/v2 [--configurations 10,20,40,80]
        [--repeats 2,4,8,16] [--effect 0,0.05,0.1,0.15] [--alpha 0.05] [--sims 2000] [--seed N]
        [--price-table prices.toml] [--fixture default] [--cost-ratio 10]
    python generate.py plan seal PLAN_DIR       # reads PLAN_DIR/plan.toml, writes PLAN_DIR/plan.lock
    python generate.py plan check PLAN_DIR      # is the seal intact? (exit 1 if not)
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.escape import emit
from analysis.invocation import analysis_command, doc_command
from analysis.plan.summary import summary_lines

__all__ = ["add_plan_parser", "run_plan", "summary_lines"]

PLAN_EPILOG = """\
design (no subcommand): fits tau2 and sigma2_within to the evidence's primary panel, simulates
every (K, R, effect) cell with the package's own estimator, and writes OUT/design.json,
OUT/design_power.{{csv,md,png,svg}}. A later `{cmd} --evidence DIR --out OUT` with the
same OUT adds a 'Designing v2' section to the report (OUT/design.json present).
seal/check: see {prereg}."""


def _ints(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("give at least one value")
    return out


def _floats(text: str) -> tuple[float, ...]:
    try:
        out = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not out or not all(math.isfinite(x) for x in out):
        raise argparse.ArgumentTypeError("give at least one finite value")
    return out


SEED_MAX = (1 << 63) - 1
"""Largest --seed: what numpy's generator and TOML's 64-bit integers both hold."""
K_RANGE = (2, 10_000)
"""--configurations: a between-configuration variance needs 2; the simulation holds K x R draws."""
R_RANGE = (1, 10_000)
"""--repeats: paired repeats per configuration."""
SIMS_RANGE = (1, 10_000_000)
"""--sims as typed (then capped at PlanParams.sims_max)."""
COST_RATIO_RANGE = (1e-6, 1e6)
"""--cost-ratio: a finite, positive ratio; R* grows with its square root, so 1e6 already means R* ~ 1000x."""


def _bounded_ints(lo: int, hi: int, what: str) -> Callable[[str], tuple[int, ...]]:
    def parse(text: str) -> tuple[int, ...]:
        out = _ints(text)
        bad = [x for x in out if not lo <= x <= hi]
        if bad:
            raise argparse.ArgumentTypeError(f"{what} must lie from {lo} to {hi}; got {', '.join(map(str, bad))}")
        return out
    return parse


def _int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{what} must lie from {lo} to {hi}, got {text}")
        return value
    return parse


def _float_in(lo: float, hi: float, what: str, *, open_lo: bool = False,
              open_hi: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        ok = math.isfinite(value) and (lo < value if open_lo else lo <= value) and \
            (value < hi if open_hi else value <= hi)
        if not ok:
            raise argparse.ArgumentTypeError(
                f"{what} must be a finite number {'above' if open_lo else 'from'} {lo:g} "
                f"{'and below' if open_hi else 'to'} {hi:g}, got {text}")
        return value
    return parse


def add_plan_parser(sub: Any, default_evidence: Callable[[], Path]) -> None:
    """Register the `plan` subcommand (and its `seal`/`check` subcommands) on generate.py.

    ``default_evidence`` gives the package fitted when --evidence is not typed (the command line
    passes its shipped evidence: this module sits below it and does not import it).
    """
    p = sub.add_parser("plan", help="design a v2 study (power, precision, cost) or seal a preregistration",
                       description=__doc__,
                       epilog=PLAN_EPILOG.format(cmd=analysis_command(), prereg=doc_command("preregistration")),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--evidence", dest="plan_evidence", metavar="DIR", type=Path, default=None,
                   help="evidence package whose panel is fitted (default: the shipped evidence)")
    p.add_argument("--out", dest="plan_out", metavar="OUT", type=Path, default=None,
                   help="directory for design.json, the table and the figure (required for a design)")
    p.add_argument("--configurations", type=_bounded_ints(*K_RANGE, "--configurations"), default=None,
                   help=f"K values, e.g. 10,20,40,80 (each {K_RANGE[0]} to {K_RANGE[1]})")
    p.add_argument("--repeats", type=_bounded_ints(*R_RANGE, "--repeats"), default=None,
                   help=f"R values (paired repeats), e.g. 2,4,8,16 (each {R_RANGE[0]} to {R_RANGE[1]})")
    p.add_argument("--effect", type=_floats, default=None, help="true mean effects, e.g. 0,0.05,0.1,0.15")
    p.add_argument("--alpha", type=_float_in(0, 1, "--alpha", open_lo=True, open_hi=True), default=None,
                   help="two-sided level (default 0.05; strictly between 0 and 1)")
    p.add_argument("--sims", type=_int_in(*SIMS_RANGE, "--sims"), default=None,
                   help="simulated studies per cell (default 2000; capped at PlanParams.sims_max = 20000)")
    p.add_argument("--seed", type=_int_in(0, SEED_MAX, "--seed"), default=None,
                   help="seed of the simulation generator (0 to 2^63-1)")
    p.add_argument("--price-table", type=Path, default=None, metavar="FILE",
                   help="TOML ([[endpoint]] tables) or CSV (header endpoint,input_per_million,output_per_million"
                        "[,prompt_tokens_per_second,output_tokens_per_second]) of the price per million tokens; "
                        "a TOML table: name, input_per_million, output_per_million and optionally the two speeds")
    p.add_argument("--fixture", default="default",
                   help="v2 fixture whose rows are priced: small | default | path (default: default = s5-150k)")
    p.add_argument("--cost-ratio", type=_float_in(*COST_RATIO_RANGE, "--cost-ratio"), default=None,
                   help="without --price-table: cost of adding one configuration / cost of one paired repeat "
                        f"(default 10; {COST_RATIO_RANGE[0]:g} to {COST_RATIO_RANGE[1]:g})")
    p.add_argument("--config-cost", type=float, default=None, metavar="MONEY",
                   help="with --price-table: money of adding one configuration (default 0: the table prices tokens)")
    ps = p.add_subparsers(dest="plan_command", metavar="{seal,check}")
    seal = ps.add_parser("seal", help="seal PLAN_DIR/plan.toml into PLAN_DIR/plan.lock and print its digest")
    seal.add_argument("plan_dir", metavar="PLAN_DIR", type=Path)
    check = ps.add_parser("check", help="check that PLAN_DIR/plan.lock still matches its plan, fixture, arms, params")
    check.add_argument("plan_dir", metavar="PLAN_DIR", type=Path)
    p.set_defaults(func=run_plan, default_evidence=default_evidence)


def _say(text: str) -> None:
    emit(text, sys.stderr)


def _out(text: str, *, one_line: bool = False) -> None:
    """A line on stdout: control characters visible, and whatever the stream's encoding cannot
    carry (PYTHONIOENCODING=ascii and "±") escaped, never an exception."""
    emit(text, sys.stdout, one_line=one_line)


def run_plan(args: argparse.Namespace) -> int:
    """Dispatch `plan`; named user errors become `error: ...` and exit status 1."""
    from analysis.params import ParamsError
    from analysis.plan.cost import PriceTableError
    from analysis.runner.prereg import PlanError

    try:
        if args.plan_command == "seal":
            return _seal(args)
        if args.plan_command == "check":
            return _check(args)
        return _design(args)
    except (PlanError, PriceTableError, ParamsError) as exc:
        _say(f"error: {exc}")
        return 1


def _seal(args: argparse.Namespace) -> int:
    from analysis.runner.prereg import seal_plan

    lock = seal_plan(args.plan_dir)
    _out(f"sealed {args.plan_dir / 'plan.lock'} at {lock['sealed_at']}", one_line=True)
    _out(f"plan digest: {lock['plan_digest']}")
    _out("publish this digest elsewhere (a public commit, a registry entry) before the first run: "
          "the local lock alone proves only that the plan did not change after sealing on this machine")
    return 0


def _check(args: argparse.Namespace) -> int:
    from analysis.runner.prereg import check_plan

    status = check_plan(args.plan_dir)
    for line in status.lines():
        _out(line, one_line=True)
    return 0 if status.intact else 1


def _design(args: argparse.Namespace) -> int:
    from analysis.evidence import load_package
    from analysis.params import DEFAULT_PLAN_PARAMS
    from analysis.plan.cost import load_price_table
    from analysis.plan.run import make_design, write_plan

    if args.plan_out is None:
        _say("error: plan needs --out OUT (the directory for design.json)")
        return 2
    plan = DEFAULT_PLAN_PARAMS
    changes: dict[str, Any] = {}
    for opt, fld in (("configurations", "configurations"), ("repeats", "repeats"), ("effect", "effects"),
                     ("alpha", "alpha"), ("seed", "seed")):
        if getattr(args, opt) is not None:
            changes[fld] = getattr(args, opt)
    if args.sims is not None:
        if args.sims > plan.sims_max:
            _say(f"--sims {args.sims} is above the bound {plan.sims_max}; capped at {plan.sims_max} "
                 "(the Monte Carlo error at 20000 is at most 0.0035)")
        changes["sims"] = min(args.sims, plan.sims_max)
    plan = plan.replace(**changes)
    evidence = args.plan_evidence or args.default_evidence()
    pkg = load_package(evidence)
    prices = load_price_table(args.price_table) if args.price_table else None
    fixture = None
    if prices:
        from analysis.runner.named_fixtures import FixtureArgError, load_fixture_arg

        try:
            fixture = load_fixture_arg(args.fixture)
        except FixtureArgError as exc:
            from analysis.runner.prereg import PlanError
            raise PlanError(str(exc)) from None
    _say(f"plan: fitting variance components to {evidence} and simulating "
         f"{len(plan.configurations) * len(plan.repeats) * len(plan.effects)} cells x {plan.sims} studies x 2 variants")
    if args.config_cost is not None and not (math.isfinite(args.config_cost) and args.config_cost >= 0):
        print(f"error: --config-cost {args.config_cost!r} must be a finite amount >= 0 (money per configuration)",
              file=sys.stderr)
        return 2
    if args.config_cost is not None and not prices:
        print("error: --config-cost is money in the price table's currency; give --price-table FILE too "
              "(without one, use --cost-ratio)", file=sys.stderr)
        return 2
    if args.cost_ratio is not None and prices:
        print("error: with --price-table the cost is money; set the cost of a configuration with --config-cost "
              "MONEY instead of --cost-ratio", file=sys.stderr)
        return 2
    design = make_design(pkg, plan, prices=prices, fixture=fixture, cost_ratio=args.cost_ratio,
                         config_cost=args.config_cost, progress=_say)
    from analysis.evidence.describe import evidence_kind

    ev = {"path": str(evidence), "kind": evidence_kind(pkg), "sha256": dict(pkg.digests)}
    if ev["kind"] == "v1":
        _say("plan: data/v1 is a reconstruction fitted to the paper's published numbers; its components "
             "describe that reconstruction, not the released v1 package")
    lines = summary_lines(design)
    if ev["kind"] == "simulation":  # issue 35: a plan fitted to a planted truth says so at its top
        lines = ["simulated, planted truth: the variance components are fitted to a simulated package "
                 "(docs/SIMULATION.md), not to a model's runs", *lines]
        _say(lines[0])
    paths = write_plan(design, args.plan_out, ev, lines)
    for line in lines:
        _out(line)
    _out(f"wrote {', '.join(str(p) for p in paths)}", one_line=True)
    return 0


