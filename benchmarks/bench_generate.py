"""Benchmark `python generate.py`: cold full rebuild and no-op rebuild against the bare import.

Targets (issue 5): a full rebuild within 3x, and a no-op rebuild within 1.3x, the time of
`python -c "import polars, scipy.stats, statsmodels.api, matplotlib.pyplot, jinja2"`, all measured
in the same run on the same machine. Each measurement is a fresh interpreter (subprocess);
measurements are interleaved and repeated, and the median is reported.

    python benchmarks/bench_generate.py [--repeats 3] [--evidence DIR] [--json out.json]

A benchmark, not a timed test: it prints numbers and never fails on them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever else is installed

from analysis.safeio import write_json  # noqa: E402

BARE = "import polars, scipy.stats, statsmodels.api, matplotlib.pyplot, jinja2"


def run_checked(cmd: list[str], env: dict[str, str] | None = None) -> None:
    """Run ``cmd`` in the repository root (under ``env`` when given); a non-zero exit stops the benchmark with
    its stderr."""
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    run_checked(cmd)
    return time.perf_counter() - t0


def measure(repeats: int, evidence: str | None) -> dict[str, object]:
    """Median seconds of the bare import, the cold full rebuild and the no-op rebuild."""
    bare, full, noop = [], [], []
    gen = [sys.executable, "generate.py"] + (["--evidence", evidence] if evidence else [])
    for _ in range(repeats):
        bare.append(_timed([sys.executable, "-c", BARE]))
        out = Path(tempfile.mkdtemp(prefix="bench-generate-"))
        try:
            full.append(_timed([*gen, "--out", str(out)]))       # cold: empty OUT, no stamp
            noop.append(_timed([*gen, "--out", str(out)]))       # unchanged inputs
        finally:
            shutil.rmtree(out, ignore_errors=True)
    b, f, n = statistics.median(bare), statistics.median(full), statistics.median(noop)
    return {"repeats": repeats, "bare_import_s": b, "full_rebuild_s": f, "noop_rebuild_s": n,
            "full_ratio": f / b, "noop_ratio": n / b, "full_target": 3.0, "noop_target": 1.3,
            "samples": {"bare": bare, "full": full, "noop": noop}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repetitions (median reported)")
    ap.add_argument("--evidence", default=None, help="evidence package (default: generate.py's default)")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    r = measure(args.repeats, args.evidence)
    print(f"bare import     {r['bare_import_s']:7.2f} s")
    print(f"full rebuild    {r['full_rebuild_s']:7.2f} s   ratio {r['full_ratio']:.2f} (target <= 3.0)")
    print(f"no-op rebuild   {r['noop_rebuild_s']:7.2f} s   ratio {r['noop_ratio']:.2f} (target <= 1.3)")
    if args.json:
        write_json(args.json, r, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
