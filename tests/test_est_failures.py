"""Failure modes (analysis/estimators/failures.py). Oracles: hand counts on the hand-made package."""

from __future__ import annotations

import math

import polars as pl
import pytest

from analysis.estimators.failures import (
    PLACEHOLDER_SIGNATURE,
    fabrication,
    failure_modes,
    grader_agreement,
    invalid_rows,
    parse_failures,
)
from analysis.evidence.schema import extra_column
from analysis.params import DEFAULT_PARAMS
from est_handmade_support import handmade, rows_frame


@pytest.fixture(scope="module")
def pkg():
    return handmade()


def test_handmade_parse_failures(pkg):
    # S5 rows with parse_failures > 0: a2-q (1, recall 1.0), a3-j (2, 0.5), c1-j (1, 0.0); all valid.
    # Clean valid S5 rows with an outcome: 16 - 3 = 13, recalls sum 9.5 -> 0.730769.
    # Single-field arms (j, p, t): failures a3-j, c1-j -> mean 0.25; clean j rows a1-j 1, a2-j 0,
    # b1-j .5, b2-j 1, c3-j .5 -> 3 / 5 = 0.6.
    single, overall = parse_failures(pkg.rows, "S5")
    assert (single.group, single.failure_rows, single.failure_valid, single.failure_invalid) == (
        "single_field_schema", 2, 2, 0)
    assert single.failure_mean == pytest.approx(0.25)
    assert (single.clean_rows, single.clean_mean) == (5, pytest.approx(0.6))
    assert (overall.group, overall.failure_rows, overall.failure_valid) == ("all", 3, 3)
    assert overall.failure_mean == pytest.approx(0.5)
    assert (overall.clean_rows, overall.clean_mean) == (13, pytest.approx(9.5 / 13))


def test_parse_failures_count_invalid_rows_and_empty_groups():
    rows = rows_frame([
        {"arm": "j", "parse_failures": 2, "valid": False, "invalid_reason": "catchup", "checks_passed": 14},
        {"arm": "j", "parse_failures": 1, "checks_passed": 7},
        {"arm": "q", "parse_failures": 0, "checks_passed": 0},
    ])
    g, allg = parse_failures(rows, "S5", (("none_here", ("t",)),))
    assert (g.failure_rows, g.clean_rows) == (0, 0)
    assert math.isnan(g.failure_mean) and math.isnan(g.clean_mean)
    assert (allg.failure_rows, allg.failure_valid, allg.failure_invalid) == (2, 1, 1)
    assert allg.failure_mean == pytest.approx(0.5) and allg.clean_mean == 0.0


def test_handmade_invalid_rows(pkg):
    # S5 invalid rows: a3-q, c1-q-try1 (infrastructure, q), b3-j (infrastructure, j),
    # c2-j (catchup, j, recall 3/14 kept as an outcome).
    t = invalid_rows(pkg.rows, "S5")
    assert t.to_dicts() == [
        {"invalid_reason": "catchup", "arm": "j", "rows": 1, "with_outcome": 1, "mean_recall": pytest.approx(3 / 14)},
        {"invalid_reason": "infrastructure", "arm": "j", "rows": 1, "with_outcome": 0, "mean_recall": None},
        {"invalid_reason": "infrastructure", "arm": "q", "rows": 2, "with_outcome": 0, "mean_recall": None},
    ]


def test_handmade_fabrication(pkg):
    # Failing rows (valid, S5, recall < 0.5): a2-j "I don't know" (abstains), b1-q
    # "port 8080; uuid 00000000-..." (fabricates; stock port and canonical UUID),
    # c1-j "not recorded in summary" (abstains).
    f = fabrication(pkg.rows, "S5", 0.5, DEFAULT_PARAMS.abstention_markers)
    assert (f.failing_rows, f.fabricates, f.abstains, f.no_answer, f.placeholder_rows) == (3, 1, 2, 0, 1)
    assert f.per_arm.to_dicts() == [
        {"arm": "j", "failing_rows": 2, "fabricates": 0, "abstains": 2, "no_answer": 0, "placeholder_rows": 0,
         "placeholder_fabricating": 0},
        {"arm": "q", "failing_rows": 1, "fabricates": 1, "abstains": 0, "no_answer": 0, "placeholder_rows": 1,
         "placeholder_fabricating": 1},
    ]
    b1 = f.per_row.filter(pl.col("row_id") == "b1-q").to_dicts()[0]
    assert b1["stock_port"] and b1["canonical_uuid"] and not b1["documentation_host"]


# Answers in the style of the paper's 4.11 example, and clean ones (planted-like values).
SIGNATURE_CASES = [
    ("ledger service port: 8443", {"stock_port"}),
    ("state file: /var/lib/migration/state.json; freeze start 02:00 UTC", {"round_time"}),
    ("shard count: 16 shards", {"round_number"}),
    ("deployment uuid: 123e4567-e89b-12d3-a456-426614174000", {"canonical_uuid"}),
    ("cache origin: https://cdn.example.com:7443", {"documentation_host"}),
    ("db at localhost:5432", {"documentation_host", "stock_port"}),
    ("retention 1000 days", {"round_number"}),
    ("ledger service port: 41873; freeze start 2031-04-09T03:17Z; 23 shards", set()),
    ("deployment uuid 5b0e7c52-9d31-4f6a-a2c8-3e91d4b70f16, rollback 06:52 UTC, tag v4.19.3-rc2", set()),
]


@pytest.mark.parametrize("answer,expected", SIGNATURE_CASES)
def test_placeholder_signature(answer, expected):
    rows = rows_frame([{"arm": "j", "checks_passed": 0, "answer": answer}])
    pr = fabrication(rows, "S5").per_row
    cats = sorted({p.category for p in PLACEHOLDER_SIGNATURE})
    hit = {c for c in cats if pr[c][0]}
    assert hit == expected
    assert pr["class"][0] == "fabricates"


def test_abstention_markers_case_and_apostrophes_and_empty_answers():
    rows = rows_frame([
        {"arm": "f", "checks_passed": 0, "answer": "Ledger port: I DON\u2019T KNOW"},
        {"arm": "f", "checks_passed": 0, "answer": "value Unknown"},
        {"arm": "f", "checks_passed": 0, "answer": "   "},
        {"arm": "f", "checks_passed": 0, "answer": None},
        {"arm": "f", "checks_passed": 7, "answer": "I don't know"},   # recall 0.5: not failing
    ])
    f = fabrication(rows, "S5", 0.5, DEFAULT_PARAMS.abstention_markers)
    assert (f.failing_rows, f.abstains, f.no_answer, f.fabricates) == (4, 2, 2, 0)


def test_grader_agreement(pkg):
    assert math.isnan(grader_agreement(pkg.rows, pkg.checks, "S5").share_rows)
    # Add a presence verdict (as text, like an extra CSV column): equal to `passed` except on
    # b2-q's 'rollback deadline' (presence finds it) -> row counts differ on b2-q only.
    checks = pkg.checks.with_columns(
        pl.when((pl.col("row_id") == "b2-q") & (pl.col("check") == "rollback deadline"))
        .then(pl.lit("true")).otherwise(pl.col("passed").cast(pl.String)).alias(extra_column("passed_presence")))
    g = grader_agreement(pkg.rows, checks, "S5")
    # 16 valid S5 rows with an outcome, 15 agree; 224 checks, 223 agree.
    assert (g.rows, g.agree_rows, g.checks, g.agree_checks) == (16, 15, 224, 223)
    assert g.share_rows == pytest.approx(15 / 16) and g.reason is None


def test_failure_modes_bundle(pkg):
    fm = failure_modes(pkg.rows, pkg.checks, "S5", DEFAULT_PARAMS)
    assert [g.group for g in fm.parse] == ["single_field_schema", "all"]
    assert fm.fabrication.failing_rows == 3 and fm.graders.reason is not None
