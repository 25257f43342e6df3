"""Every bad-input case of the format: the named error, file, line, column, and CLI exit 1.

Line numbers below are physical lines of the hand-made package: rows.csv has the
header on line 1, a1-j on 2, a1-q on 3, a3-j on 6, c1-q-try1 on 14, c1-q on 15;
checks.csv has a1-j's 14 checks on lines 2-15; study.toml has recency_cutoff on
line 3 and the first configuration's `published` on line 10.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from analysis.evidence import (
    ConsistencyError,
    EvidenceError,
    SchemaError,
    StudyError,
    load_package,
)
from evidence_support import copy_handmade, edit, run_cli, where

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
