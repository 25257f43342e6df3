"""Benchmark: verify + load a synthetic package of 100,000 rows and 1.4 million checks.

Not a timed test. Run ``python benchmarks/bench_load.py [--rows N] [--threads T]``.
The package is written to a temporary directory; the load runs in a fresh child
process limited to ``T`` polars threads (default 2) so that its peak resident
memory, wall time and CPU time are its own. The peak is VmHWM of /proc/self/status: getrusage's
ru_maxrss survives exec, so in a child of this process (which holds the built package, about
3.7 GB at 1 M rows) it reported the builder's peak, not the loader's. On a shared
machine the wall time includes waiting for the CPU; the CPU time does not.
Targets: 100k rows < 2 s and < 1 GiB; 1 M rows (a 620 MB package) peak RSS <= 1.5 GB and
CPU time within 10x of the 100k figure (memory that scales with the data, issue 16).

Recorded 2026-12-03 (2 polars threads; a shared 2-core machine at load 4, so wall > CPU;
peak RSS as VmHWM of the loading process; CPU user+sys; wall):
- before (whole-file buffers, whole-file scan, whole-table hash tables):
  100k rows 599-606 MiB, 1.2-1.9 s CPU, 1.2-1.9 s wall; 1 M rows 3009 MiB, 18.9-20.1 s CPU,
  20.5-24.7 s wall.
- after (one verified buffer hashed while read, block-wise scan, batched parse that gives
  consumed pages back, narrow cross-file rules): 100k rows 335-343 MiB, 0.89-1.04 s CPU,
  1.3-1.5 s wall; 1 M rows 1321-1340 MiB, 7.9-8.7 s CPU (under 9x the 100k figure),
  10.6-12.7 s wall.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
CHECK_LABELS = ["ledger service port", "metrics relay port", "state file path", "shard count",
                "deployment uuid", "freeze start", "freeze end", "rollback deadline", "cache origin",
                "dns zone", "signing key id", "on-call handle", "release tag", "department"]
ARMS = ["f", "n", "j", "p", "q", "k", "o", "m", "t", "u", "l", "g"]


def build_package(root: Path, n_rows: int, seed: int = 7) -> None:
    """Write a valid synthetic package with ``n_rows`` rows and 14 checks each."""
    from analysis.evidence import write_lock
    from analysis.safeio import write_text

    rng = np.random.default_rng(seed)
    n_conf, repeats = 50, 4
    per_conf_group = len(ARMS) * repeats
    i = np.arange(n_rows)
    conf = (i // per_conf_group) % n_conf
    group = i // (per_conf_group * n_conf)
    repeat = (i // len(ARMS)) % repeats + 1
    arm = np.array(ARMS)[i % len(ARMS)]
    passed = rng.integers(0, 15, n_rows)
    rows = pl.DataFrame({
        "row_id": [f"r{k}" for k in range(n_rows)],
        "scenario": "S5",
        "configuration": [f"fam{c % 10}/model-{c}" for c in conf],
        "execution_group": [f"group-{g}" for g in group],
        "repeat": repeat, "arm": arm, "position": i % len(ARMS) + 1,
        "valid": "true", "invalid_reason": None, "checks_total": 14, "checks_passed": passed,
        "parse_failures": 0, "headings_carried": rng.integers(0, 6, n_rows),
        "carried_chars": rng.integers(500, 9000, n_rows), "declared_chars": 9600, "folds": 5,
        "folds_clipped": 0, "finish_stop": 5, "finish_length": 0,
        "prompt_tokens_est": rng.integers(10_000, 30_000, n_rows),
        "answer": ['the port is 41873, "quoted"\nand a second line' if k % 97 == 0 else "half"
                   for k in range(n_rows)],
    })
    write_text(root / "rows.csv", rows.write_csv())
    rid = np.repeat(rows.get_column("row_id").to_numpy(), 14)
    k = np.tile(np.arange(14), n_rows)
    checks = pl.DataFrame({
        "row_id": rid,
        "check": np.array(CHECK_LABELS)[k],
        "expected": np.array([f"value-{j}" for j in range(14)])[k],
        "passed": np.where(k < np.repeat(passed, 14), "true", "false"),
        "in_carrier": np.where(k % 3 == 0, "", np.where(k % 2 == 0, "true", "false")),
    })
    write_text(root / "checks.csv", checks.write_csv())
    confs = "\n".join(
        f'[configurations."fam{c % 10}/model-{c}"]\nfamily = "fam{c % 10}"\npublished = 2026-03-01\n'
        for c in range(n_conf))
    runs = "\n".join(
        f'[[partition_runs]]\nconfiguration = "fam{c % 10}/model-{c}"\nexecution_group = "group-0"\n'
        f"planned_repeats = {repeats}\n" for c in range(n_conf))
    write_text(
        root / "study.toml",
        '[study]\nname = "synthetic benchmark"\nrecency_cutoff = 2026-01-28\ncontrol = "j"\n'
        f'treatment = "q"\nscenario = "S5"\n\n{confs}\n{runs}')
    write_lock(root)


CHILD = """
import json, resource, sys, time
def peak_mib():  # this process's own peak: VmHWM restarts at exec, ru_maxrss keeps the parent's
    from analysis.safeio import read_text
    try:
        return next(int(l.split()[1]) for l in read_text("/proc/self/status").splitlines()
                    if l.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
from analysis.evidence import verify_package
t1 = time.perf_counter()
r0 = resource.getrusage(resource.RUSAGE_SELF)
s = verify_package(sys.argv[1])
t2 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"import_s": t1 - t0, "verify_load_s": t2 - t1, "cpu_s": cpu,
                  "rows": s.rows, "checks": s.checks,
                  "maxrss_mib": peak_mib()}))
"""


def main() -> int:
    """Build the package, time verify+load in a child process, print the numbers."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="rows (14 checks each); default 100000")
    ap.add_argument("--threads", type=int, default=2, help="POLARS_MAX_THREADS for the load")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs; the best is reported")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        build_package(root, args.rows)
        sizes = {p.name: p.stat().st_size for p in root.iterdir()}
        print(f"built synthetic package in {time.perf_counter() - t:.1f} s: "
              + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(sizes.items())))
        env = dict(os.environ, POLARS_MAX_THREADS=str(args.threads), PYTHONPATH=str(REPO))
        runs = []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, "-c", CHILD, str(root)], env=env, check=True,
                                 capture_output=True, text=True)
            runs.append(json.loads(out.stdout))
        best = min(runs, key=lambda r: r["verify_load_s"])
        print(f"rows {best['rows']}, checks {best['checks']}, threads {args.threads}")
        print("verify+load wall time: " + ", ".join(f"{r['verify_load_s']:.3f}" for r in runs)
              + f" s (best {best['verify_load_s']:.3f} s"
              + ("; target < 2 s)" if args.rows <= 100_000 else ")"))
        print("CPU time (user+sys) of verify+load: "
              + ", ".join(f"{r['cpu_s']:.3f}" for r in runs) + " s (independent of other load; "
              f"with {args.threads} threads the wall time on an idle machine is about this or less)")
        print(f"load average during the runs: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} CPUs (wall times above include waiting for the CPU)")
        target = "<= 1.5 GB (1430 MiB)" if args.rows >= 1_000_000 else "< 1024 MiB"
        print(f"peak RSS of the loading process (incl. interpreter and polars import): "
              f"{max(r['maxrss_mib'] for r in runs):.0f} MiB (target {target}); "
              f"import took {best['import_s']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
