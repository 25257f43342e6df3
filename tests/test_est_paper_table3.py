"""The paper's section 4.7 summaries recomputed from its Table 3, through the whole pipeline.

Oracle: the published numbers (paper 4.7; docs/RESULTS_CONTRACT.md example): panel mean +0.135,
median +0.027, IQR [-0.054, +0.205], range [-0.411, +0.929], 10/7/3 signs, LOO
[+0.094, +0.164], dispersion [-0.036, +0.307]; >= 4 pairs 17 configurations,
+0.070, median 0.000; equal counts 16, +0.069, 0.000; mimo-v2.5 excluded 19,
+0.094; 11 families +0.091, LOFO [+0.060, +0.117], dispersion [-0.030, +0.211].

Table 3 prints each effect to 3 decimals; the exact effect is a ratio of
integers sum(q - j passed) / (14 * pairs), so D = round(effect * 14 * pairs)
recovers it (e.g. +0.786 with 4 pairs is 44/56). Rows are then synthesised per
configuration with those pairs, D and Table 3's valid row counts (extra rows of
one arm sit in repeats whose other arm is invalid). Families are the key prefix.
"""

from __future__ import annotations

import datetime

import polars as pl
import pytest

from analysis.estimators import families, paired
from analysis.estimators.common import Contrast
from analysis.params import DEFAULT_PARAMS
from est_loader_support import ROWS_SCHEMA

# configuration, complete pairs, paired q - j, j rows, q rows (paper Table 3)
TABLE3 = """\
deepseek/deepseek-v4-flash 4 +0.786 4 4
deepseek/deepseek-v4-pro 4 +0.000 4 4
google/gemma-4-26b-a4b-it 4 -0.089 4 4
google/gemma-4-31b-it 4 +0.000 4 4
ibm-granite/granite-4.1-8b 12 -0.054 12 12
inclusionai/ling-2.6-1t 4 +0.000 4 4
inclusionai/ling-2.6-flash 12 +0.161 12 12
minimax/minimax-m3 4 +0.232 4 4
mistralai/mistral-small-2603 4 -0.054 4 4
nvidia/nemotron-3-super-120b-a12b 4 -0.393 4 4
nvidia/nemotron-3-ultra-550b-a55b 4 +0.054 4 4
qwen/qwen3.5-122b-a10b 4 +0.714 4 4
qwen/qwen3.5-35b-a3b 3 +0.619 3 4
qwen/qwen3.5-397b-a17b 4 +0.196 4 4
qwen/qwen3.5-9b 4 +0.179 4 4
qwen/qwen3.6-27b 4 -0.214 4 4
tencent/hy3 3 -0.024 3 4
xiaomi/mimo-v2.5 1 +0.929 2 1
xiaomi/mimo-v2.5-pro 4 -0.411 4 4
z-ai/glm-5.2 11 +0.078 11 12
"""
K = 14
CUTOFF = datetime.date(2026, 1, 28)


def spread(total: int, slots: int) -> list[int]:
    """Split a non-negative integer into `slots` values in 0..14 (as evenly as possible)."""
    base, extra = divmod(total, slots)
    out = [base + (i < extra) for i in range(slots)]
    if max(out) > K:
        raise ValueError("difference too large for the pairs")
    return out


def table3_package() -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, runs = [], []
    for i, line in enumerate(TABLE3.splitlines()):
        name, pairs, effect, jr, qr = line.split()
        pairs, jr, qr = int(pairs), int(jr), int(qr)
        d = round(float(effect) * K * pairs)
        gains = spread(abs(d), pairs)
        q = [g if d >= 0 else 0 for g in gains]
        j = [0 if d >= 0 else g for g in gains]
        planned = pairs + (jr - pairs) + (qr - pairs)
        runs.append((name, f"g{i}", planned, name.split("/")[0], CUTOFF))

        def add(rep, arm, passed, valid=True, name=name, i=i):
            rows.append({"row_id": f"{name}-{rep}-{arm}", "scenario": "S5", "configuration": name,
                         "execution_group": f"g{i}", "repeat": rep, "arm": arm, "valid": valid,
                         "checks_total": K, "checks_passed": passed})
        for rep in range(1, pairs + 1):
            add(rep, "j", j[rep - 1])
            add(rep, "q", q[rep - 1])
        rep = pairs
        for arm, other, count in (("j", "q", jr - pairs), ("q", "j", qr - pairs)):
            for _ in range(count):
                rep += 1
                add(rep, arm, 7)
                add(rep, other, 14, valid=False)   # the partner is invalid: no pair
    frame = pl.DataFrame(rows, schema={k: ROWS_SCHEMA[k] for k in rows[0]})
    run_frame = pl.DataFrame(runs, orient="row", schema={
        "configuration": pl.String, "execution_group": pl.String, "planned_repeats": pl.Int64,
        "family": pl.String, "published": pl.Date})
    return frame, run_frame


@pytest.fixture(scope="module")
def panel():
    rows, runs = table3_package()
    return paired.panel(rows, runs, Contrast("j", "q", "S5"), recency_cutoff=CUTOFF,
                        params=DEFAULT_PARAMS)


P = dict(abs=5e-4)  # the paper prints 3 decimals


def test_panel_reproduces_section_47(panel):
    s = panel.summary
    assert s.configurations == 20
    assert s.mean == pytest.approx(0.135, **P) and s.median == pytest.approx(0.027, **P)
    assert (s.q1, s.q3) == (pytest.approx(-0.054, **P), pytest.approx(0.205, **P))
    assert (s.min, s.max) == (pytest.approx(-0.411, **P), pytest.approx(0.929, **P))
    assert (s.positive, s.negative, s.zero) == (10, 7, 3)
    assert (s.loo_min, s.loo_max) == (pytest.approx(0.094, **P), pytest.approx(0.164, **P))
    assert s.dispersion_lo == pytest.approx(-0.036, **P)
    assert s.dispersion_hi == pytest.approx(0.307, **P)
    counts = {e.configuration: (e.pairs, e.control_rows, e.treatment_rows) for e in panel.effects}
    assert counts["xiaomi/mimo-v2.5"] == (1, 2, 1) and counts["z-ai/glm-5.2"] == (11, 11, 12)


def test_sparse_cells_reproduce_section_47(panel):
    k4 = paired.min_pairs_subset(panel, 4, 0.05).summary
    assert (k4.configurations, k4.median) == (17, 0.0) and k4.mean == pytest.approx(0.070, **P)
    eq = paired.equal_counts_subset(panel, 0.05).summary
    assert (eq.configurations, eq.median) == (16, 0.0) and eq.mean == pytest.approx(0.069, **P)
    ex = paired.excluded_subset(panel, ["xiaomi/mimo-v2.5"], 0.05).summary
    assert (ex.configurations, ex.median) == (19, 0.0) and ex.mean == pytest.approx(0.094, **P)
    each = paired.each_excluded(panel)
    at = each.configurations.index("xiaomi/mimo-v2.5")
    assert each.mean[at] == pytest.approx(ex.mean, abs=1e-12) and each.median[at] == ex.median


def test_families_reproduce_section_47(panel):
    f = families.family_weighted(panel.frame, 0.05)
    assert f.families == 11 and f.mean == pytest.approx(0.091, **P)
    assert (f.lofo_min, f.lofo_max) == (pytest.approx(0.060, **P), pytest.approx(0.117, **P))
    assert f.dispersion_lo == pytest.approx(-0.030, **P)
    assert f.dispersion_hi == pytest.approx(0.211, **P)
