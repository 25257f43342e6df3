"""The runner speaks while it runs and when it ends (issue 22): a progress line per fold call with an
ETA on stderr, and a human summary on stdout (rows, valid, recall by arm, time, pace, the path)."""
from __future__ import annotations

import csv
import re
import time
from pathlib import Path
from typing import Any

import pytest

from analysis.runner.cli import main
from analysis.runner.named_fixtures import load_fixture_arg
from analysis.runner.sweep import Progress, Slot, duration
from support.scripted_server import MemorizingModel, Reply, ScriptedServer

CALL_S = 0.6
"""Each scripted call takes longer than the progress line's 0.5 s pacing, so every call shows."""


class SlowModel(MemorizingModel):
    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        time.sleep(CALL_S)
        return super().__call__(body, index)


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_sweep_prints_every_fold_with_an_eta_then_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fx = load_fixture_arg("small")
    out = tmp_path / "o"
    with ScriptedServer(SlowModel(fx, forget=[fx.graded[0].label or ""])) as srv:
        rc = main(["sweep", "--base-url", srv.base_url, "--model", "scripted/model-1", "--published", "2026-03-01",
                   "--family", "test", "--fixture", "small", "--arms", "j,q", "--repeats", "1", "--out", str(out),
                   "--api-key-env", "", "--no-probe", "--structured-mode", "json_schema", "--concurrency", "1"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    err = cap.err.splitlines()
    folds = len(fx.chunks)
    for arm in ("j", "q"):  # every fold of every trajectory, then its recall, each on its own line
        for k in range(1, folds + 1):
            assert any(f" {arm} fold {k}/{folds}  " in line for line in err), (arm, k, cap.err)
        assert any(f" {arm} recall  " in line for line in err), cap.err
    progress = [line for line in err if line.startswith("rows ")]
    assert all(re.search(r"  elapsed \S+  eta \S+$", line) for line in progress), progress
    # after the first call the ETA is a time: calls left x seconds per call so far (12 planned calls)
    first_fold = next(line for line in progress if " fold 1/" in line)
    assert "eta ?" not in first_fold
    assert progress[-1].startswith("rows 2/2  valid 2") and progress[-1].endswith("eta 0s")

    # the summary: computed here independently from the written rows.csv (csv module, sums by hand)
    with (out / "evidence" / "rows.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    recall = {arm: sum(int(r["checks_passed"]) for r in rows if r["arm"] == arm)
              / sum(int(r["checks_total"]) for r in rows if r["arm"] == arm) for arm in ("j", "q")}
    lines = cap.out.splitlines()
    assert lines[0] == "trajectories: 2 of 2 planned finished; rows: 2, valid 2"
    assert lines[1] == ("recall by arm (checks passed / graded, valid rows): "
                        f"j {recall['j']:.3f} (1 rows), q {recall['q']:.3f} (1 rows)")
    assert recall["j"] < 1  # the forgotten fact is missed: the numbers are not trivially 1
    pace = re.fullmatch(r"this session: 2 rows in (\S+) \((\d+\.\d) rows/min\), 0 attempts failed on infrastructure",
                        lines[2])
    assert pace is not None, lines[2]
    assert 2 * folds * CALL_S <= _seconds(pace.group(1)) < 120
    assert lines[3] == f"evidence package: {out / 'evidence'}"
    assert "{" not in cap.out  # no raw dict


def _seconds(text: str) -> float:
    m = re.fullmatch(r"(?:(\d+)m)?(\d+)s", text)
    assert m is not None, text
    return 60 * int(m.group(1) or 0) + int(m.group(2))


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (0.4, "0s"), (59, "59s"), (60, "1m00s"), (185, "3m05s"),
                                               (3599, "59m59s"), (3720, "1h02m")])
def test_duration_reads_as_people_write_it(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_eta_counts_calls_left_at_the_pace_so_far() -> None:
    """Hand derivation: 12 calls planned, 3 ended in 6 s -> 9 calls left x 2 s = 18 s."""
    bar = Progress(total=2, done=0, enabled=False, calls_left=12)
    assert bar.eta(6.0) == "?"  # nothing ended yet
    slot = Slot("S5", "cfg", "g", 1, "j", 1)
    for k in (1, 2, 3):
        bar.call_done(slot, "fold", k, 5)
    assert bar.eta(6.0) == "18s"
    assert bar.current == "cfg S5 r001 j fold 3/5"
    bar.done = 2
    assert bar.eta(6.0) == "0s"
