"""The v2 design's advice (issue 19 findings 6-9, issue 23 item 12): one cost model (the cheapest design
by the printed cost), named reasons instead of a recommendation, ranges and checks beside each
recommendation, and outputs that explain themselves (no null, design.md, legend, labelled figure)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from analysis.cli import main
from analysis.estimators.common import contrast_of, runs_frame
from analysis.estimators.paired import panel
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS, DEFAULT_PLAN_PARAMS
from analysis.plan.advice import CostModel, cheapest_design, cost_model, optimal_repeats, recommend, smallest_k
from analysis.plan.cost import Price, RowTokens, cell_cost, repeat_cost, row_tokens
from analysis.plan.design import GRID_SCHEMA, required_configurations
from analysis.plan.run import make_design
from analysis.plan.simulate import closed_form
from analysis.plan.summary import POWER_LEGEND, summary_lines
from support.paths import HANDMADE, REPO
from support.plan_components import S2, TAU2
from support.plan_components import planned_components as _components

V1 = REPO / "data" / "v1"
SMALL = DEFAULT_PLAN_PARAMS.replace(configurations=(10, 40), repeats=(2, 8), effects=(0.0, 0.1), sims=60)


def _brute_force(tau2: float, s2: float, effect: float, plan, model: CostModel,
                 missing: tuple[float, float] = (0.0, 0.0)) -> tuple[float, int, int]:
    """The cheapest (cost, K, R) over every K = 2..k_search_max and R = 1..r_search_max (no bisection)."""
    ks = np.arange(2, plan.k_search_max + 1, dtype=float)
    best = None
    for r in range(1, plan.r_search_max + 1):
        power, _ = closed_form(tau2, s2, ks, r, effect, plan.alpha, missing)
        for k in ks[power >= plan.target_power]:
            c = round(float(model.cost(k, r)), 9)
            if best is None or c < best[0]:
                best = (c, int(k), r)
    assert best is not None
    return best


@pytest.mark.parametrize("tau2,s2,effect,model", [
    (0.0757, 0.0659, 0.10, CostModel("money", 0.2118, 0.0, True)),
    (0.0757, 0.0659, 0.15, CostModel("repeats", 1.0, 10.0, False)),
    (0.0238, 0.3152, 0.15, CostModel("repeats", 1.0, 10.0, False)),
    (0.0997, 0.0669, 0.20, CostModel("money", 0.5, 3.0, True)),
])
def test_recommendation_is_the_cheapest_design_on_the_whole_grid(tau2, s2, effect, model) -> None:
    plan = DEFAULT_PLAN_PARAMS.replace(k_search_max=400, r_search_max=24)
    best = cheapest_design(tau2, s2, effect, plan, model)
    assert best is not None
    cost, _k, _r = _brute_force(tau2, s2, effect, plan, model)
    assert round(best["cost"], 9) == cost
    assert best["cost"] == pytest.approx(model.cost(best["configurations"], best["repeats"]))
    assert best["power_closed_form"] >= plan.target_power


def test_issue_example_k114_r1_beats_k79_r3_by_the_printed_money() -> None:
    """Issue 19 finding 9: with a price table K = 79, R = 3 costs 50.21 while K = 114, R = 1 reaches
    the same power for 24.15 (money per paired repeat 24.15 / 114); the cheaper one is recommended."""
    model = cost_model(24.15 / 114, None, 10.0)
    plan = DEFAULT_PLAN_PARAMS
    best = cheapest_design(0.0757, 0.0659, 0.10, plan, model)
    assert (best["configurations"], best["repeats"]) == (114, 1)
    assert best["cost"] == pytest.approx(24.15)
    assert model.cost(79, 3) == pytest.approx(50.21, abs=0.01)
    assert float(closed_form(0.0757, 0.0659, 79, 3, 0.10, 0.05)[0]) >= 0.8   # both reach the power


def test_v1_recommendation_matches_the_printed_cell_money(tmp_path: Path) -> None:
    """Through the command line with a price table: the recommended design's printed money is the
    least printed money of any (K, R) that reaches the power."""
    prices = tmp_path / "prices.csv"
    prices.write_text("endpoint,input_per_million,output_per_million\nacme,0.5,1.5\n", encoding="utf-8")
    out = tmp_path / "plan"
    assert main(["plan", "--evidence", str(V1), "--out", str(out), "--configurations", "10,40", "--repeats",
                 "2,8", "--effect", "0,0.1", "--sims", "40", "--price-table", str(prices)]) == 0
    doc = json.loads((out / "design.json").read_text())
    (rec,) = doc["recommended"]
    per = doc["cost"]["per_repeat"]["mean_money"]
    model = CostModel("money", per, 0.0, True)
    vc = doc["variance_components"]
    plan = DEFAULT_PLAN_PARAMS.replace(k_search_max=300, r_search_max=8)
    missing = (vc["missing_rate"]["j"], vc["missing_rate"]["q"])
    cost, k, r = _brute_force(vc["tau2"], vc["sigma2_within"], 0.1, plan, model, missing)
    cf = rec["closed_form_design"]   # the closed-form design, before any simulation step up in K
    assert (cf["configurations"], cf["repeats"]) == (k, r)
    assert cf["cost"] == pytest.approx(cost)
    assert rec["money"] == pytest.approx(model.cost(rec["configurations"], rec["repeats"]))
    assert rec["money"] == pytest.approx(rec["cost"])
    assert f"cost {rec['money']:.2f}" in (out / "design.md").read_text()


def test_config_cost_enters_the_money_and_r_star(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("endpoint,input_per_million,output_per_million\nacme,0.5,1.5\n", encoding="utf-8")
    assert main(["plan", "--evidence", str(V1), "--out", str(tmp_path / "a"), "--configurations", "10",
                 "--repeats", "2", "--effect", "0.1", "--sims", "20", "--config-cost", "1"]) == 2
    assert "--price-table" in capsys.readouterr().err
    assert main(["plan", "--evidence", str(V1), "--out", str(tmp_path / "c"), "--price-table", str(prices),
                 "--config-cost", "-1"]) == 2
    assert "finite amount >= 0" in capsys.readouterr().err
    assert main(["plan", "--evidence", str(V1), "--out", str(tmp_path / "d"), "--price-table", str(prices),
                 "--cost-ratio", "5"]) == 2
    assert "--config-cost" in capsys.readouterr().err
    assert main(["plan", "--evidence", str(V1), "--out", str(tmp_path / "b"), "--configurations", "10",
                 "--repeats", "2", "--effect", "0.1", "--sims", "20", "--price-table", str(prices),
                 "--config-cost", "2.5"]) == 0
    doc = json.loads((tmp_path / "b" / "design.json").read_text())
    (rec,) = doc["recommended"]
    per = doc["cost"]["per_repeat"]["mean_money"]
    assert rec["money"] == pytest.approx(rec["configurations"] * (2.5 + rec["repeats"] * per))
    assert doc["optimal_repeats"]["value"] > 0 and doc["cost_model"]["c_config"] == 2.5
    (cell,) = doc["cost"]["cells"]
    assert cell["money"] == pytest.approx(10 * (2.5 + 2 * per))


def _v1_components():
    from analysis.estimators.variance_components import variance_components

    pkg = load_package(V1)
    return variance_components(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                               recency_cutoff=pkg.study.recency_cutoff, checks=pkg.checks)


def test_tau2_at_zero_gives_a_named_reason_not_a_recommendation() -> None:
    comps = dataclasses.replace(_v1_components(), tau2=0.0, tau2_truncated=True)
    recs, why = recommend(comps, SMALL, cost_model(None, None, 10.0), None)
    assert recs == () and why and "tau2 is estimated as 0" in why


def test_no_pairs_gives_a_named_reason(tmp_path: Path) -> None:
    pkg = load_package(HANDMADE)
    control_only = SimpleNamespace(study=pkg.study, rows=pkg.rows.filter(pl.col("arm") != pkg.study.treatment),
                                   checks=pkg.checks, root=pkg.root)
    design = make_design(control_only, SMALL)
    assert design.recommended == () and "no complete pairs" in design.reasons["recommended"]
    assert any("no complete pairs" in line for line in summary_lines(design))


def test_outputs_explain_themselves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No null in the text; a reason beside each null in JSON; design.md is the console summary; a
    column legend; progress lines per grid block; checks and the not-a-CI note beside the advice."""
    out = tmp_path / "plan"
    assert main(["plan", "--evidence", str(V1), "--out", str(out), "--configurations", "10,20",
                 "--repeats", "2,8", "--effect", "0,0.1", "--sims", "60"]) == 0
    cap = capsys.readouterr()
    assert "null" not in cap.out
    assert "not reached (max K in the grid = 20)" in cap.out
    for i in range(1, 5):
        assert f"plan: [{i}/4] simulated" in cap.err
    md = (out / "design.md").read_text()
    for line in cap.out.splitlines()[:-1]:   # all but the closing "wrote ..." line
        assert line in md
    doc = json.loads((out / "design.json").read_text())
    cell = doc["required_configurations"]["0.1"]["2"]
    assert cell["simulated_grid"] is None and cell["simulated_grid_reason"].startswith("not reached")
    power_md = (out / "design_power.md").read_text()
    header = next(line for line in power_md.splitlines() if line.startswith("| configurations"))
    for col in (c.strip() for c in header.strip("|").split("|")):
        assert f"- `{col}`: {POWER_LEGEND[col].split(' (')[0]}" in power_md
    (rec,) = doc["recommended"]
    sim = rec["simulated"]
    assert {"power_parametric", "power_resampling", "type1_parametric", "type1_resampling"} <= set(sim)
    grid = {(g["configurations"], g["repeats"]): g for g in doc["grid_resampling"] if g["effect"] == 0.1}
    flagged = {(c["configurations"], c["repeats"]) for c in rec["disagreements"]["cells"]}
    assert flagged == {key for key, g in grid.items() if abs(g["power"] - g["power_closed_form"]) > 0.10}
    assert "not a confidence interval" in rec["not_a_ci"] and "not a confidence interval" in cap.out
    t1 = doc["type1_small_k"]
    assert t1["configurations"] == 10 and len(t1["resampling"]) == 2
    assert "simulated type-I rate at K=10" in cap.out
    rg = doc["uncertainty"]["ranges"]["0.1"]["configurations"]
    assert rg[0] <= rec["configurations"] <= rg[1] and f"K = {rg[0]}..{rg[1]}" in cap.out
    pairing = doc["uncertainty"]["pairing"]
    assert [r["pairing"] for r in pairing["rows"]] == ["shipped", "sorted", "random", "reversed"]
    # issue 30 item 6: the shipped pairing is not the sorted one, and the statement no longer says it is
    shipped, sorted_ = pairing["rows"][0]["sigma2_within"], pairing["rows"][1]["sigma2_within"]
    assert shipped != pytest.approx(sorted_)
    assert "sorted order" not in pairing["statement"] and "not equal to it" in pairing["statement"]
    t = doc["uncertainty"]["tau2"]
    assert t["interval"][0] < t["anova"] < t["interval"][1] and t["reml"] > t["anova"]
    assert "tau2 by REML" in cap.out and "profile-likelihood interval" in cap.out


def test_search_covers_the_users_grid_and_widens_where_a_bound_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: the cheapest design over the whole grid the user asked for. PlanParams bounds of K <= 20
    and R <= 2 sit inside the grid (K to 40, R to 8) and below the optimum: the search holds the grid and
    widens, so the design is the brute-force cheapest over a box wide enough to hold it."""
    plan = SMALL.replace(k_search_max=20, r_search_max=2)
    design = make_design(load_package(V1), plan)
    (rec,) = design.recommended
    cf = rec["closed_form_design"]
    missing = (rec["missing_rates"]["control"], rec["missing_rates"]["treatment"])
    model = CostModel("repeats", 1.0, 10.0, False)
    wide = DEFAULT_PLAN_PARAMS.replace(k_search_max=300, r_search_max=12)
    cost, k, r = _brute_force(design.components.tau2, design.components.sigma2_within, 0.1, wide, model, missing)
    assert (cf["configurations"], cf["repeats"]) == (k, r) and cf["cost"] == cost
    assert rec["search"]["configurations_max"] >= 40 and rec["search"]["repeats_max"] >= 8
    assert rec["search"]["cut"] is None
    # a cap that still cuts the optimum is said in words, never silent
    from analysis.plan import advice

    monkeypatch.setattr(advice, "R_SEARCH_CAP", 2)
    best = advice.cheapest_design(0.0238, 0.3152, 0.15, DEFAULT_PLAN_PARAMS.replace(r_search_max=2, repeats=(2,)),
                                  model)
    assert best is not None and best["repeats"] == 2 and "more repeats might be cheaper" in best["search"]["cut"]


def test_figure_marks_references_recommendation_and_the_observed_effect() -> None:
    from analysis.plan.figure import power_figure

    pkg = load_package(V1)
    design = make_design(pkg, SMALL)
    observed = panel(pkg.rows, runs_frame(pkg.study), contrast_of(pkg.study),
                     recency_cutoff=pkg.study.recency_cutoff, params=DEFAULT_PARAMS).summary.mean
    fig = power_figure(design)
    gids = {a.get_gid(): a for ax in fig.axes for a in ax.get_children() if a.get_gid()}
    assert {"target-power", "alpha", "recommended", "observed-effect"} <= set(gids)
    assert list(gids["observed-effect"].get_xdata()) == pytest.approx([observed, observed], abs=1e-12)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "target power 0.8" in texts and "alpha 0.05" in texts
    assert any(f"{observed:+.3f}" in t for t in texts)
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("exact-recall difference q − j" in t for t in labels)
    assert any("recommended" in t for t in labels)


def test_pairing_statement_follows_the_study_kind() -> None:
    from analysis.plan.run import pairing_statement

    assert "reconstruction" in pairing_statement("reconstruction")
    assert "the pairing by repeat is the data" in pairing_statement("pilot")
    assert "the pairing by repeat is the data" in pairing_statement(None)


def test_report_of_an_undefined_design_has_no_dash_and_no_empty_table(tmp_path: Path) -> None:
    """A design whose components are undefined (the one-configuration v2 pilot) is reported with its
    reasons in words: no dash inside a sentence, no empty power table, no cost-model paragraph."""
    out = tmp_path / "o"
    pilot = REPO / "data" / "v2" / "pilot"
    assert main(["plan", "--evidence", str(pilot), "--out", str(out), "--configurations", "10",
                 "--repeats", "2", "--effect", "0,0.1", "--sims", "20"]) == 0
    assert main(["--evidence", str(HANDMADE), "--out", str(out)]) == 0
    qmd = (out / "report" / "index.qmd").read_text()
    section = qmd[qmd.index("## Designing v2"):]
    section = section[:section.index("\n## ", 5)]
    assert "—" not in section
    assert "| K | R |" not in section and "One cost model" not in section
    assert "cannot recommend a design: fewer than two configurations" in section
    assert "not computed (tau2, reason below)" in section






# ------------------------------------------------------------------------------ required K
def _brute_force_k(r: int, effect: float, k_max: int) -> int:
    """The smallest K in 2..k_max whose closed-form power reaches 0.8, by scanning every K (0: none)."""
    ks = np.arange(2, k_max + 1)
    power, _ = closed_form(TAU2, S2, ks, np.full(ks.shape, r), effect, 0.05)
    hit = np.flatnonzero(power >= 0.8)
    return int(ks[hit[0]]) if hit.size else 0


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

