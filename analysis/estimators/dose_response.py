"""Dose-response over the load ladder: recall, the paired contrast and fact survival per rung.

Methods note (ours, not the paper's). A ladder package (study.toml ``[ladder]``, every row's
``rung``; analysis/evidence/ladder.py) is read rung by rung; each rung is its own scenario. Per
(rung, arm): the mean exact recall of the valid rows with an outcome and a Wilson interval at
``n_eff = rows`` (design effect k: the checks of one row are treated as perfectly correlated, the
conservative end; a 135M model's checks within a row are strongly dependent). Per rung: the
primary estimator, the equal-configuration mean of the paired effect treatment - control over the
partition runs' complete pairs on the rung's scenario (analysis.estimators.paired.panel; the
recency window is not applied: the ladder is descriptive), with a t interval over the pair
differences (one configuration) or over configurations (several); a rung with fewer than
``params.min_pairs`` complete pairs keeps its estimate and says so. Fact survival per (rung,
arm): of the graded values the rows read, how many entered the carrier at their entry fold
(captured) and how many of those were never lost, i.e. in every carrier from the entry fold to the
last (survived; a value dropped and back later counts as lost), from the fact timeline. A declared
rung without a valid row is listed in ``missing``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis.estimators.common import OURS_LABEL, Contrast, frozen_reasons, runs_frame, t_interval, valid_outcome_rows
from analysis.estimators.paired import complete_pairs, panel, run_outcomes
from analysis.estimators.wilson import design_effect_interval
from analysis.params import Params

RUNG_SCHEMA = {"rung": pl.String, "order": pl.Int64, "scenario": pl.String, "graded_per_chunk": pl.Int64,
               "distractors": pl.Int64, "chunk_tokens": pl.Int64, "folds": pl.Int64, "axis": pl.String}
ARM_SCHEMA = {"rung": pl.String, "arm": pl.String, "rows": pl.Int64, "checks_per_row": pl.Int64,
              "checks_passed": pl.Int64, "recall": pl.Float64, "lo": pl.Float64, "hi": pl.Float64}
PAIRED_SCHEMA = {"rung": pl.String, "configurations": pl.Int64, "pairs": pl.Int64, "effect": pl.Float64,
                 "lo": pl.Float64, "hi": pl.Float64, "enough_pairs": pl.Boolean, "reason": pl.String}
SURVIVAL_SCHEMA = {"rung": pl.String, "arm": pl.String, "facts": pl.Int64, "captured": pl.Int64,
                   "survived": pl.Int64, "capture_share": pl.Float64, "survival_share": pl.Float64}
FACTORS = ("graded_per_chunk", "distractors", "chunk_tokens", "folds")
INTERVAL = "Wilson score interval at n_eff = rows (checks within a row treated as fully dependent)"


@dataclass(frozen=True)
class DoseResponse:
    """Recall, paired effect and fact survival per rung of a ladder package (ours, not the paper's)."""

    rungs: pl.DataFrame
    """:data:`RUNG_SCHEMA`: the declared rungs in ladder order; ``axis`` names the load factor in
    which a rung differs from the package's base (``base`` for the base itself, ``several``)."""
    arms: pl.DataFrame
    """:data:`ARM_SCHEMA`: per (rung, arm) valid rows with an outcome, passed checks, mean recall
    and its interval (:data:`INTERVAL`); rungs in ladder order, arms in study order."""
    paired: pl.DataFrame
    """:data:`PAIRED_SCHEMA`: per rung the primary estimator of treatment - control, its t interval
    and whether it rests on at least ``params.min_pairs`` complete pairs; ``reason`` when null."""
    survival: pl.DataFrame
    """:data:`SURVIVAL_SCHEMA`: per (rung, arm) graded values read, captured at entry, survived."""
    contrast: Contrast
    """Control and treatment arms (``scenario`` is the study's; each rung reads its own)."""
    missing: tuple[str, ...]
    """Declared rungs without a valid row with an outcome."""
    reasons: Mapping[str, str]
    """Scope -> why something is missing (``survival``: no folds.jsonl ...)."""
    interval: str = INTERVAL
    """How the recall intervals are computed."""
    label: str = OURS_LABEL
    """Provenance label."""


def _rungs(study: Any) -> pl.DataFrame:
    recs = []
    for i, r in enumerate(study.ladder):
        recs.append({"rung": r.name, "order": i, "scenario": r.scenario,
                     **{f: getattr(r, f) for f in FACTORS}})

    def near(a: dict[str, Any]) -> int:  # the base: the rung one factor away from the most others
        return sum(sum(a[f] != b[f] for f in FACTORS) <= 1 for b in recs)

    base = max(recs, key=near) if recs else None
    for r in recs:
        diff = [f for f in FACTORS if base is not None and r[f] != base[f]]
        r["axis"] = "base" if not diff else diff[0] if len(diff) == 1 else "several"
    return pl.DataFrame(recs, schema=RUNG_SCHEMA)


def _arms(rows: pl.DataFrame, rungs: pl.DataFrame, arms: list[str], alpha: float) -> pl.DataFrame:
    ok = valid_outcome_rows(rows)
    recs = []
    for rung, scen in rungs.select("rung", "scenario").iter_rows():
        for arm in arms:
            cell = ok.filter((pl.col("scenario") == scen) & (pl.col("arm") == arm))
            n = cell.height
            k = int(cell.get_column("checks_total").to_numpy().max()) if n else 0
            passed = int(cell.get_column("checks_passed").to_numpy().sum()) if n else 0
            share = (cell.get_column("checks_passed") / cell.get_column("checks_total")).to_numpy()
            mean = float(share.mean()) if n else None
            ci = design_effect_interval(mean if mean is not None else float("nan"), n, max(k, 1), float(max(k, 1)),
                                        alpha)
            recs.append({"rung": rung, "arm": arm, "rows": n, "checks_per_row": k or None, "checks_passed": passed,
                         "recall": mean, "lo": None if ci.reason else ci.lo, "hi": None if ci.reason else ci.hi})
    return pl.DataFrame(recs, schema=ARM_SCHEMA)


def _paired(rows: pl.DataFrame, study: Any, rungs: pl.DataFrame, params: Params) -> pl.DataFrame:
    runs = runs_frame(study)
    recs = []
    for rung, scen in rungs.select("rung", "scenario").iter_rows():
        c = Contrast(study.control, study.treatment, scen)
        p = panel(rows, runs, c, recency_cutoff=datetime.date.min, params=params)
        pairs = sum(e.pairs for e in p.effects)
        lo = hi = None
        reason = None
        if not p.effects:
            reason = "no complete pair of the two arms on this rung"
        elif len(p.effects) == 1:
            cp = complete_pairs(run_outcomes(rows, runs, c), c)
            total = p.checks_total or 1
            d = ((cp.get_column("treatment_passed") - cp.get_column("control_passed")) / total).to_numpy()
            lo_, hi_, why = t_interval(np.asarray(d, dtype=float), params.alpha)
            lo, hi = (None, None) if why else (lo_, hi_)
            reason = why and f"interval: {why}"
        else:
            s = p.summary
            why = s.reasons.get("dispersion_lo")
            lo, hi = (None, None) if why else (s.dispersion_lo, s.dispersion_hi)
            reason = why and f"interval: {why}"
        effect = p.summary.mean if p.effects else None
        recs.append({"rung": rung, "configurations": len(p.effects), "pairs": pairs, "effect": effect,
                     "lo": lo, "hi": hi, "enough_pairs": bool(p.effects) and min(e.pairs for e in p.effects)
                     >= params.min_pairs, "reason": reason})
    return pl.DataFrame(recs, schema=PAIRED_SCHEMA)


def _survival(timeline_facts: pl.DataFrame | None, rows: pl.DataFrame, rungs: pl.DataFrame,
              arms: list[str]) -> pl.DataFrame:
    if timeline_facts is None:
        return pl.DataFrame(schema=SURVIVAL_SCHEMA)
    ok = rows.filter(pl.col("valid").fill_null(False)).select("row_id", "scenario", "arm")
    f = (timeline_facts.filter(pl.col("entry_fold").is_not_null()).join(ok, on="row_id")
         .group_by("scenario", "arm")
         .agg(pl.len().cast(pl.Int64).alias("facts"),
              pl.col("captured").fill_null(False).sum().cast(pl.Int64).alias("captured"),
              pl.col("survived").fill_null(False).sum().cast(pl.Int64).alias("survived")))
    grid = pl.DataFrame([(r, s, a) for r, s in rungs.select("rung", "scenario").iter_rows() for a in arms],
                        schema={"rung": pl.String, "scenario": pl.String, "arm": pl.String}, orient="row")
    out = (grid.join(f, on=["scenario", "arm"], how="left")
           .with_columns(pl.col("facts", "captured", "survived").fill_null(0))
           .with_columns(capture_share=pl.when(pl.col("facts") > 0)
                         .then(pl.col("captured") / pl.col("facts")).otherwise(None),
                         survival_share=pl.when(pl.col("captured") > 0)
                         .then(pl.col("survived") / pl.col("captured")).otherwise(None)))
    return out.select(list(SURVIVAL_SCHEMA)).cast(SURVIVAL_SCHEMA)  # type: ignore[arg-type]


def dose_response(rows: pl.DataFrame, study: Any, params: Params,
                  timeline_facts: pl.DataFrame | None = None,
                  survival_reason: str | None = None) -> DoseResponse:
    """Dose-response of a ladder package: ``rows`` (rows.csv), ``study`` (with ``ladder``) and the
    fact timeline's ``facts`` frame (None when the package has no folds; ``survival_reason`` says why)."""
    rungs = _rungs(study)
    present = [a for a in (study.control, study.treatment) if a in set(rows.get_column("arm").to_list())]
    others = sorted(set(rows.get_column("arm").to_list()) - set(present))
    arms = present + others
    arm_frame = _arms(rows, rungs, arms, params.alpha)
    with_rows = set(arm_frame.filter(pl.col("rows") > 0).get_column("rung").to_list())
    missing = tuple(r for r in rungs.get_column("rung").to_list() if r not in with_rows)
    reasons: dict[str, str] = {}
    if timeline_facts is None:
        reasons["survival"] = survival_reason or "no fold-by-fold carriers in this evidence"
    if missing:
        reasons["missing"] = f"declared rungs without a valid row with an outcome: {', '.join(missing)}"
    return DoseResponse(rungs=rungs, arms=arm_frame, paired=_paired(rows, study, rungs, params),
                        survival=_survival(timeline_facts, rows, rungs, arms),
                        contrast=Contrast(study.control, study.treatment, study.scenario), missing=missing,
                        reasons=frozen_reasons(reasons))


def package_dose_response(package: Any, params: Params, survival: Any = None) -> DoseResponse | None:
    """The dose-response of an EvidencePackage with a ladder (None without ``[ladder]``); ``survival``:
    its analysis.estimators.survival_results.PackageSurvival when already computed."""
    if not getattr(package.study, "ladder", ()):
        return None
    from analysis.estimators.survival_results import package_survival

    surv = survival if survival is not None else package_survival(package, params)
    facts = surv.timeline.facts if surv.timeline is not None else None
    why = None if facts is not None else (surv.reasons.get("folds")
                                          or "; ".join(f"{k}: {v}" for k, v in sorted(surv.reasons.items())))
    return dose_response(package.rows, package.study, params, facts, why)
