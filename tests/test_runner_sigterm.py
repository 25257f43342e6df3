"""SIGTERM during a sweep ends with one line and exit 130 (issue 31, item 12).

The handler used to raise KeyboardInterrupt wherever the main thread happened to be, often inside
an asyncio task: the task kept the exception ("Task exception was never retrieved") and the
ledger's writer thread then called into the closed loop ("Event loop is closed"), each with a
traceback.  SIGTERM is now handled as Ctrl-C: asyncio cancels the sweep's main task and winds the
loop down, and the ledger never calls into a closed loop.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.runner.named_fixtures import load_fixture_arg
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

REPO = Path(__file__).resolve().parents[1]
INTERRUPTED = "interrupted; re-run the same command to resume from the ledger"


@pytest.mark.slow
def test_sigterm_during_a_large_sweep_ends_with_one_line_and_exit_130(tmp_path: Path) -> None:
    model = MemorizingModel(load_fixture_arg("small"))
    rng = random.Random(12)

    def responder(body: dict, index: int) -> Reply:
        time.sleep(0.005)
        return model(body, index)

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with ScriptedServer(responder, model="m") as srv:
        srv._httpd.handle_error = lambda *_a: None  # the runner hanging up mid-reply is expected
        for k in range(5):
            out = tmp_path / f"o{k}"
            p = subprocess.Popen(
                [sys.executable, "-m", "analysis.runner", "sweep", "--base-url", srv.base_url, "--model", "m",
                 "--published", "2026-03-01", "--family", "test", "--arms", "j,q,m", "--repeats", "30",
                 "--recency-cutoff", "2026-01-01", "--out", str(out), "--no-probe", "--api-key-env", "",
                 "--concurrency", "16", "--quiet"],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            ledger = out / "ledger.jsonl"
            t0 = time.monotonic()
            while p.poll() is None and time.monotonic() - t0 < 60:
                if ledger.exists() and ledger.read_bytes().count(b'"kind":"attempt_start"') >= 8:
                    break  # inside the sweep, with trajectories in flight
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.5))
            p.send_signal(signal.SIGTERM)
            _, raw = p.communicate(timeout=60)
            err = raw.decode(errors="replace")
            assert p.returncode in (130, 143), (k, p.returncode, err[-3000:])
            lines = [ln for ln in err.splitlines() if not ln.startswith(("warning:", "note:"))]
            assert lines == [INTERRUPTED], (k, err[-3000:])
