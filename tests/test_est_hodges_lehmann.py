"""Hodges–Lehmann estimate of the panel effect and its exact signed-rank interval
(analysis/estimators/hodges_lehmann.py).

Oracles: (1) by hand, n = 6 effects 1..6: the 21 Walsh averages are symmetric about 3.5, so the
estimate is 3.5; P(W = 0) = 1/64 <= 0.025 < P(W <= 1) = 2/64, so c = 0 and the interval is
[min, max] of the Walsh averages = [1, 6] with exact confidence 1 - 2/64 = 0.96875; and n = 5
cannot reach 95% (P(W = 0) = 1/32 > 0.025). (2) scipy.stats.wilcoxon, exact two-sided: the
interval is the set of shifts d the test does not reject at alpha, so a shift just inside each
bound gives p > alpha and one just outside gives p <= alpha. (3) the null counts of W against
scipy's exact signed-rank distribution.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.hodges_lehmann import hodges_lehmann, signed_rank_counts, walsh_averages


def test_hand_derivation_n6() -> None:
    r = hodges_lehmann([1, 2, 3, 4, 5, 6], alpha=0.05)
    assert r.n == 6 and r.estimate == 3.5
    assert (r.lo, r.hi) == (1.0, 6.0)
    assert r.achieved == pytest.approx(1 - 2 / 64) and r.nominal == pytest.approx(0.95)
    assert r.reason is None


def test_too_few_configurations_have_no_interval() -> None:
    r = hodges_lehmann([0.1, -0.2, 0.3, 0.05, 0.2], alpha=0.05)
    assert r.lo is None and r.hi is None and r.achieved is None and "cannot reach" in (r.reason or "")
    assert r.estimate == pytest.approx(float(np.median(walsh_averages(np.array([0.1, -0.2, 0.3, 0.05, 0.2])))))
    empty = hodges_lehmann([], alpha=0.05)
    assert math.isnan(empty.estimate) and empty.reason == "no configuration in the panel"


def test_null_counts_match_scipy() -> None:
    n = 9
    counts = np.array(signed_rank_counts(n), dtype=float)
    assert counts.sum() == 2**n
    cdf = np.cumsum(counts) / 2**n
    # scipy's exact signed-rank null: the two-sided p of statistic k (k below the mean) is 2 P(W <= k)
    ranks = np.arange(1, n + 1)
    for k in (0, 3, 8, 15):  # a sample whose positive ranks sum to k: greedy subset of the ranks
        positive, remaining = set(), k
        for rank in range(n, 0, -1):
            if rank <= remaining:
                positive.add(rank)
                remaining -= rank
        sample = np.array([r if r in positive else -r for r in ranks], dtype=float)
        p = stats.wilcoxon(sample, method="exact").pvalue
        assert p == pytest.approx(min(1.0, 2 * cdf[k]))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interval_inverts_scipy_wilcoxon(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.1, 0.2, size=14)
    alpha = 0.05
    r = hodges_lehmann(x, alpha)
    assert r.lo is not None and r.hi is not None and r.achieved is not None and r.achieved >= 0.95
    eps = 1e-9

    def p(d: float) -> float:
        return float(stats.wilcoxon(x - d, method="exact").pvalue)

    assert p(r.lo + eps) > alpha and p(r.hi - eps) > alpha  # inside: not rejected
    assert p(r.lo - eps) <= alpha and p(r.hi + eps) <= alpha  # outside: rejected
    assert p(r.estimate) > alpha


def test_registered_once_it_reaches_results_and_the_inference_table() -> None:
    """The registration alone puts the statistic in results.json and a row of t_beyond_inference."""
    from analysis.evidence import load_package
    from analysis.params import DEFAULT_PARAMS
    from analysis.results import build_results
    from analysis.tables.context import ReportContext
    from analysis.tables.panel_inference import panel_inference
    from est_handmade_support import HANDMADE

    pkg = load_package(HANDMADE)
    res = build_results(pkg, DEFAULT_PARAMS)
    effects = [e["effect"] for e in res["panel"]["effects"].values() if e["effect"] is not None]
    want = hodges_lehmann(effects, DEFAULT_PARAMS.alpha)
    assert res["hodges_lehmann"]["n"] == want.n and res["hodges_lehmann"]["estimate"] == pytest.approx(want.estimate)
    table = panel_inference(ReportContext(pkg, res, DEFAULT_PARAMS))
    row = table.data.filter(table.data["method"] == "hodges_lehmann")
    assert row.height == 1 and row["estimate"][0] == pytest.approx(want.estimate)


def test_its_registered_sentence_is_in_the_key_results(tmp_path, prebuilt) -> None:  # type: ignore[no-untyped-def]
    from est_handmade_support import HANDMADE

    prebuilt.copy(HANDMADE, tmp_path / "out")  # build(HANDMADE, tmp_path / "out", DEFAULT_PARAMS), shared (conftest)
    qmd = (tmp_path / "out" / "report" / "index.qmd").read_text(encoding="utf-8")
    box = qmd.split("**Key results.**", 1)[1].split(":::", 1)[0]
    assert "- **Hodges–Lehmann** (ours): " in box
