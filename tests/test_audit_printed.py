"""Issue 19: audit statuses computed from the paper's printed cells, never listed by hand."""
from __future__ import annotations

import shutil
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from audit_support import published_claims, v1_audit
from scipy.stats import pearsonr, spearmanr

from analysis.audit.claims_audit import audit_claims
from analysis.audit.printed import PRINTED, PrintedCells
from analysis.audit.printed_fills import fill_readings, printed_fill_search
from analysis.evidence import load_package, write_lock
from analysis.params import DEFAULT_PARAMS
from analysis.reconstruct.claims import parse_claims
from support.paths import REPO as ROOT

CLAIMS_PATH = ROOT / "data" / "published" / "claims.yaml"
CLAIMS = published_claims()  # load_claims(CLAIMS_PATH), once per session (audit_support)
CONSISTENT = "consistent with the printed cells"

# Finding 1: the 45 claims the old audit called "reproduced by independent computation" are arithmetic of
# Table 3 and the two McNemar tables.
FINDING_1 = [
    "panel.range.lo", "panel.range.hi", "panel.n_positive", "panel.n_negative", "panel.n_zero",
    "sparse.n_sparse_configs", "sparse.ge4_pairs.configs", "sparse.equal_arm_counts.configs",
    "sparse.excl_mimo_v2_5.configs", "threshold.high_fill.configs", "threshold.high_fill.crossing",
    "threshold.low_fill.configs", "threshold.low_fill.crossing", "threshold.low_fill.positive_effect",
    "threshold.fail8.nonnegative", "threshold.fail8.gain_ge_0_10", "threshold.fail8.gain_ge_0_20",
    "borderline.glm_5_2.unpaired_gap", "borderline.margin.all", "borderline.margin.excl_borderline",
    "panel.mean", "panel.loo.lo", "panel.loo.hi", "sparse.ge4_pairs.mean", "sparse.equal_arm_counts.mean",
    "sparse.excl_mimo_v2_5.mean", "family.mean", "family.lofo.lo", "family.lofo.hi",
    "bounds.planned_repeat.lo", "bounds.planned_repeat.hi",
    "panel.median", "panel.iqr.lo", "panel.iqr.hi", "sparse.ge4_pairs.median", "sparse.equal_arm_counts.median",
    "sparse.excl_mimo_v2_5.median", "panel.dispersion_interval.lo", "panel.dispersion_interval.hi",
    "family.dispersion_interval.lo", "family.dispersion_interval.hi",
    "ladder.mcnemar.p", "ceiling.mcnemar.p", "ceiling.mcnemar.p_missing_j_as_failure",
    "ceiling.mcnemar.p_missing_j_as_success",
]


@pytest.fixture(scope="module")
def audit():
    return v1_audit()  # audit_claims(load_package(ROOT / "data" / "v1"), CLAIMS, DEFAULT_PARAMS), once per session


def _row(a, cid):
    return a.table.filter(pl.col("id") == cid).row(0, named=True)


def test_finding_1_claims_follow_from_the_printed_cells_not_from_a_hand_kept_table(audit):
    import analysis.audit.dependencies as deps
    assert len(FINDING_1) == 45 and not hasattr(deps, "OF")
    bad = {c: _row(audit, c)["status"] for c in FINDING_1 if _row(audit, c)["status"] != CONSISTENT}
    assert not bad
    assert audit.derived_counts["reproduced"] == 0


def test_a_printed_cell_that_breaks_the_arithmetic_makes_the_claim_inconsistent(audit):
    # Raise mimo-v2.5's printed effect from +0.929 (13/14, one pair) to +0.950 (no total of 14 checks prints it,
    # so the face value is used): the panel mean of the printed cells moves from 0.13544 by (0.95 - 13/14)/20 =
    # 0.00107 to 0.13651 -> 0.137, while the reconstruction's rows are untouched.
    text = CLAIMS_PATH.read_text(encoding="utf-8")
    anchor = "- id: t3.mimo_v2_5.paired_q_minus_j\n"
    i = text.index(anchor)
    j = text.index("value: 0.929", i)
    bad = parse_claims(text[:j] + "value: 0.95" + text[j + len("value: 0.929"):], "tampered.yaml")
    a = audit_claims(load_package(ROOT / "data" / "v1"), bad, DEFAULT_PARAMS)
    row = _row(a, "panel.mean")
    assert row["status"] == "inconsistent" and row["from_printed"] == "0.137" and row["recomputed"] == "0.135"
    assert _row(a, "panel.n_positive")["status"] == CONSISTENT  # a count the change does not touch


def test_every_printed_cell_claim_the_registry_covers_is_derived_or_primitive_and_exists():
    assert set(PRINTED) <= {c.id for c in CLAIMS} and all(CLAIMS[c].role != "design" for c in PRINTED)
    # 87: t1.k_vs_m.mean_gap needs Table 1 row counts the paper does not print (0.060 at face value, not 0.066)
    assert len([c for c in CLAIMS if c.role == "derived" and c.id in PRINTED]) == 87
    assert "t1.k_vs_m.mean_gap" not in PRINTED


def test_finding_2_one_set_of_fills_inside_the_rounding_gives_all_seven_fill_statistics(audit):
    pc = PrintedCells(CLAIMS, DEFAULT_PARAMS)
    got = fill_readings(pc)
    seven = {"threshold.all20.fill_effect.pearson", "threshold.fail8.fill_effect.pearson",
             "threshold.fail8_excl_borderline.fill_effect.pearson", "threshold.all20.fill_effect.spearman",
             "threshold.fail8.fill_effect.spearman", "threshold.fail8_excl_borderline.fill_effect.spearman",
             "threshold.fail8.gain_ge_0_20.fill_margin"}
    assert set(got) == seven and all(r.matches for r in got.values())
    assert len({r.detail.split("; fills: ", 1)[1] for r in got.values()}) == 1  # one set of fills, said once
    # Independent oracle: the search's own fills, checked against the box and recomputed with scipy.
    s = printed_fill_search(pc)
    t3 = pc.table3
    x = np.array([s.result.fills[c] for c in t3["configuration"]])
    assert np.all(np.abs(x - t3["fill"].to_numpy()) < 0.005) and np.all((x >= 0) & (x <= 1))
    e, j = t3["effect"].to_numpy(), t3["control_mean"].to_numpy()
    # the order of exactly equal effects the search states (float tie-breaking), applied by hand for Spearman
    y = e.copy()
    cfg = t3["configuration"].to_list()
    for group in s.result.effect_order:
        for r, c in enumerate(group):
            y[cfg.index(c)] += r * 1e-9
    fail = j < 0.5
    excl = fail & (np.abs(j - 0.5) > 0.02)
    assert round(pearsonr(x, e)[0], 3) == 0.542
    assert round(pearsonr(x[fail], e[fail])[0], 3) == 0.747
    assert round(pearsonr(x[excl], e[excl])[0], 3) == 0.855
    assert round(spearmanr(x, y)[0], 3) == 0.589  # the all-20 Spearman, with the same fills
    assert round(spearmanr(x[fail], y[fail])[0], 3) == 0.714
    assert round(spearmanr(x[excl], y[excl])[0], 3) == 0.429
    gainer, rest = cfg.index("deepseek/deepseek-v4-flash"), cfg.index("qwen/qwen3.5-9b")  # both print 81%
    assert round(x[gainer] - x[rest], 3) == 0.002
    for cid in seven - {"threshold.fail8.fill_effect.pearson"}:
        assert _row(audit, cid)["status"] == "reachable under a choice", cid
        assert "unrounded values inside the printed 1% rounding" in _row(audit, cid)["note"]
    assert _row(audit, "threshold.fail8.fill_effect.pearson")["status"] == CONSISTENT  # 0.747 at face value


def test_finding_3_the_fabricated_example_values_are_traced_to_rule_r21(audit):
    for cid, value in (("fab.example.fabricated_port", "8443"), ("fab.example.fabricated_timestamp", "02:00"),
                       ("fab.example.fabricated_shards", "16")):
        row = _row(audit, cid)
        assert (row["status"], row["rules"], row["recomputed"]) == ("holds by construction", "R21", value), row
        assert "R21 reads it" in row["note"]


def test_finding_4_more_than_three_times_is_decided_by_the_printed_values(audit):
    # 0.214 / 0.066 = 3.24; over the rounding of both, at least 0.2135 / 0.0665 = 3.21 > 3.
    row = _row(audit, "ladder.m_minus_q.over_k_m_gap.min_ratio")
    assert row["status"] == CONSISTENT and row["from_printed"] == "3.24" and "3.21" in row["note"]


def test_a_study_of_its_own_reproduces_and_a_reconstruction_never_does(tmp_path, audit):
    d = tmp_path / "study"
    shutil.copytree(ROOT / "data" / "v1", d)
    toml = (d / "study.toml").read_text(encoding="utf-8").replace('kind = "reconstruction"\n', "")
    (d / "study.toml").write_text(toml, encoding="utf-8")
    write_lock(d, ["RECONSTRUCTION.md", "findings.csv"])
    a = audit_claims(load_package(d), CLAIMS, DEFAULT_PARAMS)
    assert not a.reconstruction and _row(a, "icc.s5.icc")["status"] == "reproduced"
    assert "on this study's rows: 1 reproduced" in a.headline and "RECONSTRUCTION" not in a.headline
    assert _row(audit, "icc.s5.icc")["status"] == "fitted" and "reproduced" not in audit.headline.split(";")[0]


def test_results_block_keeps_old_keys_and_adds_the_split(audit):
    from analysis.audit.headline import audit_block
    b = audit_block(audit)
    assert {"headline", "derived", "reproduced", "status_counts", "claims", "derived_status_counts", "legend",
            "fitted"} <= set(b)
    assert b["reproduced"] == 0 and b["evidence_kind"] == "reconstruction"
    assert b["printed_cells"]["claims"] + b["row_level"]["claims"] == b["derived"] == 109
    assert b["printed_cells"][CONSISTENT] == audit.printed_counts[CONSISTENT]
    assert "fab.f.failing_rows" in b["reconstruction_misses"]


def test_exact_grim_means_are_used_where_unique():
    pc = PrintedCells(CLAIMS, DEFAULT_PARAMS)
    # ladder m 0.986 over 10 rows of 14 checks: only 138/140 prints as 0.986; q 0.771 -> 108/140.
    assert pc.exact_mean("ladder.m.mean", 10) == Fraction(138, 140)
    assert pc.exact_mean("ladder.m.mean", 10) - pc.exact_mean("ladder.q.mean", 10) == Fraction(30, 140)
