"""v2 design promises that planted one-line faults showed no test pinned (issue 21, "Promises no
test pins": design).

The plan functions are called directly (no build, no `generate.py plan`). Each test names the
one-line fault it catches, derives its expected value by hand (or by an independent oracle: a
brute-force scan, the runner's own trajectory against a fake endpoint), and was checked to fail
with that fault planted by hand and to pass on the code as it is.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import math
from types import MappingProxyType

import numpy as np
import polars as pl
import pytest

from analysis.estimators.common import Contrast
from analysis.estimators.variance_components import ArmMissing, VarianceComponents, variance_components
from analysis.params import DEFAULT_PLAN_PARAMS
from analysis.plan.advice import cost_model, optimal_repeats, smallest_k
from analysis.plan.cost import Price, RowTokens, cell_cost, repeat_cost, row_tokens
from analysis.plan.design import GRID_SCHEMA, required_configurations, simulate_grid
from analysis.plan.simulate import analyse_simulated, closed_form, sign_patterns, study_frames

C = Contrast("j", "q", "S5")
TAU2, S2 = 0.0757, 0.0659  # data/v1's components (docs/PREREGISTRATION.md); any positive pair would do


def _components(missing_control: float = 0.0, missing_treatment: float = 0.0) -> VarianceComponents:
    return VarianceComponents(
        contrast=C, checks_total=14, configurations=20, pairs=80, pairs_per_configuration=(4,) * 20,
        within_df=60, grand_mean=0.0, panel_mean=0.0, msb=0.0, msw=S2, n0=4.0, tau2_untruncated=TAU2,
        tau2=TAU2, tau2_truncated=False, sigma2_within=S2, icc=0.7, design_effect=10.0, icc_rows=160,
        missing=(ArmMissing("j", 80, 80, 0, 0, missing_control), ArmMissing("q", 80, 80, 0, 0, missing_treatment)),
        method="m", reasons=MappingProxyType({}))


# ------------------------------------------------------------------------------ required K
def _brute_force_k(r: int, effect: float, k_max: int) -> int:
    """The smallest K in 2..k_max whose closed-form power reaches 0.8, by scanning every K (0: none)."""
    ks = np.arange(2, k_max + 1)
    power, _ = closed_form(TAU2, S2, ks, np.full(ks.shape, r), effect, 0.05)
    hit = np.flatnonzero(power >= 0.8)
    return int(ks[hit[0]]) if hit.size else 0


def test_the_required_k_is_the_smallest_that_reaches_the_power() -> None:
    # Plants: smallest_k returning `np.where(reach, float(k_max), 0.0)` -> the largest K searched, not the
    # smallest; required_configurations taking `.sort("configurations", descending=True)` -> the largest
    # grid K that reaches the power (80 instead of 20). The oracle is a scan of every K, not a bisection.
    repeats = np.arange(1, 9)
    for effect, k_max in ((0.1, 400), (0.15, 400), (0.3, 50)):
        got = smallest_k(TAU2, S2, repeats, effect, 0.05, 0.8, k_max)
        assert got.tolist() == [_brute_force_k(int(r), effect, k_max) for r in repeats]
        assert all(2 <= k < k_max for k in got.tolist())
    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(10, 20, 40, 80), repeats=(2,), effects=(0.15,), sims=100,
                                       k_search_max=400)
    # simulated grid powers by hand: K = 10 -> 0.5, 20 -> 0.85, 40 -> 0.95, 80 -> 0.99; target 0.8 -> K = 20
    grid = pl.DataFrame([{"variant": "parametric", "configurations": k, "repeats": 2, "effect": 0.15, "power": p}
                         for k, p in ((40, 0.95), (10, 0.5), (80, 0.99), (20, 0.85))],
                        schema=GRID_SCHEMA)
    cell = required_configurations(_components(), grid, plan)["0.15"]["2"]
    assert cell["simulated_grid"] == 20
    assert cell["closed_form"] == _brute_force_k(2, 0.15, 400)


# ------------------------------------------------------------------------------ R*
def test_r_star_is_the_square_root_of_ratio_times_sigma2_over_tau2() -> None:
    # Plants: `math.sqrt(ratio * tau2 / sigma2_within)` or `math.sqrt(1 / (ratio * sigma2_within / tau2))`
    # -> 0.25 instead of 4; CostModel.ratio as per_repeat / per_configuration -> 1/4 instead of 4.
    # Hand: c_config / c_repeat = 4, sigma2_within = 0.04, tau2 = 0.01: R* = sqrt(4 * 0.04 / 0.01) = sqrt(16) = 4.
    out = optimal_repeats(0.01, 0.04, cost_model(None, None, 4.0))
    assert out["value"] == pytest.approx(4.0) and out["integer"] == 4 and out["cost_ratio"] == 4.0
    # ratio 1 -> sqrt(4) = 2; ratio 10 -> sqrt(40); ratio 100 -> sqrt(400) = 20
    assert out["by_cost_ratio"] == pytest.approx({"1": 2.0, "10": math.sqrt(40.0), "100": 20.0})
    # the same ratio from a price table: c_repeat 0.5 money, c_config 2.0 money -> 4
    money = optimal_repeats(0.01, 0.04, cost_model(0.5, 2.0, 99.0))
    assert money["cost_ratio"] == pytest.approx(4.0) and money["value"] == pytest.approx(4.0)
    # sigma2_within 0.09, tau2 0.04, ratio 1 -> sqrt(0.09 / 0.04) = 1.5, not 1 / 1.5
    assert optimal_repeats(0.04, 0.09, cost_model(None, None, 1.0))["value"] == pytest.approx(1.5)


# ------------------------------------------------------------------------------ Monte Carlo p
def test_the_monte_carlo_sign_flip_p_value_carries_its_plus_one() -> None:
    # Plant: `p = hits / m` whatever `exact` (or `(hits) / (1 + m)`) -> 2/4 = 0.5 (or 0.4) instead of 0.6.
    # Hand: K = 3 configurations with effects 1, 1, 1 (one repeat each): observed |sum| = 3.
    # Four random patterns: (+,+,+) -> 3 (hit), (-,-,-) -> 3 (hit), (+,-,+) -> 1, (+,+,-) -> 1.
    # Monte Carlo: p = (1 + 2) / (1 + 4) = 0.6. The same patterns as an exact enumeration: 2 / 4 = 0.5.
    d = np.ones((1, 3, 1))
    present = np.ones((1, 3, 1), dtype=bool)
    patterns = np.array([[1, 1, 1], [-1, -1, -1], [1, -1, 1], [1, 1, -1]], dtype=float)
    assert analyse_simulated(d, present, 0.05, patterns, exact=False).p_signflip[0] == pytest.approx(3 / 5)
    assert analyse_simulated(d, present, 0.05, patterns, exact=True).p_signflip[0] == pytest.approx(2 / 4)
    # above signflip_exact_max the patterns are random and flagged as not exact, so the +1 applies
    _pats, exact = sign_patterns(13, 12, 99, np.random.Generator(np.random.PCG64(1)))
    assert exact is False


# ------------------------------------------------------------------------------ missingness
def test_the_treatment_arms_missingness_is_its_own() -> None:
    # Plants: simulate_grid building SimModel with `miss.get(comps.contrast.control)` for the treatment too,
    # or _mask drawing the treatment's rows with `model.missing_control` -> no row ever missing here, so the
    # mean panel size stayed 2 instead of 2 x 0.1; _arm_missing counting `contrast.control` rows for both
    # arms -> q's rate 0 instead of 3/8.
    # (1) the estimator: K = 2, R = 4, three treatment rows invalid (study_frames writes a non-present
    #     repeat as an invalid treatment row) -> j 0/8 missing, q 3/8.
    present = np.array([[True, False, True, True], [False, True, False, True]])
    rows, runs = study_frames(np.zeros((2, 4)), present, 14)
    comps = variance_components(rows, runs, C, recency_cutoff=dt.date(2025, 1, 1))
    assert comps.missing_rate() == {"j": 0.0, "q": pytest.approx(3 / 8)}
    # (2) the simulation: control never missing, treatment missing with probability 0.9; K = 2, R = 1, so a
    #     configuration is in the panel with probability 0.1 and the mean panel size is 2 x 0.1 = 0.2
    #     (sd of the mean over 4000 studies: sqrt(2 x 0.1 x 0.9 / 4000) = 0.0067; the bound is 7.5 sd).
    plan = DEFAULT_PLAN_PARAMS.replace(configurations=(2,), repeats=(1,), effects=(0.0,), sims=4000)
    grid, _ = simulate_grid(_components(0.0, 0.9), [], plan, np.random.Generator(np.random.PCG64(5)),
                            resampling=False, signflip=False)
    assert grid["panel_configurations_mean"][0] == pytest.approx(0.2, abs=0.05)
    # and the other way round (control 0.9, treatment 0): the same 0.2, each arm with its own rate
    grid, _ = simulate_grid(_components(0.9, 0.0), [], plan, np.random.Generator(np.random.PCG64(6)),
                            resampling=False, signflip=False)
    assert grid["panel_configurations_mean"][0] == pytest.approx(0.2, abs=0.05)


# ------------------------------------------------------------------------------ pricing
def test_multi_endpoint_pricing_is_the_mean_over_endpoints() -> None:
    # Plants: `mean_money = sum(money)` (or `money[-1]`, `max(money)`) in repeat_cost -> 4.2 (2.8) instead of
    # the mean 2.1. Hand: two rows (one per arm) of 1,000,000 prompt and 100,000 output tokens each.
    #   endpoint a: 0.5/M in, 2/M out, 1000 and 50 tokens/s: row 0.5 + 0.2 = 0.7, 1000 + 2000 = 3000 s;
    #               a paired repeat 1.4 and 6000 s
    #   endpoint b: 1/M in, 4/M out, 2000 and 100 tokens/s: row 1 + 0.4 = 1.4, 500 + 1000 = 1500 s;
    #               a paired repeat 2.8 and 3000 s
    #   mean: money (1.4 + 2.8) / 2 = 2.1, seconds (6000 + 3000) / 2 = 4500
    rows = [RowTokens("j", 6, 1_000_000, 100_000), RowTokens("q", 6, 1_000_000, 100_000)]
    rep = repeat_cost(rows, [Price("a", 0.5, 2.0, 1000.0, 50.0), Price("b", 1.0, 4.0, 2000.0, 100.0)])
    assert rep["per_endpoint"]["a"]["money"] == pytest.approx(1.4)
    assert rep["per_endpoint"]["b"]["money"] == pytest.approx(2.8)
    assert rep["mean_money"] == pytest.approx(2.1) and rep["mean_seconds"] == pytest.approx(4500.0)
    # a design cell prices at that mean: K = 3, R = 2, c_config 1 -> 3 (1 + 2 x 2.1) = 15.6; 3 x 2 x 4500 s = 7.5 h
    assert cell_cost(3, 2, rep, per_configuration=1.0) == pytest.approx({"money": 15.6, "hours": 7.5})


# ------------------------------------------------------------------------------ row tokens
class _FixedReplies:
    """A fake endpoint: every call is answered with the same plain text, and every request is kept."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list = []

    async def complete(self, request):  # the ChatBackend protocol
        from analysis.runner.protocol import ChatReply

        self.requests.append(request)
        return ChatReply(text=self.text, finish_reason="stop")


def _text_of(tokens: int) -> str:
    from analysis.runner.sizing import estimate_tokens

    words: list[str] = []
    while estimate_tokens(" ".join(words)) < tokens:
        words.append("ledger")
    text = " ".join(words)
    assert estimate_tokens(text) == tokens  # one prose word at a time reaches the count exactly here
    return text


@pytest.mark.parametrize("code", ["l", "u"])  # plain arms: carrier ceiling = output_tokens (l), = carry_cap (u)
def test_the_row_cost_counts_the_recall_call_and_the_first_folds_carrier(code: str) -> None:
    # Plants in row_tokens: `prompt_tokens=prompt` (recall turn dropped) -> 1,073 tokens short; `calls=n_folds`
    # -> 5 calls instead of 6; `output_tokens=n_folds * carrier` -> the recall's 1024 output tokens dropped;
    # `(0 if i == 0 else carrier)` (the first fold's "(none yet ...)" carrier not counted) -> 11 tokens short.
    # Oracle: the runner's own trajectory (analysis.runner.protocol.run_trajectory) against an endpoint that
    # always returns a carrier of exactly the planning ceiling min(carry_cap, output_tokens) tokens; its
    # requests are what a row really sends, each with the protocol's prompt estimate.
    from analysis.runner.arms import load_arms
    from analysis.runner.named_fixtures import load_fixture_arg
    from analysis.runner.protocol import _FIRST, RunSettings, run_trajectory
    from analysis.runner.sizing import estimate_tokens

    fixture, arm = load_fixture_arg("small"), load_arms()[code]
    ceiling = min(arm.carry_cap, arm.output_tokens)
    endpoint = _FixedReplies(_text_of(ceiling))
    result = asyncio.run(run_trajectory(endpoint, fixture, arm, RunSettings()))
    planned = row_tokens(fixture, arm)
    purposes = [r.purpose for r in endpoint.requests]
    assert purposes == ["fold"] * len(fixture.chunks) + ["recall"]
    assert planned.calls == len(endpoint.requests) == 6
    # The recall prompt's estimate of "carrier + labels" differs from the sum of the two estimates by
    # per-line rounding (2 tokens here); everything else matches call by call. The tolerance is below the
    # smallest pinned part, the first fold's carrier placeholder.
    first = estimate_tokens(_FIRST)
    assert first == 11
    assert abs(planned.prompt_tokens - result.prompt_tokens_est) <= 2 < first
    recall = endpoint.requests[-1].prompt_tokens_est
    assert recall > 1000
    assert planned.prompt_tokens - recall == pytest.approx(sum(r.prompt_tokens_est for r in endpoint.requests[:-1]),
                                                           abs=2)
    # output: each fold at the ceiling, the recall at its budget (RunSettings.recall_max_tokens = 1024)
    assert planned.output_tokens == len(fixture.chunks) * ceiling + 1024
