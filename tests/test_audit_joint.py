"""Issue 19, second review: one choice for all fill statistics, no test that cannot fail, no implied agreement,
claims grouped by the branch that judged them, printed-cell verdicts from the claims file alone."""
from __future__ import annotations

import re

import polars as pl
import pytest
from audit_support import published_claims, v1_audit

import analysis.audit.claims_audit as claims_audit
from analysis.audit.claims_audit import audit_claims
from analysis.audit.derive import IMPLIED, Reading
from analysis.audit.printed import IMPLIED as IMPLIED_CELLS
from analysis.audit.printed import PrintedCells
from analysis.audit.printed_fills import fill_readings, printed_fill_search
from analysis.evidence import load_package
from analysis.params import DEFAULT_PARAMS
from analysis.reconstruct.claims import parse_claims
from support.paths import REPO as ROOT

CLAIMS_PATH = ROOT / "data" / "published" / "claims.yaml"
CLAIMS = published_claims()  # load_claims(CLAIMS_PATH), once per session (audit_support)
TEXT = CLAIMS_PATH.read_text(encoding="utf-8")
V1 = ROOT / "data" / "v1"
CHOICE, INCONSISTENT, CONSISTENT = "reachable under a choice", "inconsistent", "consistent with the printed cells"


def _edit(text: str, cid: str, old: str, new: str) -> str:
    """`text` with `old` replaced by `new` inside claim `cid`'s entry."""
    i = text.index(f"- id: {cid}\n")
    j = text.index(old, i)
    assert j < text.index("- id: ", i + 5), f"{old!r} is not inside {cid}'s entry"
    return text[:j] + new + text[j + len(old):]


def _tamper(cid: str, old: str, new: str) -> object:
    """The claims file with `old` replaced by `new` inside claim `cid`'s entry."""
    return parse_claims(_edit(TEXT, cid, old, new), "tampered.yaml")


@pytest.fixture(scope="module")
def audit():
    return v1_audit()  # audit_claims(load_package(V1), CLAIMS, DEFAULT_PARAMS), once per session (audit_support)


def _row(a, cid):
    return a.table.filter(pl.col("id") == cid).row(0, named=True)


def test_fills_stay_inside_the_ceiling_and_the_cells_that_pin_them():
    # A fill is a share of the 9,600-char ceiling (<= 1; qwen3.5-35b-a3b prints 100%), and 4.6 prints
    # deepseek-v4-pro's 4 Table 3 rows as 4,740 carried chars: 4,740/9,600 = 0.49375 (first round: 49.03%).
    s = printed_fill_search(PrintedCells(CLAIMS, DEFAULT_PARAMS))
    assert s.result.found
    assert max(s.result.fills.values()) <= 1.0
    assert 4739.5 / 9600 <= s.result.fills["deepseek/deepseek-v4-pro"] <= 4740.5 / 9600
    assert set(s.pins) == {"deepseek/deepseek-v4-pro"}  # granite and ling-flash print 16 rows, not Table 3's 12
    assert s.result.bounds["qwen/qwen3.5-35b-a3b"][1] == 1.0


def test_fill_statistics_no_single_set_reaches_are_not_reachable_under_a_choice():
    # 0.738 alone is reachable (qwen3.5-35b below qwen3.5-122b in fill), but that order gives the non-borderline
    # Spearman 0.486, not the printed 0.429: no one set of fills gives both, so neither is "reachable".
    bad = _tamper("threshold.fail8.fill_effect.spearman", "value: 0.714", "value: 0.738")
    got = fill_readings(PrintedCells(bad, DEFAULT_PARAMS))
    assert len(got) == 7 and not any(r.matches for r in got.values())
    assert all("not jointly reachable" in r.detail for r in got.values())
    a = audit_claims(load_package(V1), bad, DEFAULT_PARAMS)
    for cid in ("threshold.fail8.fill_effect.spearman", "threshold.fail8_excl_borderline.fill_effect.spearman",
                "threshold.all20.fill_effect.pearson", "threshold.fail8.gain_ge_0_20.fill_margin"):
        row = _row(a, cid)
        assert row["status"] == INCONSISTENT and "not jointly reachable" in row["note"], row
    assert _row(a, "threshold.fail8.fill_effect.pearson")["status"] == CONSISTENT  # 0.747 at face value


def test_the_k_m_gap_is_a_row_level_claim_and_no_reading_passes_whatever_the_value(audit):
    row = _row(audit, "t1.k_vs_m.mean_gap")
    assert row["status"] == "mismatch" and row["from_printed"] == "" and row["recomputed"] == "0.060", row
    assert "0.060" in row["note"] and "row counts the paper does not print" in row["note"]
    # 0.150 lies inside [min, max] of the per-model gaps (-0.030, 0.200): the first round's reading passed it
    a = audit_claims(load_package(V1), _tamper("t1.k_vs_m.mean_gap", "value: 0.066", "value: 0.150"),
                     DEFAULT_PARAMS)
    assert _row(a, "t1.k_vs_m.mean_gap")["status"] == "mismatch"


def test_a_sum_that_includes_a_cell_inferred_from_it_is_not_counted_as_agreement(audit):
    row = _row(audit, "ladder.n_paired_rows")
    assert row["status"] == IMPLIED and "ladder.mcnemar.q_only_full" in row["note"], row
    assert audit.printed_counts[IMPLIED] == 1
    assert f"{audit.printed_counts[CONSISTENT]} agree with them, 1 agrees only because" in audit.headline
    # q's 1 of 10 full rows is an independent check of the same cells (it never reads the inferred cell)
    assert _row(audit, "ladder.q.full_rows")["status"] == CONSISTENT
    assert _row(audit, "ladder.mcnemar.p")["status"] == CONSISTENT  # reads it, but it was not inferred from p


def test_the_implied_cells_table_agrees_with_the_claims_file():
    from analysis.reconstruct.rules import TRANSCRIBED_FROM
    noted = {c.id for c in CLAIMS if (c.note or "").startswith("Not printed as a number")}
    assert noted == set(IMPLIED_CELLS)
    assert all(set(src) <= set(IMPLIED_CELLS[cell]) for cell, src in TRANSCRIBED_FROM.items())
    for cell, sources in IMPLIED_CELLS.items():
        assert set(sources) <= {c.id for c in CLAIMS}
        nums = set(re.findall(r"\d+", CLAIMS[cell].note or ""))  # the note's printed numbers are the sources'
        assert {str(CLAIMS[s].value) for s in sources} <= nums | {str(CLAIMS[cell].value)}


def test_claims_are_counted_in_the_group_whose_branch_judged_them():
    # panel.median printed as an em dash, panel.iqr.lo marked external: both leave the printed-cell branch
    text = _edit(TEXT, "panel.median", 'value: 0.027\n  decimals: 3\n  printed: "+0.027"',
                 'value: null\n  decimals: null\n  printed: "—"')
    text = _edit(text, "panel.iqr.lo", "  role: derived\n", "  role: derived\n  external: true\n")
    a = audit_claims(load_package(V1), parse_claims(text, "tampered.yaml"), DEFAULT_PARAMS)
    assert a.printed + a.need_rows == a.derived == 109
    assert _row(a, "panel.median")["status"] == _row(a, "panel.iqr.lo")["status"] == "not determinable"
    assert a.row_counts["not determinable"] == 8 and a.printed == 85


def test_readings_from_the_package_never_decide_a_printed_cell_verdict(monkeypatch):
    # panel.mean raised to 0.95 at mimo-v2.5 is inconsistent with the printed cells; a reading built from the
    # package's findings.csv (row_count_readings) claiming to reach it must not turn it into a choice.
    bad = _tamper("t3.mimo_v2_5.paired_q_minus_j", "value: 0.929", "value: 0.95")
    monkeypatch.setattr(claims_audit, "row_count_readings",
                        lambda claims, findings: {"panel.mean": ([Reading("a package row count", True, "")], "")})
    a = audit_claims(load_package(V1), bad, DEFAULT_PARAMS)
    assert _row(a, "panel.mean")["status"] == INCONSISTENT


def test_the_headline_names_each_tuned_claim_with_its_computed_status(audit):
    said = {cid: _row(audit, cid)["status"] for cid in audit.fitted_ids}
    assert said["icc.s5.icc"] == "fitted" and said["icc.s5.design_effect"] == CHOICE
    names = {"fitted": "fitted", CHOICE: CHOICE, CONSISTENT: CONSISTENT, "mismatch": "missed"}
    for cid, st in said.items():
        assert f"{cid} ({names[st]})" in audit.headline
    assert audit.headline.count("tuned") == 1 and "three" not in audit.headline


def test_a_reconstruction_summary_has_no_reproduced_row_and_a_study_keeps_it(audit):
    import dataclasses

    from analysis.tables.context import ReportContext
    from analysis.tables.failures import claims_summary
    rows = claims_summary(ReportContext(None, {}, DEFAULT_PARAMS, audit)).data["status"].to_list()
    assert "reproduced" not in rows and IMPLIED in rows
    study = dataclasses.replace(audit, reconstruction=False)
    assert "reproduced" in claims_summary(ReportContext(None, {}, DEFAULT_PARAMS, study)).data["status"].to_list()


def test_reconstruction_notes_type_no_audit_status():
    from analysis.reconstruct.notes import RULES
    text = (V1 / "RECONSTRUCTION.md").read_text(encoding="utf-8")
    for said in ("bounds' \"reproduced\"", "reports these three claims as FITTED", "which the audit reports as",
                 "FITTED to three"):
        assert said not in text and said not in RULES, said
