"""Fact survival that adds up (issue 19, findings 10-11).

One definition of loss (time to the first absence after entry): a captured value that is
dropped and later written back is one loss and never a survivor, so per arm and per cut
captured = losses + survived; a value absent at its entry fold but present later is not
captured. The Kaplan-Meier interval takes the row as the cluster. The scripted scenario
``write_scenario(reappear=True)`` (tests/survival_support.py) drops ``billing gateway port`` at
fold 2 and writes it back at fold 3, and writes the never-carried ``owning department`` (entry
fold 3) at fold 4; every number below is derived by hand in the comments from that script.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.estimators.fact_timeline import fact_timeline
from analysis.estimators.survival import fact_survival, kaplan_meier, row_cluster_variance
from analysis.estimators.survival_results import package_survival, survival_block
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import build
from report_support import unspanned
from support.paths import REPO
from survival_support import CLIPPED, DROPPED, NEVER, write_scenario


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_scenario(tmp_path_factory.mktemp("reappear") / "pkg", reappear=True)


@pytest.fixture(scope="module")
def survival(scenario: Path):
    pkg = load_package(scenario)
    return pkg, package_survival(pkg, DEFAULT_PARAMS)


@pytest.fixture(scope="module")
def built(scenario: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    build(scenario, out, DEFAULT_PARAMS, progress=None)
    return out


def _fact(survival, row_id: str, check: str) -> dict:
    _pkg, out = survival
    return out.timeline.facts.filter((pl.col("row_id") == row_id) & (pl.col("check") == check)).row(0, named=True)


# ---------------------------------------------------------------- one definition of loss
def test_a_value_lost_and_written_back_is_one_loss_and_never_a_survivor(survival) -> None:
    # m: the port enters at fold 0, is absent at fold 2 and back at folds 3 and 4 (the final carrier)
    f = _fact(survival, "a-r1-m", DROPPED)
    assert (f["entry_fold"], f["captured"], f["loss_fold"], f["duration"], f["event"]) == (0, True, 2, 2, True)
    assert (f["survived"], f["present_final"], f["reappeared"]) == (False, True, True)
    # j: back at fold 3, lost again at j's broken fold 4; the first loss (fold 2) is the event
    f = _fact(survival, "a-r1-j", DROPPED)
    assert (f["loss_fold"], f["duration"], f["survived"], f["present_final"], f["reappeared"]) == \
        (2, 2, False, False, False)
    # a value never lost is a survivor; one lost for good is neither survivor nor reappeared
    assert _fact(survival, "a-r1-m", "freeze window start")["survived"] is True
    f = _fact(survival, "a-r1-m", CLIPPED)
    assert (f["survived"], f["reappeared"]) == (False, False)


def test_captured_equals_lost_plus_never_lost_in_every_arm(survival) -> None:
    _pkg, out = survival
    arms = {r["arm"]: r for r in out.survival.arms.iter_rows(named=True)}
    # m and q per row: 13 of 14 captured (not the department); lost: the port (fold 2, back from
    # fold 3) and the relay port (clipped at fold 3) -> 2 losses, 11 never lost, 1 reappeared.
    # Two rows double every count: 26 = 4 + 22, 2 reappeared (today's code counted the port as both
    # a loss and a survivor: 24 + 4 > 26).
    for arm in ("m", "q"):
        a = arms[arm]
        assert (a["captured"], a["losses"], a["survived"], a["reappeared"]) == (26, 4, 22, 2)
        assert a["survival_final"] == pytest.approx(22 / 26)
    # j: every captured value is lost (the port's first loss at fold 2 counts, its return does not)
    j = arms["j"]
    assert (j["captured"], j["losses"], j["survived"], j["reappeared"]) == (22, 22, 0, 0)
    for a in arms.values():
        assert a["captured"] == a["losses"] + a["survived"]
        assert a["reappeared"] <= a["losses"]
    for c in out.survival.cuts.iter_rows(named=True):
        assert c["captured"] == c["losses"] + c["survived"], c


def test_a_value_that_appears_after_its_entry_fold_is_not_captured(survival) -> None:
    # the department's chunk is read at fold 3 (its entry fold); m writes it only at fold 4
    f = _fact(survival, "a-r1-m", NEVER)
    assert (f["entry_fold"], f["captured"], f["first_present"], f["appeared_late"]) == (3, False, 4, True)
    assert (f["survived"], f["duration"], f["event"]) == (False, None, None)   # outside the survival analysis
    _pkg, out = survival
    arms = {r["arm"]: r for r in out.survival.arms.iter_rows(named=True)}
    assert (arms["m"]["not_captured"], arms["m"]["appeared_late"]) == (2, 2)
    assert arms["j"]["appeared_late"] == 0                                      # j's fold 4 did not parse
    # the Kaplan-Meier risk set at entry is the 26 captured values of m, not 28
    km = out.survival.km.filter((pl.col("arm") == "m") & (pl.col("folds_since_entry") == 0))
    assert km.get_column("at_risk").to_list() == [26]


def test_the_synthetic_benchmark_data_add_up_too() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_survival import synthetic

    data = synthetic(300, 5, 11)
    # write two values into every third final carrier: some of them were lost before, and are back
    folds = data.folds.with_columns(
        pl.when((pl.col("fold") == 4) & (pl.int_range(pl.len()) % 3 == 0))
        .then(pl.col("carrier") + "\n- 41432\n- 30116").otherwise(pl.col("carrier")).alias("carrier"))
    out = fact_survival(fact_timeline(folds, data.facts), data.rows, data.study, DEFAULT_PARAMS)
    arms = out.arms
    assert int(arms.get_column("reappeared").sum()) > 0
    assert (arms["captured"] == arms["losses"] + arms["survived"]).all()
    assert (out.cuts["captured"] == out.cuts["losses"] + out.cuts["survived"]).all()


# ---------------------------------------------------------------- the row as the cluster
def test_row_interval_of_the_issue_example() -> None:
    # 4 rows of 12 values; rows 0-2 keep every value to k = 3, row 3 loses all 12 at k = 1.
    # S(1) = 1 - 12/48 = 0.75. Values as independent (lifelines, Greenwood, log-log):
    # var(log S) = d/(n(n-d)) = 12/(48*36) = 1/144; se = sqrt(1/144)/|log 0.75| = 0.2897;
    # [0.75^exp(1.96*0.2897), 0.75^exp(-1.96*0.2897)] = [0.602, 0.850].
    # Rows as clusters (by hand): the influence of a value on S(1) is -S * (dN n - d Y)/(n(n-d)), n = 48,
    # d = 12: a lost value -0.75*(48-12)/(48*36) = -1/64, a kept one +0.75*12/(48*36) = 1/192; per row
    # -12/64 = -0.1875 (row 3) and +12/192 = 0.0625 (rows 0-2); var S = 0.1875^2 + 3*0.0625^2 = 0.046875;
    # se = sqrt(0.046875)/(0.75*|log 0.75|) = 1.0035; [0.75^exp(1.96*1.0035), 0.75^exp(-1.96*1.0035)]
    # = [0.128, 0.961], the issue's "about [0.13, 0.96]" (a row bootstrap gives [0.25, 1]: S* = 0.25 with
    # probability 13/256 > 0.025, S* = 1 with probability 81/256 > 0.025).
    durations = [3] * 36 + [1] * 12
    events = [False] * 36 + [True] * 12
    rows = [f"r{i // 12}" for i in range(48)]
    km = kaplan_meier(durations, events, 0.05, clusters=rows).row(1, named=True)
    assert km["survival"] == pytest.approx(0.75)
    assert (km["ci_values_lo"], km["ci_values_hi"]) == (pytest.approx(0.602, abs=5e-4), pytest.approx(0.850, abs=5e-4))
    assert (km["ci_rows_lo"], km["ci_rows_hi"]) == (pytest.approx(0.128, abs=5e-4), pytest.approx(0.961, abs=5e-4))
    assert (km["at_risk"], km["at_risk_rows"]) == (48, 4)
    var = row_cluster_variance(np.array(durations), np.array(events), np.repeat(np.arange(4), 12),
                               np.arange(4), np.array([1, 0.75, 0.75, 0.75]))
    assert var.tolist() == pytest.approx([0.0, 0.046875, 0.046875, 0.046875])


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.filterwarnings("ignore:It looks like your weights are not integers")
def test_row_variance_equals_the_jackknife_of_lifelines_weighted_fits(seed: int) -> None:
    # Independent oracle: the influence of row c on S(t) is dS/dw_c at w = 1, taken by a finite
    # difference of lifelines' weighted Kaplan-Meier (row c's values weighted 1 + eps); the variance
    # is the sum over rows of its square. No code of ours is shared with the estimate.
    from lifelines import KaplanMeierFitter

    rng = np.random.default_rng(seed)
    per = rng.integers(1, 6, size=8)
    rows = np.repeat(np.arange(8), per)
    dur = rng.integers(0, 6, size=rows.size)
    ev = (rng.random(rows.size) < 0.5) & (dur > 0)
    times = np.arange(int(dur.max()) + 1)

    def curve(weights: np.ndarray) -> np.ndarray:
        sf = KaplanMeierFitter().fit(dur, ev, weights=weights).survival_function_.iloc[:, 0]
        return np.array([sf[sf.index <= t].iloc[-1] for t in times])

    base = curve(np.ones(rows.size))
    eps = 1e-6
    infl = np.array([(curve(np.where(rows == c, 1 + eps, 1.0)) - base) / eps for c in range(8)])
    expected = (infl ** 2).sum(axis=0)
    got = row_cluster_variance(dur, ev, rows, times, base)
    alive = base > 0            # where S = 0 every weighting gives 0 (lifelines' difference is rounding noise)
    assert got[alive] == pytest.approx(expected[alive], rel=1e-4, abs=1e-9)
    assert (got[~alive] == 0).all()


def test_rows_as_clusters_widen_the_interval_when_a_row_loses_its_values_together() -> None:
    # the same 48 values: once spread as one loss per row over 12 rows, once as all losses in 3 rows;
    # the value-level interval cannot tell them apart, the row interval must be wider for the second
    durations = [3] * 36 + [1] * 12
    events = [False] * 36 + [True] * 12
    spread = [f"r{i % 12}" for i in range(48)]
    together = [f"r{3 + i // 4}" for i in range(36)] + [f"r{i // 4}" for i in range(12)]
    a = kaplan_meier(durations, events, 0.05, clusters=spread).row(1, named=True)
    b = kaplan_meier(durations, events, 0.05, clusters=together).row(1, named=True)
    assert (a["ci_values_lo"], a["ci_values_hi"]) == (b["ci_values_lo"], b["ci_values_hi"])
    # every row of ``spread`` lost exactly one of its 4 values: the rows behaved alike, so the variance with rows
    # as clusters is identically 0 and the interval is not estimable (issue 30; it used to be [S, S])
    assert a["ci_rows_lo"] is None and a["ci_rows_hi"] is None and "behaved alike" in a["ci_rows_reason"]
    assert b["ci_rows_hi"] - b["ci_rows_lo"] > 0.1 and b["ci_rows_reason"] is None


# ---------------------------------------------------------------- outputs say the same
def test_results_block_names_the_rule_and_the_interval_unit(survival) -> None:
    pkg, _out = survival
    block = survival_block(pkg, DEFAULT_PARAMS)
    assert "first absence" in block["loss_rule"] and "appeared_late" in block["loss_rule"]
    assert "rows as clusters" in block["intervals"]["ci_rows"]
    assert "values as independent" in block["intervals"]["ci_values"]
    assert block["level"] == pytest.approx(0.95)
    first = block["km"]["m"][0]
    assert (first["at_risk_rows"], first["at_risk"]) == (2, 26)
    assert {"ci_rows_lo", "ci_rows_hi", "ci_values_lo", "ci_values_hi"} <= set(first)


def test_report_table_and_figure_use_the_same_counts(built: Path) -> None:
    fs = json.loads((built / "results.json").read_text(encoding="utf-8"))["fact_survival"]
    m = fs["arms"]["m"]
    assert (m["captured"], m["losses"], m["survived"], m["reappeared"], m["appeared_late"]) == (26, 4, 22, 2, 2)
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    # issue 34: each list follows a blank line ("…behaved alike.\n- Arm **j**: S = …" read as one paragraph)
    lines = qmd.splitlines()
    assert [f"{a!r} / {b!r}" for a, b in itertools.pairwise(lines)
            if b.startswith("- ") and a.strip() and not a.startswith(("- ", "  "))] == []
    assert sum(ln.startswith("- Arm **") and "S = " in ln for ln in lines) == 3  # the curves' list, one per arm
    section = " ".join(qmd.split("## Where graded values are lost across folds", 1)[1].split("\n## ", 1)[0].split())
    assert ("Arm **m**: 26 of 28 values captured at entry; 4 of them lost and 22 never lost to the final carrier "
            "(2 of the lost values were back in the final carrier and count as lost)") in section
    assert "Arm **j**: 22 of 28 values captured at entry; 22 of them lost and 0 never lost" in section
    assert "2 appeared in a later fold's carrier" in section
    # two rows that lost their values alike: the row-cluster variance is 0, so no zero-width [0.78, 0.78] (issue 30)
    assert ("its interval with rows as clusters not estimable (every row behaved alike, so the variance with rows "
            "as clusters is 0) over 2 rows and 26 values") in section
    assert "[0.78, 0.78]" not in section
    md = unspanned((built / "tables" / "t_fact_survival.md").read_text(encoding="utf-8"))
    line = next(x for x in md.splitlines() if x.startswith("| this evidence | m"))
    assert "| 26/28 (0.929) | 4/26 | 22/26 | 2/4 |" in line
    curves = unspanned((built / "tables" / "t_fact_survival_curves.md").read_text(encoding="utf-8"))
    m_curve = next(x for x in curves.splitlines() if x.startswith("| this evidence | m"))
    assert "(k = 4; 2 rows, 26 values)" in m_curve and "(interval not estimable: every row behaved alike" in m_curve
    cuts = (built / "tables" / "t_fact_survival_cuts.md").read_text(encoding="utf-8")
    assert "| lost | never lost |" in cuts.splitlines()[0]


def test_figure_legend_gives_rows_and_values(survival) -> None:
    from analysis.figures.survival import fact_survival as figure
    from analysis.tables.context import ReportContext

    pkg, _out = survival
    spec = figure(ReportContext(pkg, {}, DEFAULT_PARAMS))
    legend = spec.figure.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "j (n = 2 rows, 22 values)", "m (n = 2 rows, 26 values)", "q (n = 2 rows, 26 values)"]
    assert "rows as clusters" in legend.get_title().get_text()
    bars = spec.figure.axes[1]
    labels = [p.get_label() for p in bars.containers]
    assert "not captured: appeared at a later fold" in labels and "never lost" in labels


def test_clusters_of_the_wrong_length_are_a_named_error() -> None:
    from analysis.estimators.common import EstimatorError

    with pytest.raises(EstimatorError, match="clusters has 2 entries for 3 durations; give one row per value"):
        kaplan_meier([1, 2, 3], [True, False, True], clusters=["a", "b"])
    # labels and integer codes of the same rows give the same interval
    a = kaplan_meier([1, 2, 3, 3], [True, False, True, False], clusters=["x", "x", "y", "z"])
    b = kaplan_meier([1, 2, 3, 3], [True, False, True, False], clusters=np.array([0, 0, 5, 9]))
    assert a.equals(b)


def test_survival_section_types_no_number(built: Path) -> None:
    # every number of the section with losses, returns and intervals comes from a filter (issue 19 text)
    from analysis.report.numbers import unsourced_numbers
    from analysis.report.render import render_report

    results = json.loads((built / "results.json").read_text(encoding="utf-8"))
    ev = {"path": "evidence", "kind": "study", "study_name": "s", "rows": 1, "valid_rows": 1, "checks": 1,
          "configurations": 1}
    typed = render_report(built, results, DEFAULT_PARAMS, ev, finalize_override=lambda value: "§")
    section = typed.qmd.split("## Where graded values are lost across folds", 1)[1].split("\n## ", 1)[0]
    section = section.split("{{< include", 1)[0]
    assert [t for t in re.findall(r"\d+(?:\.\d+)?%?", section)] == []
    rendered = render_report(built, results, DEFAULT_PARAMS, ev)
    text = rendered.qmd.split("## Where graded values are lost across folds", 1)[1].split("\n## ", 1)[0]
    assert unsourced_numbers(text.split("{{< include", 1)[0], rendered.trace) == []


def test_a_curve_without_a_loss_gets_the_exact_no_loss_bound_not_a_point() -> None:
    # issue 35's calibration: [1, 1] covered 0.30 of a planted S = 0.95. With no loss among the values of
    # R = 3 rows, the rows interval is [(alpha/2)^(1/R), 1]: the Clopper-Pearson lower bound for R successes
    # in R trials, scipy's beta.ppf(alpha/2, R, 1) (independent oracle); the values interval stays lifelines'.
    from scipy.stats import beta

    km = kaplan_meier([2, 2, 2, 2, 1, 2], [False] * 6, 0.05, clusters=["a", "a", "b", "b", "c", "c"])
    b3 = beta.ppf(0.025, 3, 1)
    # at entry (k = 0) S = 1 by definition: no interval (issue 30's rule), and the values interval at S = 1
    # has variance 0 (lifelines' [1, 1]): not estimable, with the reason
    assert km["ci_rows_lo"].to_list() == [None, pytest.approx(b3), pytest.approx(b3)]
    assert km["ci_rows_hi"].to_list() == [None, 1.0, 1.0]
    assert km["ci_values_lo"].to_list() == [None, None, None]
    assert all("no value has been lost" in r for r in km["ci_values_reason"].to_list())
    # R is the rows still at risk at k, not at k = 1 (a reviewer found R_1 anti-conservative): row c
    # leaves after fold 1, so S(2) rests on 2 rows, beta.ppf(alpha/2, 2, 1)
    km = kaplan_meier([2, 2, 2, 2, 1, 1], [False] * 6, 0.05, clusters=["a", "a", "b", "b", "c", "c"])
    assert km["ci_rows_lo"].to_list() == [None, pytest.approx(b3), pytest.approx(beta.ppf(0.025, 2, 1))]
    # after a loss the log-log cluster interval applies again (the issue example's S(1) = 0.75 is unchanged)
    durations, events = [3] * 36 + [1] * 12, [False] * 36 + [True] * 12
    row = kaplan_meier(durations, events, 0.05, clusters=[f"r{i // 12}" for i in range(48)]).row(1, named=True)
    assert row["ci_rows_lo"] == pytest.approx(0.128, abs=5e-4)
