"""Benchmark of one calibration replication of the committed small design (not a test).

One replication = one simulated sweep through the real runner (the simulated summariser served on
loopback in this process, 3 rungs x 2 arms x 6 repeats = 36 trajectories, 96 calls, ledger fsyncs
included) plus the real analysis of its package (verify, fact timeline, survival, dose–response).
Prints CPU seconds (process time: the server's threads are in this process) and wall seconds per
replication after one warm-up replication (imports), best and median of ``--runs``; exits 1 when
the median CPU time is above the issue's budget of 5 s (200 replications in a coffee break on 2 cores).

    python benchmarks/bench_calibrate.py [--truth docs/truth/clear-effect.toml] [--runs 5]

Recorded 2026-12-05 on the 2-core development machine shared with six other jobs, 5 runs after a warm-up:
CPU best 0.37 s, median 0.37 s; wall best 0.81 s, median 1.40 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from analysis.params import DEFAULT_PARAMS  # noqa: E402
from analysis.plan.calibrate import SMALL_DESIGN, run_replication  # noqa: E402

BUDGET_CPU_S = 5.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--truth", default=str(REPO / "docs" / "truth" / "clear-effect.toml"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    cpu, wall = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run_replication(args.truth, SMALL_DESIGN, 0, Path(tmp) / "w", DEFAULT_PARAMS)  # warm-up: imports
        for i in range(1, args.runs + 1):
            c0, w0 = time.process_time(), time.perf_counter()
            run_replication(args.truth, SMALL_DESIGN, i, Path(tmp) / "w", DEFAULT_PARAMS)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
    print(f"one replication of {SMALL_DESIGN}: CPU best {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s; "
          f"wall best {min(wall):.2f} s, median {statistics.median(wall):.2f} s ({args.runs} runs); "
          f"budget {BUDGET_CPU_S:g} s CPU")
    return 0 if statistics.median(cpu) <= BUDGET_CPU_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
