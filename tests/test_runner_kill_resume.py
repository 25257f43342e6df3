"""A sweep survives its own crash (issue 31): SIGKILL at random points, resume, same package.

Twenty seeds.  Each starts the CLI sweep as a subprocess against the scripted server (memorizing
model, 20 ms per call so kills land among the calls), SIGKILLs it at a random moment after its
session record is on disk, and, as a crash mid-write would, sometimes tears the ledger's last
record (its final newline cut, or a random byte count of it cut).  It resumes, killing again at
random, until a session finishes; seeds with a torn ledger (and every fifth) then resume once
more, which must run nothing and change no row.  The final package must hold the uninterrupted
run's rows (same ids, same outcomes) with no duplicate row_id; the only extra rows are invalid
`infrastructure` rows of the attempts the kills interrupted.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from analysis.evidence import load_package
from analysis.runner.named_fixtures import load_fixture_arg
from support.paths import REPO
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

SEEDS = range(20)
OUTCOME_COLS = ["row_id", "scenario", "configuration", "execution_group", "repeat", "arm", "position", "valid",
                "invalid_reason", "checks_total", "checks_passed", "parse_failures", "headings_carried",
                "carried_chars", "declared_chars", "folds", "folds_clipped", "finish_stop", "finish_length",
                "prompt_tokens_est", "answer"]


def _cmd(base_url: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "analysis.runner", "sweep", "--base-url", base_url, "--model", "m",
            "--published", "2026-03-01", "--family", "test", "--arms", "j,q", "--repeats", "3",
            "--recency-cutoff", "2026-01-01", "--out", str(out), "--no-probe", "--api-key-env", "",
            "--concurrency", "2", "--timeout", "5", "--backoff", "0.01", "--backoff-cap", "0.05", "--quiet"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _sessions(ledger: Path) -> int:
    return ledger.read_bytes().count(b'"kind":"session"') if ledger.exists() else 0


def _tear(ledger: Path, rng: random.Random) -> bool:
    """What a crash mid-write leaves, sometimes: the last record without its newline, or cut short."""
    raw = ledger.read_bytes() if ledger.exists() else b""
    if not raw.endswith(b"\n") or rng.random() < 0.4:
        return False
    start = raw.rstrip(b"\n").rfind(b"\n") + 1
    cut = len(raw) - 1 if rng.random() < 0.5 else rng.randrange(start + 1, len(raw))
    ledger.write_bytes(raw[:cut])
    return True


def _session(base_url: str, out: Path, rng: random.Random, kill: bool) -> tuple[int | None, str]:
    """One runner session; with `kill`, SIGKILL it at a random moment once its session record is written."""
    ledger = out / "ledger.jsonl"
    before = _sessions(ledger)
    p = subprocess.Popen(_cmd(base_url, out), env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if kill:
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < 60 and _sessions(ledger) <= before:
            time.sleep(0.01)
        try:
            _, err = p.communicate(timeout=rng.uniform(0.0, 0.9))
            return p.returncode, err.decode(errors="replace")
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.communicate()
            return None, ""
    _, err = p.communicate(timeout=120)
    return p.returncode, err.decode(errors="replace")


def _valid(pkg: Path) -> pl.DataFrame:
    return load_package(pkg).rows.filter(pl.col("valid")).select(OUTCOME_COLS).sort("row_id")


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    fixture = load_fixture_arg("small")
    model = MemorizingModel(fixture)

    def responder(body: dict, index: int) -> Reply:
        time.sleep(0.02)
        return model(body, index)

    kills = tears = 0
    with ScriptedServer(responder, model="m") as srv:
        srv._httpd.handle_error = lambda *_a: None  # a killed client's broken pipe is expected, not news
        clean = tmp_path / "clean"
        rc, err = _session(srv.base_url, clean, random.Random(0), kill=False)
        assert rc == 0, err[-2000:]
        expected = _valid(clean / "evidence")
        assert expected.height == 6 and expected["valid"].all()
        for seed in SEEDS:
            rng = random.Random(seed)
            out = tmp_path / f"s{seed:02d}"
            torn = False
            for attempt in range(12):
                rc, err = _session(srv.base_url, out, rng, kill=attempt == 0 or (attempt < 2 and rng.random() < 0.5))
                if rc is None:
                    kills += 1
                    if _tear(out / "ledger.jsonl", rng):
                        torn, tears = True, tears + 1
                    continue
                assert rc == 0 and "Traceback" not in err, f"seed {seed}: {err[-2000:]}"
                break
            else:
                pytest.fail(f"seed {seed}: no session finished")
            rows = load_package(out / "evidence").rows
            assert rows["row_id"].n_unique() == rows.height, f"seed {seed}: duplicate row_id"
            assert _valid(out / "evidence").equals(expected), f"seed {seed}: rows differ from the uninterrupted run"
            assert set(rows.filter(~pl.col("valid"))["invalid_reason"].to_list()) <= {"infrastructure"}
            if torn or seed % 5 == 0:  # resume is idempotent: once more runs nothing, changes no row
                before = (out / "evidence" / "rows.csv").read_bytes()
                rc, err = _session(srv.base_url, out, rng, kill=False)
                assert rc == 0 and "Traceback" not in err, f"seed {seed}: {err[-2000:]}"
                assert (out / "evidence" / "rows.csv").read_bytes() == before, f"seed {seed}"
    assert kills >= 15 and tears >= 5, (kills, tears)
    print(f"{kills} SIGKILLs, {tears} torn ledgers over {len(SEEDS)} seeds")
