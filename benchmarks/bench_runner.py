"""Runner throughput: folds per second against the zero-latency scripted server, and the embedded
model's seconds per fold.

    python benchmarks/bench_runner.py                      # concurrency 1, 8, 32 at zero latency
    python benchmarks/bench_runner.py --latency-ms 50      # same with 50 ms server latency per call

At zero latency the runner is CPU-bound already at concurrency 1 (one 2-core machine runs the
runner and the server), so concurrency cannot multiply throughput there; with a per-call latency
(every real endpoint has one) the 32 concurrent trajectories overlap their waits.
    python benchmarks/bench_runner.py --embedded           # + one real trajectory through SmolLM2
    python benchmarks/bench_runner.py --from-ledger OUT/ledger.jsonl   # s/fold of an earlier embedded run

The full runner path is measured: the real protocol (small fixture, arms j/q/m), the ledgered
backend (request and response records fsync'ed), the pin audit, and the official openai client
over loopback HTTP to runner-protocol's scripted server with its memorizing model.  Folds/s counts
fold calls (recall turns excluded) over wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from analysis.runner.arm_order import arm_order  # noqa: E402
from analysis.runner.arms import load_arms  # noqa: E402
from analysis.runner.client import EndpointClient, EndpointConfig  # noqa: E402
from analysis.runner.ledger import Ledger, read_records  # noqa: E402
from analysis.runner.named_fixtures import load_fixture_arg  # noqa: E402
from analysis.runner.pinning import Pin  # noqa: E402
from analysis.runner.protocol import RunSettings  # noqa: E402
from analysis.runner.sweep import SweepSpec, plan_slots, protocol_trajectory, run_sweep  # noqa: E402
from support.scripted_server import MemorizingModel, ScriptedServer  # noqa: E402


def _serve(port_q: mp.Queue[int], stop: mp.Event, latency_s: float) -> None:
    """Child process: the scripted server with its memorizing model (a server is its own process)."""
    fixture = load_fixture_arg("small")
    model = MemorizingModel(fixture)

    def responder(body: dict, index: int):  # type: ignore[no-untyped-def]
        if latency_s:
            time.sleep(latency_s)
        return model(body, index)

    with ScriptedServer(responder, model="scripted/model-1") as srv:
        port_q.put(int(srv.base_url.rsplit(":", 1)[1].split("/")[0]))
        stop.wait()


def folds_per_second(concurrency: int, repeats: int, latency_s: float) -> tuple[float, int, float]:
    fixture = load_fixture_arg("small")
    arms_all = load_arms()
    arms = {c: arms_all[c] for c in ("j", "q", "m")}
    port_q: mp.Queue[int] = mp.Queue()
    stop = mp.Event()
    child = mp.Process(target=_serve, args=(port_q, stop, latency_s), daemon=True)
    child.start()
    try:
        base_url = f"http://127.0.0.1:{port_q.get(timeout=60)}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            cfg = EndpointConfig(base_url=base_url, model="scripted/model-1", api_key_env=None)
            slots = plan_slots(arm_order(list(arms), repeats), scenario=fixture.spec.scenario,
                               configuration="bench", execution_group="bench")
            spec = SweepSpec(tuple(slots), {fixture.spec.scenario: 14},
                             {c: a.declared_chars for c, a in arms.items()}, concurrency=concurrency)
            settings = RunSettings(temperature=0.0, seed=0, response_format_style="json_schema")

            async def go() -> float:
                client = EndpointClient(cfg)
                with Ledger(Path(tmp) / "ledger.jsonl") as led:
                    t0 = time.perf_counter()
                    tally = await run_sweep(spec, led, client, Pin.from_config(cfg),
                                            protocol_trajectory(fixture, arms, settings), progress=False)
                    dt = time.perf_counter() - t0
                    folds = sum(1 for r in led.records if r.get("kind") == "response" and r.get("phase") == "fold")
                await client.aclose()
                if tally["valid"] != len(slots):
                    raise RuntimeError(f"benchmark sweep not all valid: {tally}")
                return dt, folds

            wall, folds = asyncio.run(go())
    finally:
        stop.set()
        child.join(timeout=10)
    return folds / wall, folds, wall


def embedded_seconds_per_fold(ledger: Path) -> dict:
    lat = [r["latency_s"] for r in read_records(ledger)
           if r.get("kind") == "response" and r.get("phase") == "fold" and r.get("latency_s") is not None]
    rec = [r["latency_s"] for r in read_records(ledger)
           if r.get("kind") == "response" and r.get("phase") == "recall" and r.get("latency_s") is not None]
    return {"folds": len(lat), "s_per_fold_median": round(statistics.median(lat), 2) if lat else None,
            "s_per_fold_mean": round(statistics.fmean(lat), 2) if lat else None,
            "s_per_recall_median": round(statistics.median(rec), 2) if rec else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="1,8,32", help="concurrency levels")
    ap.add_argument("--repeats", type=int, default=44,
                    help="repeats of arms j,q,m per level (x3 trajectories; default 44 = 132 trajectories, "
                         "enough that 32 workers are not dominated by the last wave)")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="server latency per call (default 0)")
    ap.add_argument("--embedded", action="store_true", help="also time one real SmolLM2 trajectory (arm m)")
    ap.add_argument("--from-ledger", default=None, help="report s/fold from an existing embedded ledger")
    args = ap.parse_args()
    results = {}
    for level in [int(x) for x in args.levels.split(",")]:
        fps, folds, wall = folds_per_second(level, args.repeats, args.latency_ms / 1000)  # same work per level
        results[level] = fps
        print(f"concurrency {level:>3}: {fps:8.1f} folds/s  ({folds} folds in {wall:.2f}s, "
              f"latency {args.latency_ms:g} ms)", flush=True)
    levels = sorted(results)
    if len(levels) > 1:
        print(f"speed-up {levels[-1]} vs {levels[0]}: {results[levels[-1]] / results[levels[0]]:.1f}x")
    if args.from_ledger:
        print("embedded (from ledger):", json.dumps(embedded_seconds_per_fold(Path(args.from_ledger))))
    if args.embedded:
        import subprocess

        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "analysis.runner", "embedded", "--arms", "m", "--repeats", "1",
                            "--out", tmp, "--quiet"], cwd=REPO, check=True)
            wall = time.perf_counter() - t0
            print("embedded (one trajectory, arm m):", json.dumps(
                {**embedded_seconds_per_fold(Path(tmp) / "ledger.jsonl"), "wall_s_incl_startup": round(wall, 1)}))


if __name__ == "__main__":
    main()
