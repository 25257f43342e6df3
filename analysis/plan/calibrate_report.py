"""The calibration's outputs: coverage table (CSV and Markdown), coverage-against-nominal figure, report.

Every number is computed by analysis.plan.calibrate.summarise from the replications on disk; the
report names, in words, each interval whose coverage is below nominal beyond Monte Carlo error.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

from analysis.invocation import analysis_command, doc_command
from analysis.plan.calibrate import SMALL_DESIGN, CalibrationDesign, CalibrationError, say_progress, summarise
from analysis.safeio import write_bytes, write_text

BANNER = "**Simulated, planted truth.** Nothing here measures a model."
CSV_LABEL = "simulated, planted truth"
"""coverage.csv's first column, on every row: a row copied out of the file keeps its label."""
COLUMNS = ("estimand", "where", "interval", "replications", "truth", "mean_estimate", "bias", "bias_mcse", "rmse",
           "coverage", "coverage_mcse", "coverage_all", "coverage_all_mcse", "width", "not_estimable",
           "interval_not_estimable", "under_covers", "under_covers_all")


def _fmt(v: Any) -> str:
    if v is None:
        return "n/e"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def coverage_csv(rows: list[dict[str, Any]]) -> str:
    """The coverage table as CSV (empty cell: not estimable); column ``label`` says "simulated, planted truth"."""
    import csv

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("label", *COLUMNS))
    for r in rows:
        w.writerow([CSV_LABEL, *("" if r[c] is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c])
                                 for c in COLUMNS)])
    return buf.getvalue()


def _cov(r: dict[str, Any], key: str) -> str:
    if r[key] is None:
        return "n/e"
    text = f"{r[key]:.3f} ({r[key + '_mcse']:.3f})"
    return f"**{text} under**" if r["under_covers" + key.removeprefix("coverage")] else text


def coverage_markdown(rows: list[dict[str, Any]]) -> str:
    """The coverage table as Markdown: coverage where the interval was estimable, and over all replications."""
    head = ("| estimand | where | interval | n | planted | mean estimate | bias (MC SE) | RMSE | coverage (MC SE) "
            "| coverage, all replications (MC SE) | mean width | not estimable (estimate / interval) |")
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        bias = "n/e" if r["bias"] is None else f"{r['bias']:+.3f} ({_fmt(r['bias_mcse'])})"
        lines.append(f"| {r['estimand']} | {r['where'].replace('|', ' ')} | {r['interval']} | {r['replications']} "
                     f"| {r['truth']:.3f} | {_fmt(r['mean_estimate'])} | {bias} | {_fmt(r['rmse'])} "
                     f"| {_cov(r, 'coverage')} | {_cov(r, 'coverage_all')} "
                     f"| {_fmt(r['width'])} | {r['not_estimable']} / {r['interval_not_estimable']} |")
    return "\n".join(lines) + "\n"


def coverage_figure(rows: list[dict[str, Any]], title: str, nominal: float) -> bytes:
    """SVG: each interval's coverage (where estimable) with +/- 2 MC SE against the nominal line."""
    from matplotlib.figure import Figure

    shown = [r for r in rows if r["coverage"] is not None]
    fig = Figure(figsize=(8.5, 0.28 * max(len(shown), 4) + 1.4), layout="constrained")
    ax = fig.subplots()
    ys = list(range(len(shown)))[::-1]
    for y, r in zip(ys, shown, strict=True):
        color = "#b2182b" if r["under_covers"] else "#2166ac"
        ax.errorbar(r["coverage"], y, xerr=2 * (r["coverage_mcse"] or 0), fmt="o", color=color, ms=4, capsize=2)
    ax.axvline(nominal, color="black", lw=1, ls="--", label=f"nominal {nominal:g}", gid="nominal")
    ax.set_yticks(ys, [f"{r['estimand']} {r['where'].replace('|', ' ')} ({r['interval'].split(',')[0]})"
                       for r in shown], fontsize=7)
    ax.set_xlabel(f"coverage of the printed {nominal:.0%} interval where estimable (± 2 MC SE); red: under-covers")
    ax.set_xlim(max(0.0, min([r["coverage"] for r in shown] + [0.8]) - 0.05), 1.01)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="lower left", fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _missing(r: dict[str, Any]) -> str:
    n = r["interval_not_estimable"]
    return f"; not estimable in {n} replications" if n else ""


def report_markdown(rows: list[dict[str, Any]], truth: Any, design: CalibrationDesign, n: int, truth_name: str,
                    nominal: float) -> str:
    """The short report: banner, design, under-coverage in words, the table."""
    under = [r for r in rows if r["under_covers"] or r["under_covers_all"]]
    never = [r for r in rows if r["interval_not_estimable"] == r["replications"]]
    lines = [f"# Calibration of the v2 chain: {truth_name}", "", BANNER, "",
             f"{n} replications, each one sweep of the simulated summariser through the real runner "
             f"(rungs {', '.join(design.rungs)}; arms {', '.join(design.arms)}; {design.repeats} repeats; seed = "
             "replication number, one seed per repeat) and the real analysis. Planted truth: "
             f"`{truth_name}` (SHA-256 `{truth.sha256[:16]}…`): "
             + "; ".join(f"{c}: capture {a.capture:g}, keep {a.keep:g}, recall {a.recall:g}"
                         for c, a in truth.arms.items()) + ".", "",
             f"Coverage is the share of replications whose printed {nominal:.0%} interval holds the planted value, "
             "first over the replications where the interval was estimable, then over all replications (an "
             "interval that was not estimable counts as not covering); an interval under-covers when a share is "
             f"below {nominal:g} by more than two Monte Carlo SEs at the nominal. Bias is mean(estimate − planted) "
             "with its Monte Carlo SE.", ""]
    if under:
        lines.append("**Under-coverage.** " + " ".join(
            f"The {r['interval']} interval of {r['estimand']} ({r['where'].replace('|', ', ')}) covers "
            f"{_fmt(r['coverage'])} (MC SE {_fmt(r['coverage_mcse'])}) where estimable and "
            f"{_fmt(r['coverage_all'])} (MC SE {_fmt(r['coverage_all_mcse'])}) over all replications, mean width "
            f"{_fmt(r['width'])}{_missing(r)}." for r in under))
        lines.append("")
    else:
        lines += ["No printed interval under-covers beyond Monte Carlo error.", ""]
    if never:
        lines += ["Never estimable: " + ", ".join(f"{r['estimand']} ({r['where'].replace('|', ', ')})"
                                                  for r in never) + ".", ""]
    lines += ["![coverage against nominal](coverage.svg)", "", coverage_markdown(rows)]
    return "\n".join(lines)


def write_outputs(out: Path, reps: list[dict[str, Any]], truth: Any, design: CalibrationDesign, truth_name: str,
                  nominal: float) -> list[dict]:
    """coverage.csv, coverage.md, coverage.svg and REPORT.md in OUT; returns the summary rows."""
    rows = summarise(reps, nominal)
    write_text(out / "coverage.csv", coverage_csv(rows))
    write_text(out / "coverage.md", f"{BANNER}\n\n" + coverage_markdown(rows))
    write_bytes(out / "coverage.svg", coverage_figure(rows, f"simulated, planted truth: {truth_name}, "
                                                            f"{len(reps)} replications", nominal))
    write_text(out / "REPORT.md", report_markdown(rows, truth, design, len(reps), truth_name, nominal))
    return rows


def add_calibrate_parser(sub: Any) -> None:
    """``generate.py calibrate TRUTH --replications N --out DIR``."""
    p = sub.add_parser("calibrate", help="calibration study: N simulated sweeps against a planted truth; bias, "
                                         "RMSE and coverage of every printed 95%% interval",
                       description="Run N seeded sweeps of the simulated summariser (python -m analysis.runner "
                                   "simulate) through the runner and the analysis, and report bias, RMSE and the "
                                   "coverage of each printed 95%% interval against the planted truth "
                                   f"(see {doc_command('simulation')}). Resumable: re-run the same command.")
    p.add_argument("truth", help=f"truth TOML file (see {doc_command('simulation')}; examples: "
                                 f"{analysis_command()} docs truth/NAME --path)")
    p.add_argument("--replications", type=int, metavar="N", required=True, help="number of replications (e.g. 200)")
    p.add_argument("--out", dest="calibration_out", metavar="DIR", required=True,
                   help="output directory (resumable)")
    p.add_argument("--rungs", default=",".join(SMALL_DESIGN.rungs), help="ladder rungs of each sweep")
    p.add_argument("--arms", default=",".join(SMALL_DESIGN.arms), help="arms (control, treatment first)")
    p.add_argument("--repeats", type=int, default=SMALL_DESIGN.repeats, help="repeats per rung and arm")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Run (or resume) the calibration and write its outputs; exit 2 on a usage problem."""
    from analysis.evidence.truth import TruthError
    from analysis.params import DEFAULT_PARAMS
    from analysis.runner.simulate.command import load_checked_truth

    try:
        truth = load_checked_truth(args.truth)
        if args.repeats < 1:
            raise CalibrationError(f"--repeats {args.repeats}: give at least 1")
        design = CalibrationDesign(tuple(x for x in args.rungs.split(",") if x),
                                   tuple(x for x in args.arms.split(",") if x), args.repeats)
        from analysis.plan.calibrate import nominal_of, run_calibration

        out = Path(args.calibration_out)
        reps = run_calibration(args.truth, truth, design, args.replications, out, DEFAULT_PARAMS, progress=say_progress)
    except (TruthError, CalibrationError) as exc:
        say_progress(f"error: {exc}")
        return 2
    rows = write_outputs(out, reps, truth, design, Path(args.truth).name, nominal_of(DEFAULT_PARAMS))
    under = [r for r in rows if r["under_covers"] or r["under_covers_all"]]
    say_progress(f"{len(reps)} replications; {len(under)} of {sum(r['coverage'] is not None for r in rows)} intervals "
        f"under-cover; report: {out / 'REPORT.md'}")
    return 0
