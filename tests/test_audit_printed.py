"""Issue 19: audit statuses computed from the paper's printed cells, never listed by hand."""
from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.stats import pearsonr, spearmanr

from analysis.audit.claims_audit import audit_claims
from analysis.audit.printed import PRINTED, PrintedCells, fill_readings
from analysis.evidence import load_package, write_lock
from analysis.params import DEFAULT_PARAMS
from analysis.reconstruct.claims import load_claims, parse_claims

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_PATH = ROOT / "data" / "published" / "claims.yaml"
CLAIMS = load_claims(CLAIMS_PATH)
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
    return audit_claims(load_package(ROOT / "data" / "v1"), CLAIMS, DEFAULT_PARAMS)


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
    assert len([c for c in CLAIMS if c.role == "derived" and c.id in PRINTED]) == 88


def test_finding_2_one_set_of_fills_inside_the_rounding_gives_all_six_fill_statistics(audit):
    pc = PrintedCells(CLAIMS, DEFAULT_PARAMS)
    got = fill_readings(pc)
    assert set(got) == {"threshold.all20.fill_effect.pearson", "threshold.fail8.fill_effect.pearson",
                        "threshold.fail8_excl_borderline.fill_effect.pearson", "threshold.fail8.fill_effect.spearman",
                        "threshold.fail8_excl_borderline.fill_effect.spearman",
                        "threshold.fail8.gain_ge_0_20.fill_margin"}
    assert all(r.matches for r in got.values())
    # Independent oracle: parse the fills from the note, check the box and recompute with scipy.
    note = got["threshold.fail8.fill_effect.pearson"].detail.split("fills: ", 1)[1]
    fills = {name: float(v.rstrip("%")) / 100 for name, v in (x.rsplit(" ", 1) for x in note.split(", "))}
    t3 = pc.table3.with_columns(pl.col("configuration").str.split("/").list.get(1).alias("name"))
    x = np.array([fills[n] for n in t3["name"]])
    assert np.all(np.abs(x - t3["fill"].to_numpy()) < 0.005 + 1e-4)  # printed to 1% (note rounds to 0.01%)
    e, j = t3["effect"].to_numpy(), t3["control_mean"].to_numpy()
    fail = j < 0.5
    excl = fail & (np.abs(j - 0.5) > 0.02)
    assert round(pearsonr(x, e)[0], 3) == 0.542
    assert round(pearsonr(x[fail], e[fail])[0], 3) == 0.747
    assert round(pearsonr(x[excl], e[excl])[0], 3) == 0.855
    assert round(spearmanr(x[fail], e[fail])[0], 3) == 0.714
    assert round(spearmanr(x[excl], e[excl])[0], 3) == 0.429
    for cid in ("threshold.all20.fill_effect.pearson", "threshold.fail8_excl_borderline.fill_effect.pearson",
                "threshold.fail8.gain_ge_0_20.fill_margin"):
        assert _row(audit, cid)["status"] == "reachable under a choice", cid
        assert "unrounded values inside the printed 1% rounding" in _row(audit, cid)["note"]
    assert _row(audit, "threshold.fail8.fill_effect.pearson")["status"] in (CONSISTENT, "reachable under a choice")


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
