"""Benchmark: fixture generation time and protocol overhead per fold.

Protocol overhead per fold is everything the fold step does except waiting for
the backend (building the prompt, estimating tokens, parsing, rendering,
clipping, recording), measured inside ``run_trajectory`` (``FoldRecord.overhead_s``).
Two backends, both zero-latency: an in-process scripted backend (no I/O at all)
and the scripted OpenAI-compatible HTTP server on loopback through the official
``openai`` client (its client/transport time is reported separately as wait).

Usage: ``python benchmarks/bench_protocol.py [--trajectories N] [--json OUT]``.
Targets (issue 6): 150k-token generation < 1 s; median overhead per fold < 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from analysis.runner.arms import load_arms  # noqa: E402
from analysis.runner.fixture import DEFAULT_SPECS, build_fixture  # noqa: E402
from analysis.runner.protocol import RunSettings, run_trajectory  # noqa: E402
from analysis.safeio import write_json  # noqa: E402
from support.scripted_server import InProcessBackend, MemorizingModel, OpenAIBackend, ScriptedServer  # noqa: E402


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _bench(backend_kind: str, fixture, arms, codes, repeats: int) -> dict:
    overheads, waits = [], []
    t0 = time.perf_counter()
    if backend_kind == "inprocess":
        backend = InProcessBackend(MemorizingModel(fixture))
        for _ in range(repeats):
            for code in codes:
                r = await run_trajectory(backend, fixture, arms[code], RunSettings(seed=1))
                overheads += [f.overhead_s for f in r.folds]
                waits += [f.wait_s for f in r.folds]
    else:
        with ScriptedServer(MemorizingModel(fixture)) as server:
            backend = OpenAIBackend(server.base_url)
            for _ in range(repeats):
                for code in codes:
                    r = await run_trajectory(backend, fixture, arms[code], RunSettings(seed=1))
                    overheads += [f.overhead_s for f in r.folds]
                    waits += [f.wait_s for f in r.folds]
            await backend.aclose()
    wall = time.perf_counter() - t0
    return {
        "backend": backend_kind,
        "fixture": fixture.spec.name,
        "folds": len(overheads),
        "overhead_ms_median": 1e3 * statistics.median(overheads),
        "overhead_ms_p95": 1e3 * _pct(overheads, 0.95),
        "wait_ms_median": 1e3 * statistics.median(waits),
        "wall_s": wall,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=2, help="repeats of the arm list per backend")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers as JSON here")
    args = ap.parse_args()

    gen = []
    for _ in range(5):
        t = time.perf_counter()
        big = build_fixture(DEFAULT_SPECS[0])
        gen.append(time.perf_counter() - t)
    small = build_fixture(DEFAULT_SPECS[2])
    out: dict = {
        "fixture_generation_s_median": statistics.median(gen),
        "fixture_generation_s_max": max(gen),
        "fixture_tokens_est": big.tokens_est,
        "runs": [],
    }
    arms = load_arms()
    codes = list("jqmkf")
    for fixture in (big, small):
        for kind in ("inprocess", "http"):
            out["runs"].append(asyncio.run(_bench(kind, fixture, arms, codes, args.trajectories)))

    print(f"fixture generation (150k tokens est {out['fixture_tokens_est']}): "
          f"median {out['fixture_generation_s_median'] * 1e3:.1f} ms, "
          f"max {out['fixture_generation_s_max'] * 1e3:.1f} ms"
          " (target < 1000 ms)")
    for r in out["runs"]:
        print(f"{r['backend']:>9} {r['fixture']:>8}: {r['folds']:4d} folds, protocol overhead per fold "
              f"median {r['overhead_ms_median']:.2f} ms, p95 {r['overhead_ms_p95']:.2f} ms (target < 5 ms); "
              f"backend wait median {r['wait_ms_median']:.2f} ms; wall {r['wall_s']:.2f} s")
    if args.json:
        write_json(args.json, out, sort_keys=False)
    ok = out["fixture_generation_s_max"] < 1.0 and all(r["overhead_ms_median"] < 5.0 for r in out["runs"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
