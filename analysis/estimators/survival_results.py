"""The ``fact_survival`` results.json block (docs/RESULTS_KEYS.md) of one evidence package.

``package_survival(package, params)`` runs the fact timeline and the survival estimators on a
loaded package (folds.jsonl + the fixture named by ``fixture_digest``); ``survival_block``
turns the outcome into JSON-ready data. A package without folds.jsonl gets a block with
``available: false`` and the reason "not in this evidence".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from analysis.estimators.common import json_ready_block
from analysis.estimators.fact_timeline import FactTimeline, fact_timeline
from analysis.estimators.survival import FactSurvival, curves_reason, fact_survival
from analysis.params import Params

if TYPE_CHECKING:
    from analysis.evidence.folds import FixtureLibrary

LABEL = "ours, not the paper's"
ENTRY_RULE = ("entry fold: the first fold that read the value's chunk and was not lost; presence: the value "
              "as a whole token in the fold's carrier (the package's presence grader)")
LOSS_RULE = ("loss: time to the first absence: a value captured at its entry fold is lost at the first later fold "
             "whose carrier lacks it, and stays lost if it comes back (reappeared, a part of losses); survived: "
             "captured and in every carrier up to the final one, so captured = losses + survived; a value absent "
             "at its entry fold but present later (appeared_late, a part of not_captured) is not captured and "
             "not in the survival analysis, whose time origin is the entry fold")
INTERVALS = {
    "ci_rows": "rows as clusters: infinitesimal-jackknife (cluster-robust) variance of S(k), log-log, 1 - alpha; "
               "before any loss, the exact no-loss bound [(alpha/2)^(1/rows), 1]",
    "ci_values": "values as independent: lifelines' Greenwood variance, log-log, 1 - alpha; too narrow when "
                 "the values of one row are lost together",
}


@dataclass(frozen=True)
class PackageSurvival:
    """Timeline and survival of one package, or why they are absent."""

    timeline: FactTimeline | None
    """The fact timeline (None without folds or without entry folds)."""
    survival: FactSurvival | None
    """Survival per arm (None when the timeline is None)."""
    reasons: dict[str, str]
    """Scope -> why something is missing (e.g. ``folds``: not in this evidence)."""
    truth: Any = None
    """A simulated package's planted truth (analysis.evidence.truth.Truth; study.toml [simulation]), else None."""


def package_survival(package: Any, params: Params, fixtures: FixtureLibrary | None = None) -> PackageSurvival:
    """Fact timeline and survival of ``package`` (an EvidencePackage); ``fixtures``: the committed
    fixtures, loaded once by the caller (analysis.evidence.folds.load_fixture_library; loaded here when None)."""
    from analysis.evidence.folds import graded_facts

    facts, reasons = graded_facts(package, library=fixtures)
    if package.folds is None or facts.height == 0:
        if package.folds is not None and "fixture" not in reasons and not any(k.startswith("fixture")
                                                                              for k in reasons):
            reasons.setdefault("checks", "no graded check of the package matches a fixture value")
        return PackageSurvival(None, None, reasons, getattr(package.study, "simulation", None))
    timeline = fact_timeline(package.folds, facts)
    survival = fact_survival(timeline, package.rows, package.study, params)
    return PackageSurvival(timeline, survival, {**reasons, **survival.reasons},
                           getattr(package.study, "simulation", None))


def _records(df: pl.DataFrame) -> list[dict[str, Any]]:
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns([pl.col(c).fill_nan(None) for c in floats]).to_dicts()


def survival_block(package: Any, params: Params) -> dict[str, Any]:
    """The JSON-ready ``fact_survival`` block of ``package``."""
    return survival_json(package_survival(package, params), params)


def survival_json(out: PackageSurvival, params: Params) -> dict[str, Any]:
    """The JSON-ready ``fact_survival`` block of a computed :class:`PackageSurvival`."""
    s = out.survival
    if s is None:
        why = out.reasons.get("folds") or "; ".join(f"{k}: {v}" for k, v in sorted(out.reasons.items()))
        return {"available": False, "reason": why, "label": LABEL}
    km: dict[str, list[dict[str, Any]]] = {}
    truth = out.truth
    for rec in _records(s.km):
        arm = rec.pop("arm")
        if truth is not None:  # issue 35: the planted S(t) = keep^t of a simulated package
            rec["planted"] = truth.survival(arm, rec["folds_since_entry"]) if arm in truth.arms else None
        km.setdefault(arm, []).append(rec)
    cuts: dict[str, list[dict[str, Any]]] = {}
    for rec in _records(s.cuts):
        cuts.setdefault(rec.pop("cut"), []).append(rec)
    return json_ready_block({
        "available": True, "reason": None, "label": LABEL, "entry_rule": ENTRY_RULE, "loss_rule": LOSS_RULE,
        "intervals": INTERVALS, "level": 1 - params.alpha,
        "rows": s.rows, "facts": int(s.arms.get_column("facts").sum()),
        "contrast": {"control": s.contrast.control, "treatment": s.contrast.treatment,
                     "scenario": s.contrast.scenario},
        "arms": {r.pop("arm"): r for r in _records(s.arms)},
        "km": km,
        "curves_reason": curves_reason(s.km),
        "paired": {k: {"configurations": p.configurations, "pairs": p.pairs, "mean": p.mean,
                       "mean_share": p.mean_share, "effects": p.effects, "reason": p.reason}
                   for k, p in s.paired.items()},
        "cuts": cuts,
        "reasons": dict(sorted(out.reasons.items())),
    })
