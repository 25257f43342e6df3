"""Benchmark of the fact timeline and survival estimators (not a test).

10,000 rows x 5 folds x 14 graded values by default (arms j/q/m, 1,000 configurations x
~3.3 repeat blocks), carriers of ~1,200 characters each holding a random subset of the row's
values with filler text, some folds clipped or unparsed. Prints the wall time of the timeline
(vectorised presence grading), of the survival estimators (Kaplan-Meier per arm, hazards,
cuts, paired q-j) and of both; the issue's budget is 3 s on 2 cores.

    python benchmarks/bench_survival.py [--rows 10000] [--folds 5] [--seed 7] [--runs 3]
    POLARS_MAX_THREADS=1 python benchmarks/bench_survival.py   # CPU time = single-core bound

Recorded 2026-12-02 on the 2-core development machine (load average ~2): timeline 0.96 s,
survival 0.14 s, total 1.10 s wall (1.10 s CPU, one polars thread); under load average ~9 from
other jobs the same run took 3.8 s wall for 1.29 s of CPU.

Issue 19 (first-loss counts, the row-cluster interval), 2026-12-03, one polars thread, the code
before and after run alternately 6 times each (best of 10 runs per process, CPU seconds, load
average 6-10 from other jobs): before total 1.040-1.439 (best 1.040; survival best 0.120), after
total 1.021-1.290 (best 1.021; survival best 0.122): no change beyond the noise.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from analysis.estimators.fact_timeline import fact_timeline
from analysis.estimators.survival import fact_survival
from analysis.params import DEFAULT_PARAMS

CUTOFF = datetime.date(2026, 1, 28)
VALUES = ["41432", "30116", "/var/opt/yarrow/amber-state/lumen.lock", "46 shards",
          "32955fb8-26ac-4ee5-939d-986451dbed65", "2026-06-15T00:42:53Z", "17:51 UTC", "2026-04-03 07:02 UTC",
          "https://umbra-origin.thistlecdn.net/amber", "basalt.cinder-ops.lan", "sigk_WV59LYCSVDXJ",
          "@elka.okafor93", "v11.47.364-hf8", "Управление платёжной отчётности"]
FILLER = ("the operator asked for a status update on the billing gateway; the relay was restarted and "
          "the shard rebalancer finished; nothing else changed in this window. ")


def synthetic(n_rows: int, n_folds: int, seed: int) -> SimpleNamespace:
    """Folds, facts, rows and study of a synthetic j/q/m run (carriers built per fold)."""
    rng = np.random.default_rng(seed)
    k = len(VALUES)
    arms = np.array(["j", "q", "m"])
    arm = arms[np.arange(n_rows) % 3]
    block = np.arange(n_rows) // 3
    conf = block % 1000
    repeat = block // 1000 + 1
    chunk = np.arange(k) % n_folds                                   # value i enters with chunk i mod folds
    keep_p = np.where(arm == "q", 0.9, np.where(arm == "j", 0.75, 0.85))
    # present[r, f, i]: captured at entry with keep_p, then kept fold by fold with keep_p
    entered = chunk[None, None, :] <= np.arange(n_folds)[None, :, None]
    draws = rng.random((n_rows, n_folds, k)) < keep_p[:, None, None]
    alive = np.cumprod(np.where(entered, draws, True), axis=1).astype(bool) & entered
    clipped = rng.random((n_rows, n_folds)) < 0.05
    parse_ok = np.where((arm == "m")[:, None], None, rng.random((n_rows, n_folds)) > 0.1)
    row_ids = np.char.add("r", np.arange(n_rows).astype(str))
    carriers = []
    for r in range(n_rows):
        for f in range(n_folds):
            held = [f"- {VALUES[i]}" for i in np.flatnonzero(alive[r, f])]
            carriers.append(f"summary of row {r} after fold {f}: " + FILLER * 6 + "\n".join(held))
    folds = pl.DataFrame({
        "row_id": np.repeat(row_ids, n_folds), "fold": np.tile(np.arange(n_folds), n_rows),
        "chunks": [[f] for f in np.tile(np.arange(n_folds), n_rows)], "carrier": carriers,
        "parse_ok": pl.Series(parse_ok.ravel().tolist(), dtype=pl.Boolean), "clipped": clipped.ravel(),
        "lost": np.zeros(n_rows * n_folds, dtype=bool),
    })
    facts = pl.DataFrame({
        "row_id": np.repeat(row_ids, k), "check": np.tile(np.char.add("fact-", np.arange(k).astype(str)), n_rows),
        "value": np.tile(np.array(VALUES, dtype=object), n_rows).tolist(),
        "value_class": np.tile(np.array(["c" + str(i % 5) for i in range(k)]), n_rows),
        "chunk": np.tile(chunk, n_rows), "case_sensitive": np.ones(n_rows * k, dtype=bool),
    })
    names = np.char.add("cfg-", conf.astype(str))
    rows = pl.DataFrame({
        "row_id": row_ids, "scenario": "S5", "configuration": names, "execution_group": names,
        "repeat": repeat.astype(np.int64), "arm": arm, "valid": np.ones(n_rows, dtype=bool),
        "checks_total": np.full(n_rows, k, dtype=np.int64), "checks_passed": np.zeros(n_rows, dtype=np.int64),
    })
    confs = sorted(set(names.tolist()))
    planned = int(repeat.max())
    study = SimpleNamespace(
        name="synthetic", recency_cutoff=CUTOFF, control="j", treatment="q", scenario="S5",
        configurations={c: SimpleNamespace(key=c, family="fam", published=CUTOFF) for c in confs},
        partition_runs=tuple(SimpleNamespace(configuration=c, execution_group=c, planned_repeats=planned)
                             for c in confs))
    return SimpleNamespace(folds=folds, facts=facts, rows=rows, study=study)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="repetitions (best is kept)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    data = synthetic(args.rows, args.folds, args.seed)
    print(f"rows {args.rows:,}  folds {data.folds.height:,}  values {data.facts.height:,}  "
          f"distinct carriers {data.folds.get_column('carrier').n_unique():,}  "
          f"(synthetic data built in {time.perf_counter() - t0:.1f} s)")
    best = {"timeline": float("inf"), "survival": float("inf"), "total": float("inf")}
    cpu = dict(best)
    for _ in range(args.runs):
        a, ca = time.perf_counter(), time.process_time()
        tl = fact_timeline(data.folds, data.facts)
        b, cb = time.perf_counter(), time.process_time()
        fact_survival(tl, data.rows, data.study, DEFAULT_PARAMS)
        c, cc = time.perf_counter(), time.process_time()
        for key, wall, used in (("timeline", b - a, cb - ca), ("survival", c - b, cc - cb), ("total", c - a, cc - ca)):
            best[key] = min(best[key], wall)
            cpu[key] = min(cpu[key], used)
    # CPU seconds of this process (all its threads): with POLARS_MAX_THREADS=1 an upper bound of the
    # wall time on an idle machine, whatever other processes share the cores
    for key, wall in best.items():
        print(f"{key:10s} wall {wall:7.3f} s   cpu {cpu[key]:7.3f} s")
    print("budget 3 s (wall):", "met" if best["total"] <= 3.0 else "NOT met")


if __name__ == "__main__":
    main()
