"""SIGTERM during a sweep ends with one line and exit 143 (issue 31, item 12).

The handler used to raise KeyboardInterrupt wherever the main thread happened to be, often inside
an asyncio task: the task kept the exception ("Task exception was never retrieved") and the
ledger's writer thread then called into the closed loop ("Event loop is closed"), each with a
traceback.  Now the runner's own handler cancels the sweep's main task on the loop, the loop winds
down, and only then is the interrupt raised; later signals are ignored while stopping, and the
ledger never calls into a closed loop.  A background job (``... &``, nohup) starts with SIGINT
ignored, so the handler cannot lean on Ctrl-C's (asyncio installs none then).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.runner.named_fixtures import load_fixture_arg
from support.paths import REPO
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

INTERRUPTED = "interrupted; re-run the same command to resume from the ledger"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's `&` (or nohup's parent) leaves a job


def _sweep_and_terminate(tmp_path: Path, runs: int, *, sigint_ignored: bool, seed: int) -> None:
    model = MemorizingModel(load_fixture_arg("small"))
    rng = random.Random(seed)

    def responder(body: dict, index: int) -> Reply:
        time.sleep(0.005)
        return model(body, index)

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with ScriptedServer(responder, model="m") as srv:
        srv._httpd.handle_error = lambda *_a: None  # the runner hanging up mid-reply is expected
        for k in range(runs):
            out = tmp_path / f"o{k}"
            p = subprocess.Popen(
                [sys.executable, "-m", "analysis.runner", "sweep", "--base-url", srv.base_url, "--model", "m",
                 "--published", "2026-03-01", "--family", "test", "--arms", "j,q,m", "--repeats", "30",
                 "--recency-cutoff", "2026-01-01", "--out", str(out), "--no-probe", "--api-key-env", "",
                 "--concurrency", "16", "--quiet"],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                preexec_fn=_ignore_sigint if sigint_ignored else None)
            ledger = out / "ledger.jsonl"
            t0 = time.monotonic()
            while p.poll() is None and time.monotonic() - t0 < 60:
                if ledger.exists() and ledger.read_bytes().count(b'"kind":"attempt_start"') >= 8:
                    break  # inside the sweep, with trajectories in flight
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.5))
            p.send_signal(signal.SIGTERM)
            if k % 2:  # a second SIGTERM while the first is winding the sweep down
                time.sleep(rng.uniform(0.0, 0.05))
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            _, raw = p.communicate(timeout=60)
            err = raw.decode(errors="replace")
            assert p.returncode == 143, (k, p.returncode, err[-3000:])
            lines = [ln for ln in err.splitlines() if not ln.startswith(("warning:", "note:"))]
            assert lines == [INTERRUPTED], (k, err[-3000:])


@pytest.mark.slow
def test_sigterm_during_a_large_sweep_ends_with_one_line_and_exit_143(tmp_path: Path) -> None:
    _sweep_and_terminate(tmp_path, 5, sigint_ignored=False, seed=12)


@pytest.mark.slow
def test_sigterm_in_a_background_job_with_sigint_ignored_ends_with_one_line(tmp_path: Path) -> None:
    """A job started with ``&`` inherits SIGINT ignored: SIGTERM (also twice) still gives one line."""
    _sweep_and_terminate(tmp_path, 4, sigint_ignored=True, seed=31)


def test_a_signal_cancels_the_coroutine_and_raises_after_the_loop_closed() -> None:
    """In-process: with SIGINT ignored, SIGTERM cancels the running coroutine at its await, its
    cleanup runs inside the loop, a second SIGTERM is ignored, and Interrupted comes after."""
    from analysis.runner import interrupt

    steps: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(5)
            steps.append("not cancelled")
        except asyncio.CancelledError:
            steps.append("cancelled")
            os.kill(os.getpid(), signal.SIGTERM)  # a second one while winding down: ignored
            await asyncio.sleep(0.01)
            steps.append("wound down")
            raise

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.handling(), pytest.raises(interrupt.Interrupted) as info:
            interrupt.run(work())
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a background job keeps ignoring Ctrl-C
    finally:
        signal.signal(signal.SIGINT, previous)
    assert steps == ["cancelled", "wound down"]
    assert info.value.exit_code == 143


def test_a_signal_as_the_coroutine_returns_still_stops_after_the_loop_closed() -> None:
    from analysis.runner import interrupt

    async def work() -> str:
        os.kill(os.getpid(), signal.SIGTERM)  # handled before the return: the cancel finds the task done
        return "done"

    with interrupt.handling(), pytest.raises(interrupt.Interrupted) as info:
        interrupt.run(work())
    assert info.value.exit_code == 143
    with interrupt.handling():  # a fresh block: no stop pending, the coroutine's value comes back
        assert interrupt.run(_quiet()) == "quiet"


async def _quiet() -> str:
    return "quiet"
