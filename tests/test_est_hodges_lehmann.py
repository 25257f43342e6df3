"""Hodges–Lehmann estimate of the panel effect and its signed-rank interval
(analysis/estimators/hodges_lehmann.py).

Oracles: (1) by hand, n = 6 effects 1..6: the 21 Walsh averages are symmetric about 3.5, so the
estimate is 3.5; P(W = 0) = 1/64 <= 0.025 < P(W <= 1) = 2/64, so c = 0 and the interval is
[min, max] of the Walsh averages = [1, 6] with exact confidence 1 - 2/64 = 0.96875; and n = 5
cannot reach 95% (P(W = 0) = 1/32 > 0.025). (2) scipy.stats.wilcoxon, exact two-sided: the
interval is the set of shifts d the test does not reject at alpha, so a shift just inside each
bound gives p > alpha and one just outside gives p <= alpha. (3) the null counts of W against
scipy's exact signed-rank distribution. (4) R 4.x ``wilcox.test(e, conf.int = TRUE)`` on the data/v1
panel's 20 configuration effects (3 are 0, two pairs tied): it refuses the exact interval and gives
[-0.068, 0.390] (the issue's re-derivation); scipy.stats.wilcoxon(zero_method="wilcox", correction=True,
method="approx") gives the same z statistic at every shift. (5) the brute-force sorted Walsh averages
for the selection that replaces them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from analysis.estimators.hodges_lehmann import (
    EXACT,
    NORMAL,
    hodges_lehmann,
    signed_rank_counts,
    signed_rank_z,
    walsh_averages,
    walsh_order_statistic,
)
from analysis.params import DEFAULT_PARAMS
from support.paths import REPO


def test_hand_derivation_n6() -> None:
    r = hodges_lehmann([1, 2, 3, 4, 5, 6], alpha=0.05)
    assert r.n == 6 and r.estimate == 3.5
    assert (r.lo, r.hi) == (1.0, 6.0)
    assert r.achieved == pytest.approx(1 - 2 / 64) and r.nominal == pytest.approx(0.95)
    assert r.reason is None and r.method == EXACT


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
    assert "- **Hodges–Lehmann** (ours; estimates the pseudo-median of the configuration effects" in box
    assert "not estimable: 3 non-zero configuration effects" in box  # handmade: +0.5, -0.5 (tied), +0.75


def _v1_effects() -> np.ndarray:
    """The data/v1 primary panel's configuration effects, computed by the package's own panel estimator."""

    from analysis.evidence import load_package
    from analysis.results.inputs import ResultsInputs

    v1 = REPO / "data" / "v1"
    inputs = ResultsInputs(load_package(v1), DEFAULT_PARAMS)
    return inputs.panel.frame.get_column("effect").to_numpy()


def test_v1_panel_with_zeros_and_ties_gives_r_normal_approximation_interval() -> None:
    e = _v1_effects()
    assert np.sum(e == 0) == 3 and np.unique(e).size < e.size  # zeros and ties: no exact interval exists
    r = hodges_lehmann(e, 0.05)
    assert r.method == NORMAL and r.achieved is None and r.reason is None
    assert r.lo is not None and r.hi is not None
    assert (round(r.lo, 3), round(r.hi, 3)) == (-0.068, 0.390)  # R wilcox.test(e, conf.int = TRUE)
    assert r.estimate == pytest.approx(float(np.median(walsh_averages(np.sort(e)))))
    assert "pseudo-median" in r.estimand


@pytest.mark.parametrize("shift", [0.0, 0.05, -0.03, 0.2])
def test_normal_statistic_matches_scipy(shift: float) -> None:
    e = np.array([0.3, 0.3, -0.1, 0.0, 0.2, 0.25, -0.25, 0.4, 0.05, 0.0, 0.7, -0.05])
    x = e - shift
    res = stats.wilcoxon(x, zero_method="wilcox", correction=True, method="approx")
    z = signed_rank_z(e, shift)
    assert 2 * stats.norm.sf(abs(z)) == pytest.approx(res.pvalue, rel=1e-9)


def test_ties_alone_also_leave_the_exact_interval() -> None:
    r = hodges_lehmann([0.1, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, -0.2, 0.4], 0.05)
    assert r.method == NORMAL and r.achieved is None and r.lo is not None


def test_all_effects_alike_is_not_estimable_with_reason() -> None:
    r = hodges_lehmann([0.2] * 8, 0.05)
    assert r.estimate == pytest.approx(0.2)
    assert r.lo is None and r.hi is None and r.method is None
    assert "same" in (r.reason or "")
    zeros = hodges_lehmann([0.0, 0.0, 0.0], 0.05)
    assert zeros.lo is None and "every configuration effect is 0" in (zeros.reason or "")
    one = hodges_lehmann([0.3], 0.05)
    assert one.lo is None and "at least 2" in (one.reason or "")


@pytest.mark.parametrize("n", [7, 60, 401])
def test_selection_equals_sorted_walsh_averages(n: int) -> None:
    rng = np.random.default_rng(n)
    e = np.sort(np.round(rng.normal(size=n), 2))  # rounding: many ties among the averages
    w = walsh_averages(e)
    for rank in (1, 2, w.size // 3, w.size // 2, w.size // 2 + 1, w.size - 1, w.size):
        assert walsh_order_statistic(e, rank) == w[rank - 1]


def test_1030_configurations_do_not_overflow_and_10000_run_fast() -> None:
    """Issue 31 item 10: float(2**1030) overflowed; the n^2 Walsh averages made 3,000 too slow."""
    import time

    rng = np.random.default_rng(0)
    r = hodges_lehmann(rng.normal(0.1, 0.3, size=1030), 0.05)
    assert r.lo is not None and r.hi is not None and r.lo < r.estimate < r.hi and r.method == NORMAL
    e = np.round(rng.normal(0.1, 0.3, size=10_000), 3)
    start = time.process_time()
    big = hodges_lehmann(e, 0.05)
    assert time.process_time() - start < 60.0
    assert big.lo is not None and big.hi is not None and big.lo < big.estimate < big.hi
    # the statistic at each bound sits at the normal quantile (it is the root R's uniroot finds)
    q = stats.norm.ppf(0.975)
    assert signed_rank_z(e, big.lo - 1e-9) >= q - 1e-9 and signed_rank_z(e, big.lo + 1e-6) <= q + 1e-9
