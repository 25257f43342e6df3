"""Every analysis tunable in one typed, frozen place.

Estimators never read globals: the caller passes a `Params` down explicitly
(`DEFAULT_PARAMS` unless a study overrides something). Randomness is seeded
from here and drawn through an explicit `numpy.random.Generator`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


def _two_distinct(pair: tuple[str, ...]) -> bool:
    """A pair read from a params file: exactly two different arm codes."""
    return len(pair) == 2 and pair[0] != pair[1]


class ParamsError(ValueError):
    """A tunable is out of range; the message names the field and the allowed range."""


@dataclass(frozen=True, slots=True)
class Params:
    """Analysis tunables (paper defaults). Build variants with `params.replace(...)`."""

    alpha: float = 0.05
    """Two-sided level of every t-style dispersion interval (t quantile at 1 - alpha/2)."""
    min_pairs: int = 4
    """Sparse-cell sensitivity: keep configurations with at least this many complete pairs."""
    threshold_partial: float = 0.5
    """Operational recall threshold `recall >= 0.5` (rows recalled, McNemar)."""
    threshold_full: float = 1.0
    """Full-recall threshold `recall == 1.0` (equivalently >= 1.0)."""
    excluded_configurations: tuple[str, ...] = ()
    """Named configurations dropped in the 'named configuration excluded' sensitivity."""
    rescue_cutoff: float = 0.5
    """Binary rescue rule: control < cutoff fails, treatment >= cutoff rescues (exploratory)."""
    rescue_sweep_start: float = 0.40
    """First control-failure cutoff of the rescue sweep."""
    rescue_sweep_stop: float = 0.60
    """Last control-failure cutoff of the rescue sweep (inclusive)."""
    rescue_sweep_step: float = 0.01
    """Step of the rescue sweep."""
    borderline_margin: float = 0.02
    """Configurations whose control mean lies within this of the cutoff are borderline."""
    effect_cuts: tuple[float, ...] = (0.0, 0.10, 0.20)
    """Continuous-effect cut points: count configurations with effect >= each."""
    headings_max: int = 5
    """Largest number of fixed headings a carrier can carry."""
    single_field_arms: tuple[str, ...] = ("j", "p", "t")
    """Arms whose schema has a single free-text field (headings sub-analysis)."""
    abstention_markers: tuple[str, ...] = (
        "i don't know", "i do not know", "not recorded", "not available", "unknown",
        "not mentioned", "not provided", "no record", "cannot recall", "not specified",
    )
    """Case-insensitive substrings that mark an answer as abstaining somewhere."""
    bootstrap_resamples: int = 10_000
    """Configuration-level bootstrap resamples (ours, not the paper's)."""
    bootstrap_seed: int = 20_260_728
    """Seed of the configuration-level bootstrap generator."""
    bootstrap_method: str = "percentile"
    """Bootstrap interval method: 'percentile' or 'bca'."""
    signflip_exact_max: int = 20
    """Enumerate all 2^n sign patterns up to this many configurations, else Monte Carlo."""
    signflip_draws: int = 100_000
    """Monte Carlo sign-flip draws above `signflip_exact_max`."""
    signflip_seed: int = 20_260_729
    """Seed of the Monte Carlo sign-flip generator."""
    mcnemar_pairing_draws: int = 2_000
    """Random re-pairings inside each run for the pooled McNemar's pairing range (ours, not the paper's)."""
    mcnemar_pairing_seed: int = 20_261_919
    """Seed of the generator of those random re-pairings."""
    gee_cov_type: str = "bias_reduced"
    """statsmodels GEE covariance: 'bias_reduced' (Mancl-DeRouen) for ~20 clusters."""
    secondary_pairs: tuple[tuple[str, str], ...] = (("q", "m"), ("j", "t"))
    """Arm pairs (first, second) for exact McNemar over every block of the study scenario."""
    dependence_scenario: str | None = None
    """Scenario of the within-row dependence block; None means the study's primary scenario."""

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, rule: str) -> None:
            if not ok:
                raise ParamsError(f"Params.{field} = {getattr(self, field)!r}: {rule}")

        need(0.0 < self.alpha < 1.0, "alpha", "use a level strictly between 0 and 1, e.g. 0.05")
        need(self.min_pairs >= 1, "min_pairs", "use an integer >= 1")
        for name in ("threshold_partial", "threshold_full", "rescue_cutoff"):
            need(0.0 <= getattr(self, name) <= 1.0, name, "use a recall in [0, 1]")
        need(self.rescue_sweep_step > 0, "rescue_sweep_step", "use a positive step")
        need(self.rescue_sweep_start <= self.rescue_sweep_stop, "rescue_sweep_start",
             "must not exceed rescue_sweep_stop")
        need(self.borderline_margin >= 0, "borderline_margin", "use a margin >= 0")
        need(self.bootstrap_resamples >= 1, "bootstrap_resamples", "use an integer >= 1")
        need(self.bootstrap_method in ("percentile", "bca"), "bootstrap_method",
             "use 'percentile' or 'bca'")
        need(self.signflip_exact_max <= 24, "signflip_exact_max",
             "keep it <= 24 (2^n patterns are enumerated in memory)")
        need(self.signflip_draws >= 1, "signflip_draws", "use an integer >= 1")
        need(self.mcnemar_pairing_draws >= 1, "mcnemar_pairing_draws", "use an integer >= 1")
        need(self.headings_max >= 0, "headings_max", "use an integer >= 0")
        need(all(_two_distinct(p) for p in self.secondary_pairs), "secondary_pairs",
             "use (first, second) pairs of two different arm codes")

    def replace(self, **changes: Any) -> Params:
        """A copy with `changes` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def rescue_sweep(self) -> tuple[float, ...]:
        """The sweep cutoffs start..stop inclusive, computed in decimals (no float drift)."""
        start = Fraction(str(self.rescue_sweep_start))
        stop = Fraction(str(self.rescue_sweep_stop))
        step = Fraction(str(self.rescue_sweep_step))
        count = int((stop - start) / step) + 1
        return tuple(float(start + i * step) for i in range(count))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping of every field (tuples as lists)."""
        def plain(v: Any) -> Any:
            return [plain(x) for x in v] if isinstance(v, tuple) else v
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


DEFAULT_PARAMS = Params()


@dataclass(frozen=True, slots=True)
class PlanParams:
    """Tunables of `python generate.py plan` (issue 13: power, precision and cost of a v2 study).

    Kept apart from `Params` so that planning never changes the analysis's params digest.
    """

    configurations: tuple[int, ...] = (10, 20, 40, 80)
    """Grid of configuration counts K."""
    repeats: tuple[int, ...] = (2, 4, 8, 16)
    """Grid of repeats per configuration R (one row per arm each)."""
    effects: tuple[float, ...] = (0.0, 0.05, 0.10, 0.15)
    """Grid of true equal-configuration mean effects (recall scale)."""
    alpha: float = 0.05
    """Two-sided level of the simulated tests."""
    sims: int = 2000
    """Simulated studies per grid cell."""
    sims_max: int = 20_000
    """Upper bound on --sims; larger requests are capped with a message."""
    seed: int = 20_261_302
    """Seed of the simulation generator (numpy PCG64)."""
    target_power: float = 0.8
    """Power that `required_configurations` asks for."""
    k_search_max: int = 5000
    """Largest K the closed-form search for the required K tries."""
    signflip_exact_max: int = 12
    """Simulated studies with at most this many configurations get the exact sign-flip test."""
    signflip_patterns: int = 999
    """Random sign patterns (shared by a cell's studies) above signflip_exact_max."""
    cost_ratio: float = 10.0
    """Default cost of recruiting one configuration in units of one paired repeat (the cost model without
    a price table; analysis.plan.advice)."""
    r_search_max: int = 64
    """Largest R the cheapest-design search tries (R = 1..r_search_max)."""
    pairing_draws: int = 200
    """Random pairings of j and q rows inside configurations drawn for the pairing range (seeded from `seed`)."""
    tau2_level: float = 0.95
    """Coverage of the profile-likelihood interval of tau2."""
    disagreement: float = 0.10
    """Power difference between the resampling variant and the closed form that a recommendation flags."""
    check_steps_max: int = 40
    """Most steps up in K the simulation check of a recommended design takes before it says the target
    was not reached (analysis.plan.run)."""

    def __post_init__(self) -> None:
        def need(ok: bool, field: str, rule: str) -> None:
            if not ok:
                raise ParamsError(f"PlanParams.{field} = {getattr(self, field)!r}: {rule}")

        need(len(self.configurations) > 0 and all(k >= 2 for k in self.configurations),
             "configurations", "give at least one K, each >= 2")
        need(len(self.repeats) > 0 and all(r >= 1 for r in self.repeats), "repeats",
             "give at least one R, each >= 1")
        need(len(self.effects) > 0 and all(-1.0 <= e <= 1.0 for e in self.effects), "effects",
             "give at least one effect, each in [-1, 1] (recall scale)")
        need(0.0 < self.alpha < 1.0, "alpha", "use a level strictly between 0 and 1")
        need(1 <= self.sims <= self.sims_max, "sims", f"use 1..{self.sims_max}")
        need(0.0 < self.target_power < 1.0, "target_power", "use a power strictly between 0 and 1")
        need(1 <= self.signflip_exact_max <= 16, "signflip_exact_max", "use 1..16")
        need(self.signflip_patterns >= 99, "signflip_patterns", "use at least 99")
        need(self.cost_ratio > 0, "cost_ratio", "use a positive ratio")
        need(1 <= self.r_search_max <= 1000, "r_search_max", "use 1..1000")
        need(1 <= self.pairing_draws <= 100_000, "pairing_draws", "use 1..100000")
        need(0.0 < self.tau2_level < 1.0, "tau2_level", "use a level strictly between 0 and 1")
        need(0.0 < self.disagreement < 1.0, "disagreement", "use a power difference strictly between 0 and 1")
        need(0 <= self.check_steps_max <= 1000, "check_steps_max", "use 0..1000")

    def replace(self, **changes: Any) -> PlanParams:
        """A copy with `changes` applied (validated again)."""
        return dataclasses.replace(self, **changes)


DEFAULT_PLAN_PARAMS = PlanParams()
