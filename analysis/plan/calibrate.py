"""Calibration study of the v2 chain against a planted truth: bias, RMSE and interval coverage.

Methods note (ours; Morris, White & Crowther 2019, "Using simulation studies to evaluate
statistical methods", Stat Med 38:2074). Replication ``i`` (1..N) is one sweep of the simulated
summariser (``python -m analysis.runner simulate TRUTH``, the real runner, seed ``i``, one seed
per repeat) on the design's rungs, arms and repeats, then the real analysis of its package
(analysis.evidence.load_package, analysis.estimators.survival_results.package_survival,
analysis.estimators.dose_response.package_dose_response). Each estimate the report prints with a
95% interval is compared with its closed-form planted value (analysis.evidence.truth):

* ``recall`` per (rung, arm): mean exact recall, Wilson interval at n_eff = rows;
* ``effect`` per rung: the paired effect treatment - control, t interval over pair differences;
* ``S(t)`` per (arm, t >= 1) on the study's scenario: Kaplan–Meier survival with the row-cluster
  interval (``rows``) and, for comparison, lifelines' values-independent interval (``values``).

Per estimand over the replications where it was estimable: bias = mean(estimate - truth) with
its Monte Carlo SE sd/sqrt(n); RMSE; coverage = share of intervals holding the truth, with MC
SE sqrt(p(1 - p)/n); over every replication, the unconditional coverage (an interval that was not
estimable, or an estimand a replication lacks, counts as not covering); and how often the estimate
or its interval was not estimable. An interval under-covers when a coverage is below the nominal
1 - alpha (0.95) by more than two MC SEs at the nominal (2 * sqrt(0.95 * 0.05 / n)). Each
replication's numbers are written to ``OUT/replications/NNNN.json`` before the next starts and
its sweep directory is removed, so an interrupted study keeps every finished replication and a
re-run resumes after the last one.
"""

from __future__ import annotations

import math
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.evidence.truth import Truth
from analysis.params import Params
from analysis.safeio import SafeIOError, read_json, write_json

MANIFEST = "calibration.json"
REP_DIR = "replications"


class CalibrationError(RuntimeError):
    """A calibration that cannot run as asked; the message says the fix."""


@dataclass(frozen=True, slots=True)
class CalibrationDesign:
    """What one replication sweeps."""

    rungs: tuple[str, ...]
    """Ladder rungs (``--ladder``)."""
    arms: tuple[str, ...]
    """Arms; the first two are control and treatment."""
    repeats: int
    """Repeats per rung and arm."""

    def to_json(self) -> dict[str, Any]:
        """The design as JSON."""
        return {"rungs": list(self.rungs), "arms": list(self.arms), "repeats": self.repeats}


SMALL_DESIGN = CalibrationDesign(("g1-d0-c100-f1", "g1-d0-c300-f1", "g1-d0-c100-f3"), ("j", "q"), 6)
"""The committed calibration's design: three easy rungs (one, one and three folds), j and q, 6 repeats."""


def nominal_of(params: Params) -> float:
    """The intervals' nominal coverage, ``1 - params.alpha`` (0.95 by default)."""
    return 1.0 - params.alpha


def check_design(design: CalibrationDesign, truth: Truth) -> None:
    """Refuse, before OUT is touched, rungs or arms the runner would refuse or the truth does not plant."""
    from analysis.runner.arms import load_arms
    from analysis.runner.ladder import LadderError, parse_rungs

    try:
        parse_rungs(",".join(design.rungs))
    except LadderError as exc:
        raise CalibrationError(f"--rungs: {str(exc).replace('--ladder', '--rungs')}") from None
    known = tuple(load_arms())
    if len(design.arms) < 2:
        raise CalibrationError(f"--arms {','.join(design.arms)}: give control and treatment, e.g. j,q")
    if len(set(design.arms)) != len(design.arms):
        raise CalibrationError(f"--arms {','.join(design.arms)}: names an arm twice; name each once")
    for arm in design.arms:
        if arm not in known:
            raise CalibrationError(f"--arms: unknown arm {arm[:40]!r}; known arms: {', '.join(known)}")
        if arm not in truth.arms:
            raise CalibrationError(f"--arms: the truth file plants no [arms.{arm}] table; add it or drop {arm!r}")
    if design.repeats < 1:
        raise CalibrationError(f"--repeats {design.repeats}: give at least 1")


def calibration_code_digest() -> str:
    """SHA-256 of the code a replication runs (the runner, the analysis): results.json's provenance.code_sha256."""
    from analysis.sources import source_digest

    return source_digest("results")


def run_replication(truth_path: str, design: CalibrationDesign, seed: int, work: Path, params: Params,
                    truth_sha256: str | None = None) -> dict[str, Any]:
    """One seeded sweep through the runner and the analysis: every estimate with its interval and truth.

    ``truth_sha256``: the digest the sweep's package must record (CalibrationError otherwise: the truth
    file changed on disk during the study)."""
    from analysis.runner.cli import main as runner_main

    if work.exists():
        shutil.rmtree(work)
    argv = ["simulate", truth_path, "--ladder", ",".join(design.rungs), "--arms", ",".join(design.arms),
            "--repeats", str(design.repeats), "--seed", str(seed), "--control", design.arms[0],
            "--treatment", design.arms[1], "--concurrency", "4", "--no-probe", "--structured-mode",
            "json_schema", "--recency-cutoff", "2024-01-01", "--published", "2024-01-01", "--out", str(work),
            "--quiet"]
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        rc = runner_main(argv)
    if rc in (130, 143):  # the runner exits 130 on Ctrl-C and 143 on SIGTERM, as generate.py does
        from analysis.outdir import BuildInterrupted

        raise BuildInterrupted(signal.SIGTERM) if rc == 143 else KeyboardInterrupt
    if rc != 0:
        last = next((x for x in reversed(err.getvalue().splitlines()) if x.strip()), "no message")
        raise CalibrationError(f"replication {seed}: the simulated sweep failed (exit {rc}): {last[:500]}")
    try:
        return estimates(work / "evidence", params, truth_sha256)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _num(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def estimates(evidence: Path, params: Params, truth_sha256: str | None = None) -> dict[str, Any]:
    """Estimates, intervals and planted values of one simulated package (key -> record)."""
    from analysis.estimators.dose_response import package_dose_response
    from analysis.estimators.survival_results import package_survival
    from analysis.evidence import load_package

    pkg = load_package(evidence)
    truth: Truth | None = pkg.study.simulation
    if truth is None or (truth_sha256 is not None and truth.sha256 != truth_sha256):
        have = "none" if truth is None else truth.sha256[:12] + "..."
        raise CalibrationError(f"{evidence}: the sweep's package plants truth {have}, not the study's "
                               f"{(truth_sha256 or '')[:12]}...; was the truth file edited during the study? "
                               "restore it, or start a new --out")
    surv = package_survival(pkg, params)
    dose = package_dose_response(pkg, params, surv)
    out: dict[str, Any] = {}
    rungs = {r.name: r for r in pkg.study.ladder}
    if dose is not None:
        for rec in dose.arms.iter_rows(named=True):
            r = rungs[rec["rung"]]
            planted = truth.recall(rec["arm"], r.graded_per_chunk, r.chunk_tokens, r.distractors, r.folds)
            out[f"recall|{rec['rung']}|{rec['arm']}"] = {
                "estimand": "recall", "interval": "Wilson (n_eff = rows)", "truth": planted,
                "estimate": _num(rec["recall"]), "lo": _num(rec["lo"]), "hi": _num(rec["hi"])}
        c, t = pkg.study.control, pkg.study.treatment
        for rec in dose.paired.iter_rows(named=True):
            r = rungs[rec["rung"]]
            f = (r.graded_per_chunk, r.chunk_tokens, r.distractors, r.folds)
            out[f"effect|{rec['rung']}|{t}-{c}"] = {
                "estimand": "paired effect", "interval": "t over pair differences",
                "truth": truth.recall(t, *f) - truth.recall(c, *f),
                "estimate": _num(rec["effect"]), "lo": _num(rec["lo"]), "hi": _num(rec["hi"])}
    folds = max((r.folds for r in pkg.study.ladder if r.scenario == pkg.study.scenario), default=1)
    km = surv.survival.km if surv.survival is not None else None
    for arm in (pkg.study.control, pkg.study.treatment):
        for t_ in range(1, folds):
            row = None if km is None else next(
                (x for x in km.iter_rows(named=True) if x["arm"] == arm and x["folds_since_entry"] == t_), None)
            for unit in ("rows", "values"):
                out[f"S({t_})|{pkg.study.scenario}|{arm}|{unit}"] = {
                    "estimand": f"S({t_})", "interval": f"Kaplan–Meier, log-log, {unit} as units",
                    "truth": truth.survival(arm, t_),
                    "estimate": None if row is None else _num(row["survival"]),
                    "lo": None if row is None else _num(row[f"ci_{unit}_lo"]),
                    "hi": None if row is None else _num(row[f"ci_{unit}_hi"])}
    return out


def prepare_out(out: Path, truth: Truth, design: CalibrationDesign, nominal: float) -> None:
    """Create OUT or check it holds this calibration (same truth, design and code); refuse another study's files."""
    manifest = out / MANIFEST
    code = calibration_code_digest()
    want: dict[str, Any] = {"truth_sha256": truth.sha256, "design": design.to_json(), "code_sha256": code}
    if manifest.is_file():
        try:
            have = read_json(manifest)
        except SafeIOError as exc:
            raise CalibrationError(f"{manifest}: {exc}; choose another --out") from None
        if not isinstance(have, dict) or {k: have.get(k) for k in ("truth_sha256", "design")} != {
                k: want[k] for k in ("truth_sha256", "design")}:
            raise CalibrationError(f"{out} holds a calibration of another truth or design; re-run its own command "
                                   "or choose another --out")
        if have.get("code_sha256") != want["code_sha256"]:
            raise CalibrationError(f"{out} holds replications made by other code (code_sha256 "
                                   f"{str(have.get('code_sha256'))[:12]}..., this code {code[:12]}...): "
                                   "one study does not mix two versions of the chain; choose a new --out")
        return
    if out.exists() and any(out.iterdir()):
        raise CalibrationError(f"{out} is not empty and holds no {MANIFEST}: it belongs to another study; choose "
                               "an empty or new --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json(manifest, {**want, "truth": truth.text, "nominal": nominal})


def run_calibration(truth_path: str, truth: Truth, design: CalibrationDesign, replications: int, out: Path,
                    params: Params, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Run replications 1..N that OUT lacks (resumable); return every finished replication's estimates."""
    if replications < 1:
        raise CalibrationError(f"--replications {replications}: give a positive number of replications, e.g. 200")
    check_design(design, truth)
    prepare_out(out, truth, design, nominal_of(params))
    reps = out / REP_DIR
    reps.mkdir(exist_ok=True)
    load_replications(out, replications)  # a damaged file is named, with the fix, before any sweep runs
    todo = [i for i in range(1, replications + 1) if not (reps / f"{i:04d}.json").is_file()]
    started = time.monotonic()
    for done, i in enumerate(todo, start=1):
        est = run_replication(truth_path, design, i, out / "work", params, truth.sha256)
        write_json(reps / f"{i:04d}.json", {"replication": i, "estimates": est}, indent=None)
        if progress is not None:
            rate = (time.monotonic() - started) / done
            progress(f"replication {i}/{replications}  ({done} run now, {replications - len(todo) + done} done)  "
                     f"{rate:.1f} s each, eta {rate * (len(todo) - done):.0f} s")
    return load_replications(out, replications)


def load_replications(out: Path, replications: int) -> list[dict[str, Any]]:
    """The estimates of replications 1..N found in OUT, each file checked (CalibrationError naming the fix)."""
    reps = out / REP_DIR
    return [load_replication(reps / f"{i:04d}.json", i) for i in range(1, replications + 1)
            if (reps / f"{i:04d}.json").is_file()]


def _number(x: Any, none: bool) -> bool:
    return (x is None and none) or (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x))


def load_replication(path: Path, i: int) -> dict[str, Any]:
    """One replication file's estimates, checked: ``{"replication": i, "estimates": {key: record}}``."""
    fix = f"delete {path} and re-run the same command to redo replication {i}"
    try:
        doc = read_json(path)
    except SafeIOError as exc:
        raise CalibrationError(f"{path}: unreadable ({str(exc)[:200]}); {fix}") from None
    est = doc.get("estimates") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("replication") != i or not isinstance(est, dict):
        raise CalibrationError(f"{path}: not replication {i}'s estimates; {fix}")
    for key, rec in est.items():
        ok = (isinstance(rec, dict) and isinstance(rec.get("estimand"), str) and isinstance(rec.get("interval"), str)
              and _number(rec.get("truth"), False) and all(_number(rec.get(k), True) for k in ("estimate", "lo", "hi")))
        if not ok:
            raise CalibrationError(f"{path}: the record {str(key)[:40]!r} is malformed (estimand, interval, a numeric "
                                   f"truth, estimate/lo/hi numbers or null); {fix}")
    return est


def summarise(replications: Sequence[dict[str, Any]], nominal: float) -> list[dict[str, Any]]:
    """Per estimand over all replications: n, truth, mean estimate, bias (MC SE), RMSE, coverage (MC SE) where
    the interval was estimable and over every replication (not estimable = not covered), not estimable,
    under-covers. A replication without the estimand's key counts as not estimable."""
    keys = list(dict.fromkeys(k for r in replications for k in r))
    total = len(replications)
    rows = []
    for key in keys:
        recs = [r[key] for r in replications if key in r]
        truth = recs[0]["truth"]
        est = [x["estimate"] for x in recs if x["estimate"] is not None]
        ivl = [x for x in recs if x["lo"] is not None and x["hi"] is not None]
        n, m = len(est), len(ivl)
        bias = sum(e - truth for e in est) / n if n else None
        sd = (math.sqrt(sum((e - truth - bias) ** 2 for e in est) / (n - 1)) if n > 1 and bias is not None
              else None)
        covered = sum(x["lo"] - 1e-12 <= truth <= x["hi"] + 1e-12 for x in ivl)
        cover = covered / m if m else None
        cover_all = covered / total if total else None
        part = key.split("|")
        rows.append({
            "key": key, "estimand": recs[0]["estimand"], "where": "|".join(part[1:]),
            "interval": recs[0]["interval"], "replications": total, "truth": truth,
            "mean_estimate": sum(est) / n if n else None, "bias": bias,
            "bias_mcse": sd / math.sqrt(n) if sd is not None else None,
            "rmse": math.sqrt(sum((e - truth) ** 2 for e in est) / n) if n else None,
            "coverage": cover, "coverage_mcse": math.sqrt(cover * (1 - cover) / m) if cover is not None else None,
            "coverage_all": cover_all,
            "coverage_all_mcse": math.sqrt(cover_all * (1 - cover_all) / total) if cover_all is not None else None,
            "intervals": m, "not_estimable": total - n, "interval_not_estimable": total - m,
            "under_covers": _under(cover, m, nominal), "under_covers_all": _under(cover_all, total, nominal),
            "width": sum(x["hi"] - x["lo"] for x in ivl) / m if m else None})
    return rows


def _under(cover: float | None, n: int, nominal: float) -> bool:
    """Coverage below ``nominal`` by more than two Monte Carlo SEs at the nominal."""
    return cover is not None and n > 0 and cover < nominal - 2 * math.sqrt(nominal * (1 - nominal) / n)


def say_progress(line: str) -> None:
    """A progress line on stderr."""
    print(line, file=sys.stderr, flush=True)
