"""The claims audit on data/v1: the section 4.7 bar, the McNemar p-values, and honest statuses."""
from __future__ import annotations

import shutil

import polars as pl
import pytest
from audit_support import published_claims, v1_audit

from analysis.audit.claims_audit import STATUSES, audit_claims
from analysis.evidence import load_package, write_lock
from analysis.params import DEFAULT_PARAMS
from support.paths import REPO as ROOT

CLAIMS = published_claims()  # load_claims(data/published/claims.yaml), once per session (audit_support)

BAR_47 = [
    "panel.mean", "panel.median", "panel.iqr.lo", "panel.iqr.hi", "panel.range.lo", "panel.range.hi",
    "panel.n_positive", "panel.n_negative", "panel.n_zero", "panel.loo.lo", "panel.loo.hi",
    "panel.dispersion_interval.lo", "panel.dispersion_interval.hi",
    "sparse.n_sparse_configs", "sparse.ge4_pairs.configs", "sparse.ge4_pairs.mean", "sparse.ge4_pairs.median",
    "sparse.equal_arm_counts.configs", "sparse.equal_arm_counts.mean", "sparse.equal_arm_counts.median",
    "sparse.excl_mimo_v2_5.configs", "sparse.excl_mimo_v2_5.mean", "sparse.excl_mimo_v2_5.median",
    "bounds.planned_repeat.lo", "bounds.planned_repeat.hi",
    "family.mean", "family.lofo.lo", "family.lofo.hi", "family.dispersion_interval.lo",
    "family.dispersion_interval.hi",
]
MCNEMAR = ["ladder.mcnemar.p", "ceiling.mcnemar.p", "ceiling.mcnemar.p_missing_j_as_failure",
           "ceiling.mcnemar.p_missing_j_as_success"]
FITTED = ["icc.s5.icc", "icc.s5.design_effect", "icc.s5.effective_obs_per_row"]


@pytest.fixture(scope="module")
def audit():
    return v1_audit()  # audit_claims(load_package(ROOT / "data" / "v1"), CLAIMS, DEFAULT_PARAMS), once per session


def _status(audit, cid):
    return audit.table.filter(pl.col("id") == cid).row(0, named=True)


def test_every_claim_has_one_allowed_status(audit):
    t = audit.table
    assert t.height == len(CLAIMS) and t["id"].n_unique() == t.height
    assert set(t["status"].unique()) <= set(STATUSES)
    assert t.filter(pl.col("status").is_in(["mismatch", "inconsistent", "not determinable",
                                            "reachable under a choice"]),
                    pl.col("note") == "").height == 0, "every non-matching claim explains itself"
    # "not determinable" never hides a recomputed value that differs
    assert t.filter(pl.col("status") == "not determinable", pl.col("recomputed") != "").height == 0
    assert t.filter(pl.col("role") == "derived", pl.col("rules") == "", ~pl.col("id").str.starts_with("fill25"),
                    ~pl.col("id").str.starts_with("probe")).height == 0, "every derived row names its rules"


def test_section_47_bar_follows_from_the_printed_cells_and_the_rows_give_it(audit):
    assert all(CLAIMS[c].role == "derived" for c in BAR_47)
    bad = {c: _status(audit, c) for c in BAR_47 if _status(audit, c)["status"] != "consistent with the printed cells"
           or _status(audit, c)["recomputed"] != _status(audit, c)["published"]
           or _status(audit, c)["from_printed"] != _status(audit, c)["published"]}
    assert not bad


def test_mcnemar_p_values_follow_from_the_printed_tables(audit):
    # 4.3: 7/0 discordant -> 2 * (1/2)^7 = 0.015625; 4.5: 5/1 -> 2 * 7/64 = 0.21875; 6/1 -> 2 * 8/128 = 0.125.
    for c in MCNEMAR:
        assert _status(audit, c)["status"] == "consistent with the printed cells", c
    assert _status(audit, "ladder.mcnemar.p")["from_printed"] == "0.0156"
    assert _status(audit, "ceiling.mcnemar.p_missing_j_as_success")["from_printed"] == "0.125"
    assert _status(audit, "ceiling.mcnemar.p_missing_j_as_success")["recomputed"] == "0.125"


def test_nothing_in_a_reconstruction_is_reproduced(audit):
    t = audit.table
    assert audit.reconstruction and audit.reproduced == 0
    assert t.filter(pl.col("status") == "reproduced").height == 0
    assert audit.fitted_ids == (*FITTED, "scenario.grader_agreement.rows")  # R25 is fitted but missed


def test_issue_10_findings_have_their_true_status(audit):
    expect = {
        # arithmetic of the printed McNemar tables, per-arm cells and counts (issue 19: computed, not listed)
        # 7 + 1 + 2 + the q-only cell, which was inferred from this 10 (issue 19, second review)
        "ladder.n_paired_rows": "implied (not an independent check)",
        "ladder.q.full_rows": "consistent with the printed cells",
        "ladder.m.full_rows": "consistent with the printed cells",
        "ceiling.mcnemar.complete_pairs": "consistent with the printed cells",
        "ceiling.mcnemar.j_ge_half": "consistent with the printed cells",
        "ceiling.mcnemar.t_ge_half": "consistent with the printed cells",
        "ceiling.j.nonconforming_fraction": "consistent with the printed cells",
        "audit.rows": "consistent with the printed cells", "audit.agree": "consistent with the printed cells",
        "catchup.rows": "consistent with the printed cells",
        "catchup.from_working_arm": "consistent with the printed cells",
        # printed cells decide them; the reconstruction's rows miss them (said in the note)
        "icc.s5.valid_rows": "consistent with the printed cells",
        "fab.f.failing_rows": "consistent with the printed cells",
        # need rows; the reconstruction misses them
        "within.all.cells": "mismatch", "scenario.grader_agreement.rows": "mismatch",
        # reachable only under a stated choice
        "threshold.all20.fill_effect.spearman": "reachable under a choice",
        "t1.k_vs_m.mean_gap": "mismatch", "t1.qwen3_6_local_reference.l": "reachable under a choice",
        "t3.deepseek_v4_flash.q_mean": "reachable under a choice",
    }
    got = {c: _status(audit, c)["status"] for c in expect}
    assert got == expect
    assert "granite-4.1-8b < mistral-small-2603" in _status(audit, "threshold.all20.fill_effect.spearman")["note"]
    assert "row counts the paper does not print" in _status(audit, "t1.k_vs_m.mean_gap")["note"]
    assert "R6-R8" in _status(audit, "ladder.q.full_rows")["rules"].split()
    assert "rows give 49" in _status(audit, "fab.f.failing_rows")["note"]
    assert {"icc.s5.valid_rows", "fab.f.failing_rows"} <= set(audit.reconstruction_misses)


def test_grim_failures_are_reachable_only_with_per_row_rounding(audit):
    # 0.947 of 4 x 14 checks: no integer total (53/56 = 0.9464); rows 14, 13, 13, 13 rounded first give
    # (1 + 3 x 0.929) / 4 = 0.94675 -> 0.947.
    for c in ("t3.deepseek_v4_flash.q_mean", "t3.gemma_4_26b_a4b_it.j_mean"):
        row = _status(audit, c)
        assert row["status"] == "reachable under a choice" and "rounded to 3 decimals" in row["note"], row


def test_primitives_the_engine_fits_are_met(audit):
    t = audit.table.filter(pl.col("role") == "primitive")
    fitted_tables = ("t3.", "ladder.", "ceiling.", "ceiling2.", "deep.", "borderline.", "granite16.", "catchup.",
                     "audit.", "carrier.t.", "scenario.single_chunk.", "anchor.", "t1.")
    from analysis.audit.statuses import EXPLAIN
    used = t.filter(pl.any_horizontal([pl.col("id").str.starts_with(p) for p in fitted_tables]),
                    ~pl.col("id").is_in(list(EXPLAIN)), pl.col("status") != "mismatch", pl.col("published") != "")
    assert used.height > 200
    ok = ["holds by construction", "consistent with the printed cells", "reachable under a choice",
          "reached by the reconstruction"]
    assert used.filter(~pl.col("status").is_in(ok)).height == 0, used.filter(~pl.col("status").is_in(ok))


def test_headline(audit):
    p, r = audit.printed_counts, audit.row_counts
    assert audit.headline.startswith(f"Of the 109 derived claims, {audit.printed} follow arithmetically from the "
                                     f"paper's own printed cells: {p['consistent with the printed cells']} agree "
                                     f"with them, {p['implied (not an independent check)']} agrees only because a "
                                     "cell the paper does not print was inferred from it (not an independent check), "
                                     f"{p['reachable under a choice']} agree only under a stated choice "
                                     f"and {p['inconsistent']} do not (inconsistent). The other {audit.need_rows} "
                                     f"need row-level data the paper does not print; on this reconstruction: ")
    assert audit.printed + audit.need_rows == 109 and sum(audit.all_counts.values()) == len(CLAIMS)
    assert f"{r['fitted']} fitted" in audit.headline and f"{r['mismatch']} missed" in audit.headline
    assert "reproduced by independent computation" not in audit.headline
    assert "a reconstruction built" in audit.headline and "nothing in it is reproduced" in audit.headline


def test_readme_headline_matches_the_computed_headline(audit):
    import re
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- audit-headline -->(.*?)<!-- /audit-headline -->", text, re.S)
    assert m, "README.md must carry the audit headline between <!-- audit-headline --> markers"
    assert " ".join(m.group(1).split()) == audit.headline


def test_a_changed_outcome_shows_up_as_a_mismatch(tmp_path):
    # Raise one deepseek-v4-pro q row from 14 to... no: lower its j row: effect 0 -> +1/56; panel mean moves by
    # 1/56/20 = 0.00089, enough to leave 0.135 (0.13544 + 0.00089 = 0.13634 -> 0.136).
    d = tmp_path / "v1"
    shutil.copytree(ROOT / "data" / "v1", d)
    rows = pl.read_csv(d / "rows.csv", infer_schema=False)
    rid = "partition-02/S5/j/01"
    rows = rows.with_columns(pl.when(pl.col("row_id") == rid).then(pl.lit("13")).otherwise(pl.col("checks_passed"))
                             .alias("checks_passed"))
    rows.write_csv(d / "rows.csv")
    checks = pl.read_csv(d / "checks.csv", infer_schema=False)
    last = (pl.col("row_id") == rid) & (pl.col("check") == "department")
    checks = checks.with_columns(pl.when(last).then(pl.lit("false")).otherwise(pl.col("passed")).alias("passed"))
    checks.write_csv(d / "checks.csv")
    write_lock(d, ["RECONSTRUCTION.md", "findings.csv"])
    a = audit_claims(load_package(d), CLAIMS, DEFAULT_PARAMS)
    row = a.table.filter(pl.col("id") == "panel.mean").row(0, named=True)
    # the printed cells still decide the claim; the rows' miss is shown and listed
    assert row["status"] == "consistent with the printed cells" and row["recomputed"] == "0.136"
    assert "rows give 0.136" in row["note"] and "panel.mean" in a.reconstruction_misses


def test_render_csv_and_markdown(audit):
    from analysis.audit.render import audit_csv, audit_markdown
    csv_text = audit_csv(audit).decode("utf-8")
    assert csv_text.splitlines()[0] == "id,section,role,published,recomputed,status,rules,note,from_printed"
    assert len(pl.read_csv(audit_csv(audit), infer_schema=False)) == len(CLAIMS)
    md = audit_markdown(audit)
    assert audit.headline in md and md.count("\n| ") >= len(CLAIMS)
    assert "## Legend" in md and "consistent with the printed cells" in md and "arithmetic identity" not in md


def test_cli_writes_the_audit(tmp_path, capsys):
    from analysis.audit.__main__ import main
    assert main(["--evidence", str(ROOT / "data" / "v1"), "--claims", str(ROOT / "data/published/claims.yaml"),
                 "--out", str(tmp_path)]) == 0
    assert "follow arithmetically from the paper's own printed cells" in capsys.readouterr().out
    assert (tmp_path / "claims_audit.csv").is_file() and (tmp_path / "claims_audit.md").is_file()
    assert main(["--evidence", str(tmp_path / "nope")]) == 2


def _with_rows(tmp_path, change_rows, change_checks):
    d = tmp_path / "v1"
    shutil.copytree(ROOT / "data" / "v1", d)
    change_rows(pl.read_csv(d / "rows.csv", infer_schema=False)).write_csv(d / "rows.csv")
    change_checks(pl.read_csv(d / "checks.csv", infer_schema=False)).write_csv(d / "checks.csv")
    write_lock(d, ["RECONSTRUCTION.md", "findings.csv"])
    return load_package(d)


def test_out_of_window_outcomes_change_no_panel_claim(tmp_path, audit):
    # Give the out-of-window runs a huge effect (every q row 14/14, every j row 0/14): the panel excludes them
    # by publication date, so every 4.7 claim keeps its recomputed value and status.
    groups = ["partition-21", "partition-22", "partition-23"]
    oow = pl.col("execution_group").is_in(groups)

    def rows(r):
        return r.with_columns(pl.when(oow).then(pl.when(pl.col("arm") == "q").then(pl.lit("14")).otherwise(pl.lit("0")))
                              .otherwise(pl.col("checks_passed")).alias("checks_passed"))

    def checks(c):
        rid = pl.col("row_id")
        hit = pl.any_horizontal([rid.str.starts_with(g + "/") for g in groups])
        return c.with_columns(pl.when(hit).then(pl.when(rid.str.contains("/q/")).then(pl.lit("true"))
                                                .otherwise(pl.lit("false")))
                              .otherwise(pl.col("passed")).alias("passed"))
    a = audit_claims(_with_rows(tmp_path, rows, checks), CLAIMS, DEFAULT_PARAMS)
    mine = a.table.filter(pl.col("id").is_in(BAR_47)).select("id", "recomputed", "status")
    base = audit.table.filter(pl.col("id").is_in(BAR_47)).select("id", "recomputed", "status")
    assert mine.equals(base)
    # ...while the out-of-window effect really changed in the package the audit read
    assert a.table.filter(pl.col("id") == "icc.s5.icc")["recomputed"][0] != audit.table.filter(
        pl.col("id") == "icc.s5.icc")["recomputed"][0]


def test_the_icc_is_fitted_and_its_design_effect_follows_from_it(audit):
    row = _status(audit, "icc.s5.icc")
    assert row["status"] == "fitted" and row["recomputed"] == row["published"], row
    # 1 + 13 x 0.750 = 10.750; 10.745 needs the unrounded ICC 0.74962 (inside 0.750's rounding)
    row = _status(audit, "icc.s5.design_effect")
    assert row["status"] == "reachable under a choice" and "0.74962" in row["note"] and row["from_printed"] == "10.750"
    assert _status(audit, "icc.s5.effective_obs_per_row")["status"] == "consistent with the printed cells"
    assert audit.row_counts["fitted"] == 1


def test_a_missing_results_key_degrades_to_not_determinable():
    from analysis.results import build_results
    pkg = load_package(ROOT / "data" / "v1")
    res = build_results(pkg, DEFAULT_PARAMS)
    res.pop("carrier_audit")
    a = audit_claims(pkg, CLAIMS, DEFAULT_PARAMS, results=res)
    row = a.table.filter(pl.col("id") == "audit.rows").row(0, named=True)
    assert row["status"] == "consistent with the printed cells" and "carrier_audit" in row["note"]
    row = a.table.filter(pl.col("id") == "headings.pooled.r").row(0, named=True)
    assert row["status"] == "mismatch"
    res.pop("headings")
    a = audit_claims(pkg, CLAIMS, DEFAULT_PARAMS, results=res)
    row = a.table.filter(pl.col("id") == "headings.pooled.r").row(0, named=True)
    assert row["status"] == "not determinable" and "headings" in row["note"]


def test_every_claim_a_rule_declares_it_builds_holds(audit):
    # A rule's `builds` declaration is a promise: the printed value holds in the package. Only a cell that a
    # stated choice reaches (t1.qwen3_6_local_reference.l: R12's 7 rows) may miss, and it says so.
    from analysis.reconstruct.rules import resolve_rules
    built = set().union(*(r.builds for r in resolve_rules(CLAIMS).values()))
    t = audit.table.filter(pl.col("id").is_in(list(built)), pl.col("published") != "")
    printed_ok = ["consistent with the printed cells", "implied (not an independent check)"]
    bad = t.filter(~pl.col("status").is_in(["holds by construction", "reachable under a choice", *printed_ok])
                   | ((pl.col("status").is_in(printed_ok))
                      & (pl.col("recomputed") != pl.col("published"))))
    assert bad.height == 0, bad.select("id", "published", "recomputed", "status")
    assert set(t.filter(pl.col("status") == "reachable under a choice")["id"]) == {
        "t3.deepseek_v4_flash.q_mean", "t3.gemma_4_26b_a4b_it.j_mean", "t1.qwen3_6_local_reference.l"}
