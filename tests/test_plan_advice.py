"""The v2 design's advice (issue 19 findings 6-9, issue 23 item 12): one cost model (the cheapest design
by the printed cost), named reasons instead of a recommendation, ranges and checks beside each
recommendation, and outputs that explain themselves (no null, design.md, legend, labelled figure)."""

from __future__ import annotations

import dataclasses
import json
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
from analysis.plan.advice import CostModel, cheapest_design, cost_model, recommend
from analysis.plan.run import make_design
from analysis.plan.simulate import closed_form
from analysis.plan.summary import POWER_LEGEND, summary_lines
from support.paths import HANDMADE, REPO

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
