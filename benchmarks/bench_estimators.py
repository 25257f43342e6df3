"""Benchmark of the core estimators on a synthetic panel 100x the paper's (not a test).

2,000 configurations x 12 repeats x 2 arms (plus ~5% invalid retries), 14 checks a
row (~670,000 check rows). Prints the wall time of each estimator and of their
sum; the issue's budget is 2 s for all of them together on 2 cores.

    python benchmarks/bench_estimators.py [--configurations 2000] [--repeats 12] [--seed 7] [--runs 3]
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

from analysis.estimators import bounds, cells, dependence, exact, families, paired
from analysis.estimators.common import Contrast
from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results

K = 14
CUTOFF = datetime.date(2026, 1, 28)


def synthetic(configurations: int, repeats: int, seed: int) -> SimpleNamespace:
    """Rows, checks and runs of a synthetic j/q panel, built without per-row Python loops."""
    rng = np.random.default_rng(seed)
    n = configurations * repeats * 2
    config = np.repeat(np.arange(configurations), repeats * 2)
    repeat = np.tile(np.repeat(np.arange(1, repeats + 1), 2), configurations)
    arm = np.tile(np.array(["j", "q"]), configurations * repeats)
    skill = rng.beta(0.6, 0.6, size=(configurations, 2))            # per configuration and arm
    p = skill[config, (arm == "q").astype(int)]
    row_level = rng.random(n) < p                                     # rows land near 0 or 1
    passed = np.where(row_level, rng.binomial(K, 0.95, n), rng.binomial(K, 0.05, n))
    valid = rng.random(n) > 0.05
    no_outcome = (~valid) & (rng.random(n) < 0.5)
    names = np.char.add("cfg-", np.arange(configurations).astype(str))
    rows = pl.DataFrame({
        "row_id": np.char.add("r", np.arange(n).astype(str)),
        "scenario": np.full(n, "S5"), "configuration": names[config],
        "execution_group": np.char.add("g", config.astype(str)), "repeat": repeat.astype(np.int64),
        "arm": arm, "valid": valid, "checks_total": np.full(n, K, dtype=np.int64),
        "checks_passed": passed.astype(np.int64),
        "carried_chars": rng.integers(500, 9600, n), "declared_chars": np.full(n, 9600),
        "folds": np.full(n, 5), "folds_clipped": rng.integers(0, 2, n),
        "parse_failures": rng.integers(0, 2, n), "finish_stop": np.full(n, 5),
        "finish_length": np.zeros(n, dtype=np.int64), "prompt_tokens_est": rng.integers(1e4, 2e4, n),
        "position": np.tile(np.array([1, 2]), configurations * repeats),
        "invalid_reason": np.where(valid, "", "infrastructure"),
        "headings_carried": np.where(arm == "q", 5, rng.integers(0, 6, n)),
        "answer": np.where(row_level, "recalled", "I don't know"),
    }).with_columns(checks_passed=pl.when(pl.Series(no_outcome)).then(None)
                    .otherwise(pl.col("checks_passed")),
                    invalid_reason=pl.col("invalid_reason").replace("", None))
    has = ~no_outcome
    row_ids = np.repeat(rows["row_id"].to_numpy()[has], K)
    check_pass = (np.arange(K)[None, :] < passed[has][:, None]).ravel()
    checks = pl.DataFrame({"row_id": row_ids,
                           "check": np.tile(np.char.add("fact-", np.arange(K).astype(str)), has.sum()),
                           "expected": np.full(row_ids.size, "41873"), "passed": check_pass,
                           "in_carrier": check_pass | (rng.random(row_ids.size) < 0.1)})
    published = np.where(rng.random(configurations) < 0.9, np.datetime64(CUTOFF, "D"),
                         np.datetime64(CUTOFF - datetime.timedelta(days=1), "D"))
    runs = pl.DataFrame({"configuration": names, "execution_group": np.char.add("g", np.arange(
        configurations).astype(str)), "planned_repeats": np.full(configurations, repeats),
        "family": np.char.add("fam-", (np.arange(configurations) % 200).astype(str)),
        "published": published}, schema_overrides={"published": pl.Date})
    study = SimpleNamespace(
        name="synthetic", recency_cutoff=CUTOFF, control="j", treatment="q", scenario="S5",
        configurations={r["configuration"]: SimpleNamespace(key=r["configuration"], family=r["family"],
                                                            published=r["published"])
                        for r in runs.iter_rows(named=True)},
        partition_runs=tuple(SimpleNamespace(configuration=r["configuration"],
                                             execution_group=r["execution_group"],
                                             planned_repeats=r["planned_repeats"])
                             for r in runs.iter_rows(named=True)))
    package = SimpleNamespace(root=Path("synthetic"), digests={}, study=study, rows=rows,
                              checks=checks)
    return SimpleNamespace(rows=rows, checks=checks, runs=runs, package=package)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configurations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="repetitions per estimator (best is kept)")
    args = ap.parse_args()
    data = synthetic(args.configurations, args.repeats, args.seed)
    print(f"rows {data.rows.height:,}  checks {data.checks.height:,}  "
          f"configurations {data.runs.height:,}")
    contrast, params = Contrast("j", "q", "S5"), DEFAULT_PARAMS
    timings: list[tuple[str, float, float]] = []

    def timed(label, fn):
        """Run `fn` args.runs times; keep the first (cold) and the best wall time."""
        walls = []
        for _ in range(args.runs):
            start = time.perf_counter()
            out = fn()
            walls.append(time.perf_counter() - start)
        timings.append((label, walls[0], min(walls)))
        return out

    p = timed("panel (effects + summary)", lambda: paired.panel(
        data.rows, data.runs, contrast, recency_cutoff=CUTOFF, params=params))
    timed("sensitivity subsets (K, equal, excluded)", lambda: (
        paired.min_pairs_subset(p, 4, params.alpha), paired.equal_counts_subset(p, params.alpha),
        paired.excluded_subset(p, ["cfg-0"], params.alpha)))
    timed("each configuration excluded", lambda: paired.each_excluded(p))
    timed("planned-repeat bounds", lambda: bounds.planned_repeat_bounds(data.rows, p))
    timed("family weighting", lambda: families.family_weighted(p.frame, params.alpha))
    timed("within-row ICC(1)", lambda: dependence.within_row_dependence(
        data.rows, data.checks, "S5"))
    timed("McNemar >= 0.5 and == 1.0", lambda: [exact.paired_mcnemar(
        data.rows, "j", "q", scenario="S5", threshold=t, runs=p.frame) for t in (0.5, 1.0)])
    timed("cell summaries", lambda: cells.cell_summary(data.rows, params))
    core = len(timings)
    timed("build_results end to end (incl. secondary keys)", lambda: build_results(data.package, params))
    from analysis.results.inputs import ResultsInputs
    from analysis.results.registry import entry

    def secondary_blocks() -> None:
        inputs = ResultsInputs(data.package, params)
        for key in ("fill", "headings_detail", "carrier_audit", "failure_modes", "beyond_paper"):
            entry(key).compute(inputs)

    timed("  of which: the secondary-analysis blocks alone", secondary_blocks)
    width = max(len(k) for k, _, _ in timings)
    print(f"  {'':<{width}}  {'first':>9}  {'best of ' + str(args.runs):>10}")
    for i, (label, first, best) in enumerate(timings):
        if i == core:
            print(f"  {'core estimators total':<{width}}  {sum(t[1] for t in timings[:core]) * 1000:7.1f} ms"
                  f"  {sum(t[2] for t in timings[:core]) * 1000:8.1f} ms   (budget 2000 ms)")
        print(f"  {label:<{width}}  {first * 1000:7.1f} ms  {best * 1000:8.1f} ms")
    print(f"panel: {p.summary.configurations} configurations, mean {p.summary.mean:+.4f}")


if __name__ == "__main__":
    main()
