"""Table builders against hand derivations on tests/fixtures/handmade (see its README.md).

Oracle: the fixture's rows.csv read by hand. Recall = checks_passed / 14 on S5.
"""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.tables import arm_means, cells, failures, fill, headings, panel, pilot
from analysis.tables.formatting import fmt_mean_n, fmt_signed
from analysis.tables.registry import TABLE_ORDER, build_tables
from analysis.tables.render import to_csv, to_html, to_markdown
from report_support import ROOT, context, handmade


def test_supporting_arms_need_a_supporting_sweep() -> None:
    # The fixture's m rows ran beside j and q only (no f, n, k, l): not a supporting sweep.
    t = arm_means.supporting_arms(context())
    assert t.is_empty and "no supporting sweep" in t.empty_reason


def test_supporting_arms_cells_have_their_denominators() -> None:
    # Add one l row (7/14) to group g1: g1 becomes a supporting sweep; its m rows a1-m and a2-m
    # are both 14/14 -> "1.000 (n=2)", the l row -> "0.500 (n=1)".
    pkg, _ = handmade()
    extra = pkg.rows.filter(pl.col("row_id") == "a1-m").with_columns(
        pl.lit("a1-l").alias("row_id"), pl.lit("l").alias("arm"), pl.lit(7, dtype=pl.Int64).alias("checks_passed"))
    t = arm_means.supporting_arms(context(dataclasses.replace(pkg, rows=pl.concat([pkg.rows, extra]))))
    # the arms' counts differ (1 and 2), so each cell keeps its own n; the headers are the arm codes, the
    # arms' descriptions are in the note (issue 34: headers of at most three lines)
    assert t.display.columns == ["model", "l", "m"]
    assert t.display.row(0) == ("acme/alpha-1", "0.500 (n=1)", "1.000 (n=2)")
    assert "l, plain headings at the deployed fold budget; m, plain text, five headings" in t.note


def test_supporting_arms_with_one_count_per_model_give_it_one_column() -> None:
    # two l rows (7/14 and 14/14) beside a1-m and a2-m (14/14 each): n = 2 for both arms, so n is a column
    # and the cells are the means, l (0.5 + 1)/2 = 0.750 and m 1.000
    pkg, _ = handmade()
    extra = pkg.rows.filter(pl.col("row_id").is_in(["a1-m", "a2-m"])).with_columns(
        (pl.col("row_id") + "-l").alias("row_id"), pl.lit("l").alias("arm"),
        pl.when(pl.col("row_id") == "a1-m").then(7).otherwise(14).cast(pl.Int64).alias("checks_passed"))
    t = arm_means.supporting_arms(context(dataclasses.replace(pkg, rows=pl.concat([pkg.rows, extra]))))
    assert t.display.columns == ["model", "n", "l", "m"]
    assert t.display.row(0) == ("acme/alpha-1", "2", "0.750", "1.000")


def test_ladder_rungs_hand_derived() -> None:
    # alpha-1/g1: j rows 14, 0, 7 -> (1 + 0 + 0.5)/3 = 0.5; q rows 14, 14 -> 1.0; m 1.0.
    t = arm_means.ladder(context())
    d = t.data
    assert d["arm"].to_list() == ["j", "q", "m"]
    assert d["rows"].to_list() == [3, 2, 2]
    assert d["mean"].to_list() == pytest.approx([0.5, 1.0, 1.0])
    assert d["effect_vs_previous"].to_list()[1:] == pytest.approx([0.5, 0.0])
    assert t.display["recall"].to_list() == ["0.500 (n=3)", "1.000 (n=2)", "1.000 (n=2)"]
    assert t.display["full-recall rows"].to_list() == ["1/3", "2/2", "2/2"]


def test_scenario_comparison_includes_s1_pair() -> None:
    # S1 pair of alpha-1: j 2/7 = 0.286, q 7/7 = 1.000.
    t = arm_means.scenario_comparison(context())
    row = t.display.filter(pl.col("arm").str.starts_with("j")).row(0, named=True)
    assert row["S1"] == "0.286 (n=1)" and row["S5"] == "0.500 (n=3)"


def test_fill_examples_hand_derived() -> None:
    # valid j rows: alpha-1 carried 8200, 9500, 9000 of 9600 -> 26700/3/9600 = 0.927083;
    # alpha-2 7000, 7400 -> 0.75; beta-1 600, 1000 -> 800/9600 = 0.083333 (c2-j invalid).
    t = arm_means.fill_examples(context())
    fills = dict(zip(t.data["configuration"], t.data["fill"], strict=True))
    assert fills["acme/alpha-1"] == pytest.approx(26700 / 3 / 9600)
    assert fills["acme/alpha-2"] == pytest.approx(0.75)
    assert fills["beta/beta-1"] == pytest.approx(800 / 9600)
    assert t.display["fill"].to_list() == ["93%", "75%", "8%"]


def test_table3_reads_results_and_fill() -> None:
    # README: effects 0.5, -0.5, 0.75 with 2 pairs each; j rows 3, 2, 2; q rows 2, 2, 3.
    t = panel.table3(context())
    assert t.display["paired q−j"].to_list() == ["+0.500", "-0.500", "+0.750"]
    assert t.display["j rows"].to_list() == ["3", "2", "2"]
    assert t.display["q rows"].to_list() == ["2", "2", "3"]
    assert t.display["j fill"].to_list() == ["93%", "75%", "8%"]


def test_sparse_table_undefined_mean_says_not_estimable_not_zero() -> None:
    # No configuration has >= 4 pairs: mean and median undefined (null), printed as "not estimable" with the
    # reason (issue 30: no dash in place of a statistic).
    t = panel.sparse_cells(context())
    row = t.display.row(1, named=True)
    assert row["configurations"] == "0" and row["median"] == "not estimable: no configuration remains"
    assert t.data["mean"][1] is None


def test_parse_failures_and_fabrication_hand_derived() -> None:
    # j rows with parse failures: a3-j (7/14) and c1-j (0/14) -> 0.25 over 2; clean valid j rows
    # a1-j 1, a2-j 0, b1-j .5, b2-j 1, c3-j .5 -> 3/5 = 0.6. Failing rows: a2-j "I don't know",
    # c1-j "not recorded" (abstain), b1-q "port 8080; uuid ..." (fabricates).
    pf = failures.parse_failure_summary(context())
    assert pf.display.row(0)[3:] == ("0.250 (n=2)", "0.600 (n=5)")
    fab = failures.fabrication(context())
    by_arm = {r["arm"]: r for r in fab.data.iter_rows(named=True)}
    assert (by_arm["j"]["fabricates"], by_arm["j"]["abstains"]) == (0, 2)
    assert (by_arm["q"]["fabricates"], by_arm["q"]["abstains"]) == (1, 0)


def test_headings_levels_hand_derived() -> None:
    # valid j rows (headings, recall): (5,1) (0,0) (1,.5) (2,.5) (3,1) (0,0) (4,.5)
    t = headings.headings(context())
    assert t.data["rows"].to_list() == [2, 1, 1, 1, 1, 1]
    assert t.data["mean"].to_list() == pytest.approx([0.0, 0.5, 0.5, 1.0, 0.5, 1.0])


def test_validity_counts() -> None:
    # S5 j: 9 rows, b3-j infrastructure and c2-j catchup invalid.
    t = cells.validity(context())
    row = t.display.filter((pl.col("scenario") == "S5") & (pl.col("arm") == "j")).row(0, named=True)
    assert row["valid"] == "7/9" and row["invalid reasons"] == "catchup 1, infrastructure 1"


def test_formatters_never_print_zero_for_undefined() -> None:
    assert fmt_mean_n(float("nan"), 0) == "—"
    assert fmt_signed(None) == "—"
    assert fmt_signed(-0.0) == "+0.000"
    assert fmt_mean_n(0.947, 4) == "0.947 (n=4)"


def _empty_package():
    pkg, _ = handmade()
    return dataclasses.replace(pkg, rows=pkg.rows.head(0), checks=pkg.checks.head(0))


def test_every_builder_survives_empty_evidence() -> None:
    ctx = context(_empty_package(), {})
    specs = build_tables(ctx)
    assert [s.name for s in specs] and len(specs) == len(TABLE_ORDER)
    for s in specs:
        assert s.is_empty, s.name
        assert to_markdown(s).startswith("*Not in this evidence"), s.name
        assert "Not in this evidence" in to_html(s)
        assert to_csv(s).count("\n") == 1  # header only


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.booleans(), min_size=22, max_size=22))
def test_builders_never_crash_on_row_subsets(keep: list[bool]) -> None:
    pkg, res = handmade()
    rows = pkg.rows.filter(pl.Series(keep))
    sub = dataclasses.replace(pkg, rows=rows,
                              checks=pkg.checks.join(rows.select("row_id"), on="row_id", how="semi"))
    for results in ({}, res):
        for s in build_tables(context(sub, results)):
            md = to_markdown(s)
            assert s.is_empty == md.startswith("*Not in this evidence"), s.name
            if not s.is_empty:
                assert s.display.height >= 1


def _with_reduced_ceiling_rows():
    # t rows in group g1 of alpha-1: copies of a1-j (14/14) and a2-j (0/14) with a 4,800 ceiling.
    pkg, _ = handmade()
    t_rows = pkg.rows.filter(pl.col("row_id").is_in(["a1-j", "a2-j"])).with_columns(
        (pl.col("row_id") + "-t").alias("row_id"), pl.lit("t").alias("arm"),
        pl.lit(4800, dtype=pl.Int64).alias("declared_chars"))
    return dataclasses.replace(pkg, rows=pl.concat([pkg.rows, t_rows]))


def test_reduced_ceiling_tables_hand_derived() -> None:
    # g1 (the only group with t): j rows 14, 0, 7 of 14 -> n 3, two at >= 0.5, mean 0.5;
    # t rows 14, 0 -> n 2, one at >= 0.5, mean 0.5; m rows 14, 14 -> n 2, mean 1.0.
    ctx = context(_with_reduced_ceiling_rows())
    t = arm_means.reduced_ceiling(ctx)
    got = {r["arm"]: (r["rows"], r["rows_at_threshold"], r["mean"]) for r in t.data.iter_rows(named=True)}
    assert got == {"j": (3, 2, 0.5), "t": (2, 1, 0.5), "m": (2, 2, 1.0)}
    by_model = arm_means.reduced_ceiling_by_model(ctx)
    assert by_model.display.row(0) == ("acme/alpha-1", "2/3", "1/2", "2/3", "93%")


def test_threshold_classes_hand_derived() -> None:
    # Only beta-1 fails (j mean 0.25 < 0.5) and q rescues it (1.0); its fill is 800/9600.
    t = fill.threshold_classes(context())
    assert t.display.row(0)[1:] == ("8%", "1", "1/1")
    assert t.display.row(1)[1:] == ("—", "0", "—")


def test_deeper_repeats_hand_derived() -> None:
    # Plan alpha-1's run at 4 repeats (the others stay at 3, the median): it becomes a deep run.
    # j rows (headings, recall): (5, 1), (0, 0), (1, .5); q rows (5, 1), (5, 1).
    pkg, res = handmade()
    runs = tuple(dataclasses.replace(r, planned_repeats=4) if r.configuration == "acme/alpha-1" else r
                 for r in pkg.study.partition_runs)
    deep_pkg = dataclasses.replace(pkg, study=dataclasses.replace(pkg.study, partition_runs=runs))
    t = cells.deeper_repeats(context(deep_pkg, res))
    assert t.display.rows() == [
        ("acme/alpha-1", "j", "3", "0.500", "2", "93%", "0 on 1 rows, 1 on 1, 5 on 1"),
        ("acme/alpha-1", "q", "2", "1.000", "2", "63%", "5 on all 2")]  # fill (6100+6000)/2/9600


# ----------------------------------------------------------------- the v2 pilot table (t_v2_pilot)

def test_v2_pilot_table_is_empty_without_a_pilot() -> None:
    by_name = {t.name: t for t in build_tables(context())}
    folds, t = by_name["t_v2_pilot_folds"], by_name["t_v2_pilot"]
    assert t.name == "t_v2_pilot" and t.is_empty and "no v2 pilot package" in t.empty_reason
    assert folds.name == "t_v2_pilot_folds" and folds.is_empty and "no v2 pilot package" in folds.empty_reason


def test_v2_pilot_table_with_no_scored_row_says_so() -> None:
    t = pilot.v2_pilot(context(extras={pilot.PILOT_KEY: _empty_package()}))
    assert t.is_empty and "no valid row with an outcome on S5" in t.empty_reason


def test_v2_pilot_table_hand_derived_on_a_stand_in_pilot() -> None:
    # The hand-made package as the pilot (see its README). S5 only; arms in order j, q, then m.
    # alpha-1 j: a1-j 14, a2-j 0, a3-j 7 -> rows 3 (3 valid), mean 0.5, rows >= 0.5: 2 of 3;
    #   parse failures 0+0+2 = 2 and finish_length 0+0+2 = 2 of 15 folds; carried (8200+9500+9000)/3 = 8900;
    #   answers "all recalled", "I don't know", "half": 3 distinct over 3 repeats; j checks record no
    #   in_carrier, so no carrier audit (dash).
    # alpha-1 q: 3 rows, a3-q invalid -> 2 valid, both 14/14 and "all recalled": 1 distinct of 2; folds 10,
    #   parse failures 1, length cuts 1 (a2-q); carrier 14 + 14 = 28 of 28 checks.
    # alpha-2 q: b1-q carrier 1, b2-q carrier 8 (checks.csv in_carrier) -> 9 of 28.
    pkg, _ = handmade()
    t = pilot.v2_pilot(context(extras={pilot.PILOT_KEY: pkg}))
    d = t.data
    assert d.select("configuration", "arm").rows()[:3] == [
        ("acme/alpha-1", "j"), ("acme/alpha-1", "q"), ("acme/alpha-1", "m")]
    a1j = d.row(0, named=True)
    assert (a1j["rows"], a1j["valid_rows"], a1j["scored_rows"], a1j["rows_partial"]) == (3, 3, 3, 2)
    assert a1j["mean_recall"] == pytest.approx(0.5) and a1j["mean_carried_chars"] == pytest.approx(8900)
    assert (a1j["folds"], a1j["parse_failures"], a1j["finish_length"]) == (15, 2, 2)
    assert (a1j["distinct_answers"], a1j["repeats"], a1j["audited_rows"]) == (3, 3, None)
    assert (a1j["checks_passed"], a1j["checks"]) == (21, 42)
    assert t.display.row(0) == ("acme/alpha-1", "j (one opaque field)", "3 (3)", "0.500 (n=3)", "2/3", "3 of 3")
    assert t.display.row(1)[2:] == ("3 (2)", "1.000 (n=2)", "2/2", "1 of 2")
    folds = pilot.v2_pilot_folds(context(extras={pilot.PILOT_KEY: pkg}))  # the same cells, split (issue 23)
    assert folds.display.row(0) == ("acme/alpha-1", "j (one opaque field)", "2/15", "2/15", "8900 (n=3)", "—")
    assert folds.display.row(1)[2:] == ("1/10", "1/10", "6050 (n=2)", "28/28")
    assert len(t.display.columns) == len(folds.display.columns) == 6  # each fits a page's text column
    a2q = d.filter((pl.col("configuration") == "acme/alpha-2") & (pl.col("arm") == "q")).row(0, named=True)
    assert (a2q["carrier_values"], a2q["audited_checks"]) == (9, 28)
    assert to_csv(t).splitlines()[0].startswith("configuration,arm,rows,valid_rows,scored_rows")


PILOT = ROOT / "data" / "v2" / "pilot"


@pytest.mark.skipif(not (PILOT / "provenance.lock").is_file(), reason="data/v2/pilot not present")
def test_v2_pilot_table_on_the_committed_pilot() -> None:
    # data/v2/pilot/README.md: recall 0/14 on all 12 rows; j 4 of 5 folds unparsed per row, final carrier
    # 23 chars; q 4 parse failures and 3 length cuts per row, carrier 626; m carrier 251; no graded value
    # in any final carrier; temperature 0 -> the 4 repeats are identical (one distinct answer per arm).
    from analysis.evidence import load_package

    t = pilot.v2_pilot(context(extras={pilot.PILOT_KEY: load_package(PILOT)}))
    d = t.data
    assert d["arm"].to_list() == ["j", "q", "m"]
    assert d["rows"].to_list() == d["scored_rows"].to_list() == [4, 4, 4]
    assert d["mean_recall"].to_list() == [0.0, 0.0, 0.0] and d["rows_partial"].to_list() == [0, 0, 0]
    assert d["parse_failures"].to_list() == [16, 16, 0] and d["finish_length"].to_list() == [0, 12, 0]
    assert d["folds"].to_list() == [20, 20, 20]
    assert d["mean_carried_chars"].to_list() == pytest.approx([23, 626, 251])
    assert d["carrier_values"].to_list() == [0, 0, 0] and d["audited_checks"].to_list() == [56, 56, 56]
    assert d["distinct_answers"].to_list() == [1, 1, 1] and d["repeats"].to_list() == [4, 4, 4]
    assert t.display["mean recall"].to_list() == ["0.000 (n=4)"] * 3


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.booleans(), min_size=22, max_size=22))
def test_v2_pilot_table_counts_stay_within_their_denominators(keep: list[bool]) -> None:
    pkg, _ = handmade()
    rows = pkg.rows.filter(pl.Series(keep))
    sub = dataclasses.replace(pkg, rows=rows,
                              checks=pkg.checks.join(rows.select("row_id"), on="row_id", how="semi"))
    t = pilot.v2_pilot(context(extras={pilot.PILOT_KEY: sub}))
    assert t.is_empty == to_markdown(t).startswith("*Not in this evidence")
    for r in t.data.iter_rows(named=True):
        assert 1 <= r["scored_rows"] <= r["valid_rows"] <= r["rows"]
        assert r["rows_partial"] <= r["scored_rows"] and r["checks_passed"] <= r["checks"]
        assert r["parse_failures"] <= r["folds"] and r["finish_length"] <= r["folds"]
        assert 1 <= r["distinct_answers"] <= r["repeats"] <= r["scored_rows"]
        assert r["audited_rows"] is None or r["carrier_values"] <= r["audited_checks"]
