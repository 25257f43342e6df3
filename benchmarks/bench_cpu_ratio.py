"""Benchmark the CPU time of `python generate.py --force` against bare imports of its libraries.

Target (issue 21): the full rebuild of data/v1 takes at most 2.2x the CPU time of
`python -c "import polars, numpy, scipy.stats, statsmodels.api, matplotlib.pyplot, jinja2,
great_tables, lifelines, pypandoc"`. CPU time, not wall time, because the machine is shared: each
measurement is a fresh interpreter, and its user + system time (its own and its children's, Pandoc
included) is read with resource.getrusage(RUSAGE_CHILDREN) around it. The two commands alternate,
side by side in one run, and the median of each is reported with their ratio.

Bytecode: the libraries' modules are compiled once, when pip installs them; this package's are compiled by
the first run and cached, as Python does by default (and as pip does for an installed wheel). Where
PYTHONDONTWRITEBYTECODE is set (this project's sandbox sets it), every run would compile this package's
~130 modules again (about 0.2 s CPU) while the libraries' stay compiled. ``--bytecode cached`` (the default)
measures what a user gets: caching on, into a temporary PYTHONPYCACHEPREFIX (the checkout is left clean),
after one untimed run of each command. ``--bytecode as-is`` keeps the caller's environment.

    python benchmarks/bench_cpu_ratio.py [--repeats 5] [--evidence DIR] [--bytecode cached|as-is] [--json F]

A benchmark, not a timed test: it prints numbers and never fails on them.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench_generate import run_checked  # benchmarks/ is on sys.path when this script runs

from analysis.safeio import write_json

LIBRARIES = ("polars", "numpy", "scipy.stats", "statsmodels.api", "matplotlib.pyplot", "jinja2", "great_tables",
             "lifelines", "pypandoc")
BARE = "import " + ", ".join(LIBRARIES)
TARGET = 2.2


def cpu_seconds(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of ``cmd`` and its children (it must exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_checked(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeats: int, evidence: str | None, bytecode: str = "cached") -> dict[str, object]:
    """Median CPU seconds of the bare import and of the forced full rebuild, and their ratio."""
    bare, full = [], []
    gen = [sys.executable, "generate.py", "--force"] + (["--evidence", evidence] if evidence else [])
    out = Path(tempfile.mkdtemp(prefix="bench-cpu-"))
    env = None
    if bytecode == "cached":
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(out / "pycache")
    try:
        if env is not None:  # one untimed run of each: compile and cache, as a user's first run does
            run_checked([sys.executable, "-c", BARE], env)
            run_checked([*gen, "--out", str(out / "out")], env)
        for _ in range(repeats):
            bare.append(cpu_seconds([sys.executable, "-c", BARE], env))
            full.append(cpu_seconds([*gen, "--out", str(out / "out")], env))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    b, f = statistics.median(bare), statistics.median(full)
    return {"repeats": repeats, "bytecode": bytecode, "bare_import_cpu_s": b, "full_rebuild_cpu_s": f,
            "ratio": f / b, "target": TARGET, "libraries": list(LIBRARIES), "samples": {"bare": bare, "full": full}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="alternating repetitions (median reported)")
    ap.add_argument("--evidence", default=None, help="evidence package (default: generate.py's default)")
    ap.add_argument("--bytecode", choices=("cached", "as-is"), default="cached",
                    help="cached: this package's modules compiled once and cached, like the libraries' (default); "
                         "as-is: the caller's environment (PYTHONDONTWRITEBYTECODE recompiles them every run)")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    r = measure(args.repeats, args.evidence, args.bytecode)
    print(f"bare import   {r['bare_import_cpu_s']:6.2f} s CPU  (median of {args.repeats}; bytecode {args.bytecode})")
    print(f"full rebuild  {r['full_rebuild_cpu_s']:6.2f} s CPU  ratio {r['ratio']:.2f} (target <= {TARGET})")
    if args.json:
        write_json(args.json, r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
