"""Property tests of the core estimators (hypothesis), against invariants and a naive reference.

The reference below re-implements docs/RESULTS_CONTRACT.md's panel and bounds definitions with
plain Python loops over the rows (slow, obvious); the estimators are vectorised.
"""

from __future__ import annotations

import datetime
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.estimators import bounds, cells, dependence, exact, families, paired
from analysis.estimators.common import Contrast
from analysis.params import DEFAULT_PARAMS
from est_loader_support import ROWS_SCHEMA

CUTOFF = datetime.date(2026, 1, 28)
T = 4                                       # checks per row in these synthetic packages
CONTRAST = Contrast("j", "q", "S5")
RUN_SCHEMA = {"configuration": pl.String, "execution_group": pl.String,
              "planned_repeats": pl.Int64, "family": pl.String, "published": pl.Date}
STATES = ("valid", "valid", "valid", "absent", "invalid", "no_outcome")


@st.composite
def designs(draw, complete: bool = False, in_window_only: bool = False, prefix: str = "c"):
    n = draw(st.integers(1, 5))
    runs, rows = [], []
    for i in range(n):
        name = f"{prefix}{i}"
        inside = True if in_window_only else draw(st.booleans())
        published = CUTOFF if inside else CUTOFF - datetime.timedelta(days=1)
        planned = draw(st.integers(1, 4))
        runs.append((name, f"g{i}", planned, draw(st.sampled_from("abc")), published))
        for rep in range(1, planned + 1):
            for arm in ("j", "q", "m"):
                state = "valid" if complete else draw(st.sampled_from(STATES))
                if state == "absent":
                    continue
                passed = draw(st.integers(0, T))
                rows.append({"row_id": f"{name}-{rep}-{arm}", "scenario": "S5",
                             "configuration": name, "execution_group": f"g{i}", "repeat": rep,
                             "arm": arm, "valid": state != "invalid", "checks_total": T,
                             "checks_passed": None if state == "no_outcome" else passed})
        # A row in another execution group of the same configuration never pairs.
        rows.append({"row_id": f"{name}-other-q", "scenario": "S5", "configuration": name,
                     "execution_group": "elsewhere", "repeat": 1, "arm": "q", "valid": True,
                     "checks_total": T, "checks_passed": T})
    schema = {k: ROWS_SCHEMA[k] for k in rows[0]}
    return (pl.DataFrame(rows, schema=schema),
            pl.DataFrame(runs, schema=RUN_SCHEMA, orient="row"))


def build(rows, runs, contrast=CONTRAST):
    p = paired.panel(rows, runs, contrast, recency_cutoff=CUTOFF, params=DEFAULT_PARAMS)
    return p, bounds.planned_repeat_bounds(rows, p), families.family_weighted(p.frame, 0.05)


def naive(rows: pl.DataFrame, runs: pl.DataFrame):
    """docs/RESULTS_CONTRACT.md definitions, loop by loop: {config: (effect, pairs, j rows, q rows, lo, hi)}."""
    out = {}
    recs = rows.to_dicts()
    for name, group, planned, _family, published in runs.iter_rows():
        if published < CUTOFF:
            continue
        got = {}
        for r in recs:
            if (r["configuration"], r["execution_group"], r["scenario"]) == (name, group, "S5") \
                    and r["valid"] and r["checks_passed"] is not None and r["arm"] in ("j", "q") \
                    and 1 <= r["repeat"] <= planned:
                got[(r["repeat"], r["arm"])] = Fraction(r["checks_passed"], r["checks_total"])
        diffs = [got[(k, "q")] - got[(k, "j")] for k in range(1, planned + 1)
                 if (k, "q") in got and (k, "j") in got]
        if not diffs:
            continue
        lo = sum(got.get((k, "q"), 0) - got.get((k, "j"), 1) for k in range(1, planned + 1))
        hi = sum(got.get((k, "q"), 1) - got.get((k, "j"), 0) for k in range(1, planned + 1))
        out[name] = (sum(diffs) / len(diffs), len(diffs),
                     sum(1 for (_, a) in got if a == "j"), sum(1 for (_, a) in got if a == "q"),
                     lo / planned, hi / planned)
    return out


@settings(max_examples=60, deadline=None)
@given(designs())
def test_matches_naive_reference(design):
    rows, runs = design
    p, b, _ = build(rows, runs)
    ref = naive(rows, runs)
    got = {e.configuration: e for e in p.effects}
    assert set(got) == set(ref)
    per = {r["configuration"]: r for r in b.per_configuration.iter_rows(named=True)}
    for name, (eff, pairs, jr, qr, lo, hi) in ref.items():
        e = got[name]
        assert (e.effect_exact, e.pairs, e.control_rows, e.treatment_rows) == (eff, pairs, jr, qr)
        assert per[name]["lo"] == pytest.approx(float(lo)) and per[name]["hi"] == pytest.approx(float(hi))
    if ref:
        effects = [float(v[0]) for v in ref.values()]
        assert p.summary.mean == pytest.approx(np.mean(effects))
        assert p.summary.positive == sum(v[0] > 0 for v in ref.values())
        assert p.summary.zero == sum(v[0] == 0 for v in ref.values())
        assert b.lo == pytest.approx(np.mean([float(v[4]) for v in ref.values()]))
    else:
        assert p.summary.configurations == 0 and np.isnan(p.summary.mean) and np.isnan(b.lo)


@settings(max_examples=60, deadline=None)
@given(designs())
def test_swapping_arms_negates_effects_and_swaps_bounds(design):
    rows, runs = design
    p, b, f = build(rows, runs)
    ps, bs, fs = build(rows, runs, CONTRAST.swapped())
    assert [e.configuration for e in p.effects] == [e.configuration for e in ps.effects]
    assert all(a.effect_exact == -s.effect_exact for a, s in zip(p.effects, ps.effects, strict=True))
    assert all((a.control_rows, a.treatment_rows) == (s.treatment_rows, s.control_rows)
               for a, s in zip(p.effects, ps.effects, strict=True))
    s, w = p.summary, ps.summary
    assert (s.positive, s.negative, s.zero) == (w.negative, w.positive, w.zero)
    pairs = [(s.mean, -w.mean), (s.median, -w.median), (s.q1, -w.q3), (s.q3, -w.q1),
             (s.min, -w.max), (s.max, -w.min), (s.loo_min, -w.loo_max), (s.loo_max, -w.loo_min),
             (s.dispersion_lo, -w.dispersion_hi), (s.dispersion_hi, -w.dispersion_lo),
             (b.lo, -bs.hi), (b.hi, -bs.lo), (f.mean, -fs.mean), (f.lofo_min, -fs.lofo_max),
             (f.dispersion_lo, -fs.dispersion_hi)]
    for x, y in pairs:
        assert x == pytest.approx(y, abs=1e-12, nan_ok=True)


@settings(max_examples=40, deadline=None)
@given(designs(complete=True, in_window_only=True))
def test_bounds_equal_the_estimate_when_nothing_is_missing(design):
    rows, runs = design
    p, b, _ = build(rows, runs)
    assert b.missing_control == b.missing_treatment == b.missing_both == 0
    assert b.lo == pytest.approx(p.summary.mean, abs=1e-12)
    assert b.hi == pytest.approx(p.summary.mean, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(designs(in_window_only=True), designs(prefix="old"))
def test_out_of_window_configurations_change_nothing(design, extra):
    rows, runs = design
    xrows, xruns = extra
    xruns = xruns.with_columns(published=pl.lit(CUTOFF - datetime.timedelta(days=30)))
    p, b, f = build(rows, runs)
    p2, b2, f2 = build(pl.concat([rows, xrows]), pl.concat([runs, xruns]))
    assert p.frame.equals(p2.frame) and p.summary == p2.summary
    assert (b.lo, b.hi) == (b2.lo, b2.hi) or (np.isnan(b.lo) and np.isnan(b2.lo))
    assert f.family_means.equals(f2.family_means)
    m1 = exact.paired_mcnemar(rows, "j", "q", scenario="S5", threshold=0.5, runs=p.frame)
    m2 = exact.paired_mcnemar(pl.concat([rows, xrows]), "j", "q", scenario="S5", threshold=0.5,
                              runs=p2.frame)
    assert m1 == m2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, T), st.integers(0, T)), min_size=1, max_size=25),
       st.integers(0, 10), st.integers(0, 10), st.sampled_from([0.5, 1.0]))
def test_mcnemar_ignores_added_concordant_pairs(pairs, n_both, n_neither, threshold):
    def rows_of(blocks):
        recs = [{"row_id": f"{i}-{arm}", "scenario": "S5", "configuration": "c",
                 "execution_group": "g", "repeat": i + 1, "arm": arm, "valid": True,
                 "checks_total": T, "checks_passed": v}
                for i, (a, q) in enumerate(blocks) for arm, v in (("j", a), ("q", q))]
        return pl.DataFrame(recs, schema={k: ROWS_SCHEMA[k] for k in recs[0]})
    base = exact.paired_mcnemar(rows_of(pairs), "j", "q", scenario="S5", threshold=threshold)
    more = exact.paired_mcnemar(rows_of(pairs + [(T, T)] * n_both + [(0, 0)] * n_neither),
                                "j", "q", scenario="S5", threshold=threshold)
    for a, b in ((base.complete, more.complete), (base.missing_as_failure, more.missing_as_failure)):
        assert (a.b, a.c, a.p_value, a.mid_p) == (b.b, b.c, b.p_value, b.mid_p)
        assert (b.both - a.both, b.neither - a.neither) == (n_both, n_neither)


def checks_for(passed_per_row: list[int], k: int):
    rows = pl.DataFrame({"row_id": [f"r{i}" for i in range(len(passed_per_row))],
                         "scenario": "S5", "configuration": "c", "execution_group": "g",
                         "repeat": 1, "arm": "j", "valid": True, "checks_total": k,
                         "checks_passed": passed_per_row},
                        schema_overrides={"checks_total": pl.Int64, "checks_passed": pl.Int64,
                                          "repeat": pl.Int64})
    row_ids = np.repeat(rows["row_id"].to_numpy(), k)
    passed = np.concatenate([np.arange(k) < s for s in passed_per_row])
    checks = pl.DataFrame({"row_id": row_ids, "check": np.tile([f"c{j}" for j in range(k)],
                                                               len(passed_per_row)),
                           "passed": passed})
    return rows, checks


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(2, 14))
def test_icc_is_one_when_rows_are_all_0_or_all_1(zeros, ones, k):
    rows, checks = checks_for([0] * zeros + [k] * ones, k)
    d = dependence.within_row_dependence(rows, checks, "S5")
    assert d.icc == pytest.approx(1.0) and d.design_effect == pytest.approx(k)
    assert d.effective_per_row == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 20), st.integers(2, 14), st.booleans())
def test_icc_zero_variance_is_undefined(n, k, value):
    rows, checks = checks_for([k if value else 0] * n, k)
    d = dependence.within_row_dependence(rows, checks, "S5")
    assert np.isnan(d.icc) and d.reasons["icc"] == "zero variance"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 14), min_size=2, max_size=30))
def test_icc_matches_full_matrix_anova(passed):
    # Independent route: the n x k 0/1 matrix and textbook one-way ANOVA mean squares.
    k = 14
    y = np.array([[1.0 if j < s else 0.0 for j in range(k)] for s in passed])
    n = y.shape[0]
    row_means = y.mean(axis=1)
    msb = k * ((row_means - y.mean()) ** 2).sum() / (n - 1)
    msw = ((y - row_means[:, None]) ** 2).sum() / (n * (k - 1))
    est = dependence.icc_oneway(np.array(passed), k)
    assert est.msb == pytest.approx(msb, abs=1e-12) and est.msw == pytest.approx(msw, abs=1e-12)
    if msb + (k - 1) * msw > 0:
        assert est.icc == pytest.approx((msb - msw) / (msb + (k - 1) * msw), abs=1e-12)
    else:
        assert np.isnan(est.icc)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-8, 8), min_size=1, max_size=15))
def test_each_excluded_matches_naive_deletion(values):
    # Ties are common here (small integer range), which is where index arithmetic goes wrong.
    x = np.array(values, dtype=float) / 8
    frame = pl.DataFrame({"configuration": [f"c{i:02d}" for i in range(x.size)], "effect": x,
                          "diff_sum": np.array(values, dtype=np.int64)})
    p = paired.Panel(contrast=CONTRAST, recency_cutoff=CUTOFF, checks_total=8, effects=(),
                     frame=frame, summary=paired.summarize(frame, 0.05))
    each = paired.each_excluded(p)
    for i in range(x.size):
        rest = np.delete(x, i)
        if rest.size == 0:
            assert np.isnan(each.mean[i]) and np.isnan(each.median[i])
            continue
        assert each.mean[i] == pytest.approx(rest.mean(), abs=1e-12)
        assert each.median[i] == pytest.approx(np.percentile(rest, 50), abs=1e-12)
        assert each.remaining == rest.size


@settings(max_examples=40, deadline=None)
@given(designs())
def test_cells_match_naive_reference(design):
    rows, _ = design
    table = cells.cell_summary(rows, DEFAULT_PARAMS, by_execution_group=True).table
    got = {(r["configuration"], r["execution_group"], r["arm"]): r for r in table.iter_rows(named=True)}
    ref: dict[tuple, list[int]] = {}
    for r in rows.iter_rows(named=True):
        if r["valid"] and r["checks_passed"] is not None:
            ref.setdefault((r["configuration"], r["execution_group"], r["arm"]), []).append(r["checks_passed"])
    assert set(got) == set(ref)
    for key, passed in ref.items():
        g = got[key]
        assert g["rows"] == len(passed)
        assert g["mean_recall"] == pytest.approx(np.mean(passed) / T)
        assert g["rows_partial"] == sum(2 * v >= T for v in passed)
        assert g["rows_full"] == sum(v == T for v in passed)
