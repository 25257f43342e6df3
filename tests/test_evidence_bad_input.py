"""Every bad-input case of the format: the named error, file, line, column, and CLI exit 1.

Line numbers below are physical lines of the hand-made package: rows.csv has the
header on line 1, a1-j on 2, a1-q on 3, a3-j on 6, c1-q-try1 on 14, c1-q on 15;
checks.csv has a1-j's 14 checks on lines 2-15; study.toml has recency_cutoff on
line 3 and the first configuration's `published` on line 10.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis.evidence import (
    ConsistencyError,
    EvidenceError,
    SchemaError,
    StudyError,
    load_package,
    verify_package,
    write_lock,
)
from analysis.evidence.schema import ARM_PATTERN, IDENTIFIER_PATTERN, MAX_COUNT, MAX_TOKENS, charset_problem
from analysis.safeio import SafeIOError
from evidence_support import HANDMADE, REPO, copy_handmade, edit, run_cli, where
from evidence_support import cli_fails_cleanly as _cli_fails_cleanly

A1J = "a1-j,S5,acme/alpha-1,g1,1,j,1,true,,14,14,0,5,8200,9600,5,0,5,0,21000,all recalled"
A1Q = "a1-q,S5,acme/alpha-1,g1,1,q,2,true,,14,14,0,5,6100,9600,5,0,5,0,19000,all recalled"
A3J = "a3-j,S5,acme/alpha-1,g1,3,j,1,true,,14,7,2,1,9000,9600,5,0,3,2,21500,half"
TRY1 = "c1-q-try1,S5,beta/beta-1,g3,1,q,1,false,infrastructure,14,,0,,,9600,3,0,3,0,9000,"
HEADER = ("row_id,scenario,configuration,execution_group,repeat,arm,position,valid,invalid_reason,"
          "checks_total,checks_passed,parse_failures,headings_carried,carried_chars,declared_chars,"
          "folds,folds_clipped,finish_stop,finish_length,prompt_tokens_est,answer")


@dataclass(frozen=True)
class Case:
    """One corruption of the hand-made package and where it must be reported."""

    id: str
    file: str
    old: str
    new: str
    error: type[EvidenceError]
    at: tuple[str, int | None, str | None]


CASES = [
    Case("valid-maybe", "rows.csv", A1Q, A1Q.replace(",true,,", ",maybe,,"),
         SchemaError, ("rows.csv", 3, "valid")),
    Case("repeat-negative", "rows.csv", A1Q, A1Q.replace(",g1,1,", ",g1,-1,"),
         SchemaError, ("rows.csv", 3, "repeat")),
    Case("repeat-zero", "rows.csv", A1Q, A1Q.replace(",g1,1,", ",g1,0,"),
         SchemaError, ("rows.csv", 3, "repeat")),
    Case("passed-15-of-14", "rows.csv", A1Q, A1Q.replace(",14,14,", ",14,15,"),
         SchemaError, ("rows.csv", 3, "checks_passed")),
    Case("int-with-plus", "rows.csv", A1Q, A1Q.replace(",6100,", ",+6100,"),
         SchemaError, ("rows.csv", 3, "carried_chars")),
    Case("int-decimal", "rows.csv", A1Q, A1Q.replace(",19000,", ",19000.0,"),
         SchemaError, ("rows.csv", 3, "prompt_tokens_est")),
    Case("headings-above-5", "rows.csv", A1Q, A1Q.replace(",0,5,6100,", ",0,6,6100,"),
         SchemaError, ("rows.csv", 3, "headings_carried")),
    Case("empty-required", "rows.csv", A1Q, A1Q.replace("a1-q,S5,", "a1-q,,"),
         SchemaError, ("rows.csv", 3, "scenario")),
    Case("valid-with-reason", "rows.csv", A1Q, A1Q.replace(",true,,", ",true,catchup,"),
         SchemaError, ("rows.csv", 3, "invalid_reason")),
    Case("clipped-above-folds", "rows.csv", A1Q, A1Q.replace(",5,0,5,0,", ",5,6,5,0,"),
         SchemaError, ("rows.csv", 3, "folds_clipped")),
    Case("truncated-rows", "rows.csv", "s1-a-q,S1,acme/alpha-1,single,1,q,2,true,,7,7,0,5,2500,9600,1,0,1,0,5800,all\n",
         "s1-a-q,S1,acme/alpha-1,single,1,q,2,tr", SchemaError, ("rows.csv", 23, None)),
    Case("truncated-checks", "checks.csv", "s1-a-q,freeze end,2031-04-09 05:41 UTC,true,true\n",
         "s1-a-q,freeze end", SchemaError, ("checks.csv", 253, None)),
    Case("wrong-header", "rows.csv", HEADER, HEADER.replace(",valid,", ",is_valid,"),
         SchemaError, ("rows.csv", 1, "valid")),
    Case("duplicate-header", "rows.csv", HEADER, HEADER.replace(",answer", ",row_id"),
         SchemaError, ("rows.csv", 1, "row_id")),
    Case("checks-bad-bool", "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,\n",
         "a1-j,dns zone,corp.vantgrid.test,true,maybe\n", SchemaError, ("checks.csv", 11, "in_carrier")),
    Case("stray-quote", "rows.csv", A1Q, A1Q.replace("all recalled", 'all "recalled"'),
         SchemaError, ("rows.csv", 3, None)),
    Case("unclosed-quote", "rows.csv", A1Q, A1Q.replace("all recalled", '"all recalled'),
         SchemaError, ("rows.csv", 3, None)),
    Case("blank-line", "rows.csv", A1Q + "\n", A1Q + "\n\n", SchemaError, ("rows.csv", 4, None)),
    Case("not-utf8", "rows.csv", A1Q, A1Q.replace("all recalled", "all r\udcffecalled"),
         SchemaError, ("rows.csv", 3, "byte 76")),
    Case("duplicate-row-id", "rows.csv", A1Q, A1Q.replace("a1-q,", "a1-j,"),
         ConsistencyError, ("rows.csv", 3, "row_id")),
    Case("two-valid-one-slot", "rows.csv", TRY1,
         TRY1.replace(",false,infrastructure,14,,", ",true,,14,,"),
         ConsistencyError, ("rows.csv", 15, "valid")),
    Case("unknown-configuration", "rows.csv", A1Q, A1Q.replace("acme/alpha-1", "acme/alpha-9"),
         ConsistencyError, ("rows.csv", 3, "configuration")),
    Case("repeat-above-planned", "rows.csv", A3J, A3J.replace(",g1,3,", ",g1,4,"),
         ConsistencyError, ("rows.csv", 6, "repeat")),
    Case("checks-total-varies", "rows.csv", A3J, A3J.replace(",14,7,", ",13,7,"),
         ConsistencyError, ("rows.csv", 6, "checks_total")),
    Case("missing-check", "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,\n", "",
         ConsistencyError, ("rows.csv", 2, "checks_total")),
    Case("passed-count-differs", "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,\n",
         "a1-j,dns zone,corp.vantgrid.test,false,\n", ConsistencyError, ("rows.csv", 2, "checks_passed")),
    Case("check-of-unknown-row", "checks.csv", "a1-j,dns zone,corp.vantgrid.test,true,\n",
         "zz-9,dns zone,corp.vantgrid.test,true,\n", ConsistencyError, ("checks.csv", 11, "row_id")),
    Case("study-bad-date", "study.toml", "published = 2026-03-01", "published = 2026-02-30",
         StudyError, ("study.toml", 11, "char 13")),
    Case("study-date-as-string", "study.toml", "recency_cutoff = 2026-01-28",
         'recency_cutoff = "2026-01-28"', StudyError, ("study.toml", 3, "study.recency_cutoff")),
    Case("study-datetime", "study.toml", "published = 2026-03-01", "published = 2026-03-01T10:00:00",
         StudyError, ("study.toml", 11, 'configurations."acme/alpha-1".published')),
    Case("study-missing-key", "study.toml", 'control = "j"\n', "", StudyError,
         ("study.toml", 1, "study.control")),
    Case("study-unknown-run-configuration", "study.toml", 'configuration = "beta/beta-1"',
         'configuration = "beta/beta-9"', StudyError,
         ("study.toml", 35, "partition_runs[2].configuration")),
    Case("study-planned-zero", "study.toml", "planned_repeats = 3", "planned_repeats = 0",
         StudyError, ("study.toml", 27, "partition_runs[0].planned_repeats"), ),
]


def _apply(case: Case, root) -> None:
    count = 3 if case.id == "study-planned-zero" else 1
    new = case.new.encode("utf-8", "surrogateescape")
    edit(root, case.file, case.old, new, count=count)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_named_and_located(case: Case, tmp_path) -> None:
    root = copy_handmade(tmp_path / "pkg")
    _apply(case, root)
    with pytest.raises(EvidenceError) as info:
        load_package(root)
    err = info.value
    assert type(err) is case.error, str(err)
    assert case.at in where(err), str(err)
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    file, line, column = case.at
    assert (f"{file}:{line}" if line else file) in proc.stderr
    assert (column or "") in proc.stderr
    assert proc.stdout == ""


# ------------------------------------------------------------------ a copy of the hand-made package per test
@pytest.fixture()
def pkg(tmp_path: Path) -> Path:
    return copy_handmade(tmp_path / "pkg")


# ------------------------------------------------------------------ silent wrong numbers
def _row_line(root: Path, row_id: str) -> int:
    lines = (root / "rows.csv").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(row_id + ","))


def _set_cell(root: Path, row_id: str, column: str, value: str) -> None:
    rows = pl.read_csv(root / "rows.csv", infer_schema=False)
    rows = rows.with_columns(pl.when(pl.col("row_id") == row_id).then(pl.lit(value))
                             .otherwise(pl.col(column)).alias(column))
    rows.write_csv(root / "rows.csv")
    write_lock(root)


@pytest.mark.parametrize("value", ["999999999999999999", str(2**63 - 1), str(2**64), str(MAX_COUNT + 1)])
def test_counts_past_their_range_are_errors_with_line_and_column(pkg: Path, value: str) -> None:
    _set_cell(pkg, "a1-j", "folds", value)
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-j"), "folds") in where(info.value)
    _cli_fails_cleanly("verify", str(pkg), expect="folds")


@pytest.mark.parametrize("value", [str(2**63 - 1), str(2**64), "100000000", "1e8", "1000001"])
def test_planned_repeats_past_their_range_are_errors(pkg: Path, value: str) -> None:
    edit(pkg, "study.toml", "planned_repeats = 3", f"planned_repeats = {value}", count=3)
    with pytest.raises(StudyError) as info:
        load_package(pkg)
    assert ("study.toml", 27, "partition_runs[0].planned_repeats") in where(info.value)
    _cli_fails_cleanly("verify", str(pkg), expect="planned_repeats")


def test_all_runs_together_plan_a_bounded_number_of_slots(pkg: Path) -> None:
    edit(pkg, "study.toml", "planned_repeats = 3", "planned_repeats = 400000", count=3)
    with pytest.raises(StudyError, match="1200000 repeats in all"):
        load_package(pkg)


def test_a_homoglyph_arm_is_refused_not_counted(pkg: Path) -> None:
    _set_cell(pkg, "a1-q", "arm", "\u051b")  # CYRILLIC SMALL LETTER QA, looks like q
    with pytest.raises(SchemaError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-q"), "arm") in where(info.value)
    assert "not an arm code" in str(info.value)


@pytest.mark.parametrize("column, value", [("scenario", "S5 "), ("configuration", "acme/<b>"),
                                           ("execution_group", "g\u200b1"), ("arm", "Q"), ("arm", "q" * 17)])
def test_identifiers_outside_their_character_set_are_refused(pkg: Path, column: str, value: str) -> None:
    _set_cell(pkg, "a1-q", column, value)
    with pytest.raises(EvidenceError) as info:
        load_package(pkg)
    assert ("rows.csv", _row_line(pkg, "a1-q"), column) in where(info.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arm=st.text(min_size=1, max_size=20), scenario=st.text(min_size=1, max_size=20))
def test_any_arm_or_scenario_is_loaded_only_if_it_is_in_its_character_set(tmp_path_factory, arm: str,
                                                                           scenario: str) -> None:
    """Property: a row's arm and scenario either load unchanged and in their set, or fail verify."""
    import re

    root = copy_handmade(tmp_path_factory.mktemp("cs"))
    rows = pl.read_csv(root / "rows.csv", infer_schema=False)
    rows.with_columns(pl.when(pl.col("row_id") == "a1-q").then(pl.lit(arm)).otherwise(pl.col("arm")).alias("arm"),
                      pl.when(pl.col("row_id") == "b1-j").then(pl.lit(scenario)).otherwise(pl.col("scenario"))
                      .alias("scenario")).write_csv(root / "rows.csv")
    write_lock(root)
    try:
        package = load_package(root)
    except EvidenceError:
        return
    assert package.rows.filter(pl.col("row_id") == "a1-q").item(0, "arm") == arm
    assert re.fullmatch(ARM_PATTERN, arm) and re.fullmatch(IDENTIFIER_PATTERN, scenario)


def test_configuration_keys_and_contrast_arms_follow_the_character_sets(pkg: Path) -> None:
    edit(pkg, "study.toml", '[configurations."beta/beta-1"]', '[configurations."beta <script>"]')
    edit(pkg, "study.toml", 'control = "j"', 'control = "J"')
    with pytest.raises(EvidenceError) as info:
        load_package(pkg)
    cols = {p.column for p in info.value.problems if p.file == "study.toml"}
    assert {'configurations."beta <script>"', "study.control"} <= cols


def test_control_equal_to_treatment_fails_verify_not_the_build(pkg: Path, tmp_path: Path) -> None:
    edit(pkg, "study.toml", 'treatment = "q"', 'treatment = "j"')
    with pytest.raises(StudyError) as info:
        verify_package(pkg)
    assert ("study.toml", 5, "study.treatment") in where(info.value)
    _cli_fails_cleanly("--evidence", str(pkg), "--out", str(tmp_path / "out"), expect="two different arms")


def test_declared_arms_make_every_other_arm_an_error(pkg: Path) -> None:
    edit(pkg, "study.toml", 'scenario = "S5"\n', 'scenario = "S5"\narms = ["j", "q", "m"]\n')
    assert load_package(pkg).study.arms == ("j", "q", "m")  # the hand-made arms, all declared
    edit(pkg, "study.toml", 'arms = ["j", "q", "m"]', 'arms = ["j", "q"]')
    with pytest.raises(ConsistencyError) as info:
        load_package(pkg)
    m_lines = [i for i, line in enumerate((pkg / "rows.csv").read_text().splitlines(), 1) if ",m," in line]
    assert {(p.line, p.column) for p in info.value.problems} == {(n, "arm") for n in m_lines}
    edit(pkg, "study.toml", 'arms = ["j", "q"]', 'arms = ["j", "m"]')
    with pytest.raises(StudyError, match=r"treatment arm 'q' is not in study\.arms"):
        load_package(pkg)


def test_the_shipped_packages_still_verify() -> None:
    for root in (REPO / "data" / "v1", REPO / "data" / "v2" / "pilot", HANDMADE):
        if (root / "provenance.lock").is_file():
            verify_package(root)


def test_the_charset_rules_are_one_definition() -> None:
    from analysis.runner.preflight import identifier_problem

    assert charset_problem("identifier", "qwen/qwen3.5-9b:free@Alpha#2+x") is None
    assert identifier_problem("qwen/qwen3.5-9b", "--model") is None
    assert "not an identifier" in identifier_problem("q w", "--model")
    assert charset_problem("arm", "\u051b") and charset_problem("arm", "j") is None


@pytest.mark.parametrize("value, where", [
    ("1000000000000000000000000000000", "context_length"),  # /models context_length 10**30
    ("9223372036854775808", "context_length"),  # 2**63: beyond TOML's 64 bits
    (str(MAX_TOKENS + 1), "fold_max_tokens"),
    ("0", "recall_max_tokens"),
    ('"4096"', "context_length"),
    ("1" * 5000, None),  # beyond Python's int-string limit: a StudyError, no traceback
])
def test_verify_refuses_runner_integers_out_of_range(tmp_path: Path, value: str, where: str | None) -> None:
    root = copy_handmade(tmp_path / "p")
    with (root / "study.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[runner."c"]\nbase_url = "http://x"\n{where or "seed"} = {value}\n')
    write_lock(root)
    with pytest.raises(StudyError) as info:
        load_package(root)
    if where is not None:
        assert any(p.column == f"runner.c.{where}" for p in info.value.problems), info.value.problems
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and len(proc.stderr) < 2000


def test_an_integer_beyond_64_bits_anywhere_in_study_toml_is_refused(tmp_path: Path) -> None:
    root = copy_handmade(tmp_path / "p")
    with (root / "study.toml").open("a", encoding="utf-8") as f:
        f.write("\n[runner]\nanything = 18446744073709551616\n")
    write_lock(root)
    with pytest.raises(StudyError, match="64-bit"):
        load_package(root)


def test_messages_stay_short_whatever_the_file_holds(tmp_path: Path) -> None:
    # a megabyte-long value quoted in a problem (the lock's "algorithm") printed a megabyte of stderr
    root = copy_handmade(tmp_path / "p")
    doc = json.loads((root / "provenance.lock").read_text(encoding="utf-8"))
    doc["algorithm"] = "x" * 1_000_000
    (root / "provenance.lock").write_text(json.dumps(doc), encoding="utf-8")
    proc = run_cli("verify", str(root))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 5000 and "more characters" in proc.stderr
    assert len(str(SafeIOError("f" * 10_000, "y" * 10_000))) < 3100  # 1,000 of the path, 2,000 of the message

