"""Issue 10: every audit status from a tiny claims file and rules whose expected status is known by hand."""
from __future__ import annotations

import pytest

from analysis.audit.derive import (
    CHOICE,
    CONSISTENT,
    CONSTRUCTION,
    FITTED,
    INCONSISTENT,
    LEGEND,
    MISMATCH,
    NOT_DETERMINABLE,
    REACHED,
    REPRODUCED,
    STATUSES,
    Reading,
    derive,
    from_printed,
)
from analysis.reconstruct.claims import parse_claims
from analysis.reconstruct.rules import (
    RULES,
    Rule,
    RuleDeclarationError,
    TrackedClaims,
    UndeclaredClaimRead,
    resolve_rules,
)
from support.paths import REPO as ROOT

TINY = """claims:
- {id: a.cell1, section: '1', what: a, value: 3, decimals: 0, printed: '3', role: primitive}
- {id: a.cell2, section: '1', what: b, value: 4, decimals: 0, printed: '4', role: primitive}
- {id: a.sum, section: '1', what: a+b, value: 7, decimals: 0, printed: '7', role: derived}
- {id: a.mean, section: '1', what: estimator output, value: 0.5, decimals: 1, printed: '0.5', role: derived}
- {id: a.icc, section: '1', what: tuned, value: 0.75, decimals: 2, printed: '0.75', role: derived}
- {id: a.full, section: '1', what: placed count, value: 1, decimals: 0, printed: '1', role: derived}
"""
CLAIMS = parse_claims(TINY, "tiny.yaml")
# Ra reads the two cells and places them; Rb places a.full exactly; Rc was tuned to a.icc; Rd reads nothing.
TINY_RULES = (Rule("Ra", "cells", reads=("a.cell?",), builds=("a.cell?",)), Rule("Rb", "full", builds=("a.full",)),
              Rule("Rc", "fit", reads=("a.cell1",), fitted=("a.icc",)), Rule("Rd", "estimator input"))
R = resolve_rules(CLAIMS, TINY_RULES)


def _d(cid, **kw):
    kw.setdefault("recomputed", True)
    kw.setdefault("matched", True)
    return derive(cid, rules=R, **kw)


def test_reached_when_no_rule_behind_it_touches_it():
    # a.mean = 0.5 computed by an estimator from rows that rule Rd placed without reading any claim: in a
    # reconstruction that is "reached by the reconstruction", never "reproduced" (issue 19).
    v = _d("a.mean", rules_behind=("Rd",))
    assert (v.status, v.rules) == (REACHED, ("Rd",))


def test_reproduced_only_for_a_study_of_its_own():
    v = _d("a.mean", rules_behind=("Rd",), reconstruction=False)
    assert (v.status, v.rules) == (REPRODUCED, ())  # the rules of a reconstruction do not apply to real rows


def test_holds_by_construction_when_a_rule_places_it():
    assert _d("a.full", rules_behind=("Rb",)).status == CONSTRUCTION
    assert _d("a.cell1", rules_behind=("Ra",)).status == CONSTRUCTION  # a primitive the rule read


def test_holds_by_construction_through_a_transcribed_cell():
    # a.cell2 was transcribed from a.sum: a rule reading a.cell2 reads a.sum too.
    r = resolve_rules(CLAIMS, TINY_RULES, transcribed={"a.cell2": ("a.sum",)})
    assert derive("a.sum", recomputed=True, matched=True, rules_behind=("Ra",), rules=r).status == CONSTRUCTION


def test_a_claim_the_printed_cells_decide_is_judged_against_them_alone():
    # a.sum = 3 + 4 = 7 from the printed cells: consistent, whatever the rows give (the note says what they give)
    v = from_printed(matched=True, cells="a.cell1 + a.cell2", explanation="The package's rows give 8.")
    assert v.status == CONSISTENT and "a.cell1 + a.cell2" in v.note and "rows give 8" in v.note
    v = from_printed(matched=False, cells="c", readings=[Reading("unrounded inputs", True, "gives 7")])
    assert v.status == CHOICE and "unrounded inputs" in v.note
    v = from_printed(matched=False, cells="c", readings=[Reading("unrounded inputs", False, "gives 6")])
    assert v.status == INCONSISTENT and "unrounded inputs: gives 6" in v.note


def test_fitted_beats_every_other_reason():
    assert _d("a.icc", rules_behind=("Ra", "Rc")).status == FITTED


def test_reachable_only_under_a_named_choice():
    v = _d("a.mean", matched=False, rules_behind=("Rd",),
           readings=[Reading("models weigh equally", False, "0.4"), Reading("rows are pooled", True, "0.5")])
    assert v.status == CHOICE and "rows are pooled" in v.note and "models weigh equally: 0.4" in v.note


def test_inconsistent_lists_every_reading_tried():
    v = _d("a.mean", matched=False, rules_behind=("Rd",), printed_inconsistent="no total of 4 x 14 prints 0.5",
           readings=[Reading("exact mean", False, "0.49"), Reading("per-row rounding", False, "0.49")])
    assert v.status == INCONSISTENT and "exact mean: 0.49" in v.note and "per-row rounding" in v.note


def test_mismatch_when_the_reconstruction_misses():
    v = _d("a.icc", matched=False, rules_behind=("Rc",), explanation="fitted on too few rows")
    assert v.status == MISMATCH and "fitted on too few rows" in v.note  # a missed fitted claim is a mismatch


def test_not_determinable_only_without_a_recomputed_value():
    assert _d("a.mean", recomputed=False, matched=False, rules_behind=()).status == NOT_DETERMINABLE
    # a recomputed value that differs is never "not determinable"
    assert _d("a.mean", matched=False, rules_behind=("Rd",)).status == MISMATCH


def test_legend_documents_every_status():
    assert set(LEGEND) == set(STATUSES) and len(STATUSES) == 10


def test_a_rule_naming_an_unknown_claim_is_a_named_error():
    with pytest.raises(RuleDeclarationError, match=r"rule Rx reads names unknown claim id 'a\.nope'"):
        resolve_rules(CLAIMS, (Rule("Rx", "bad", reads=("a.nope",)),))
    with pytest.raises(RuleDeclarationError, match=r"unknown claim id 'b\.\*'"):
        resolve_rules(CLAIMS, (Rule("Rx", "bad", builds=("b.*",)),))


def test_a_rule_reading_an_undeclared_claim_fails():
    t = TrackedClaims(CLAIMS, R)
    with t.rule("Ra"):
        assert t.by_id["a.cell1"].value == 3
        with pytest.raises(UndeclaredClaimRead, match=r"rule Ra read claim 'a\.sum'"):
            t.by_id["a.sum"]
    with pytest.raises(UndeclaredClaimRead, match="outside any rule"):
        t["a.cell1"]
    assert t.used == {"Ra": {"a.cell1"}}


def test_reconstruction_rules_declare_exactly_what_they_read():
    # The real build with the instrumented accessor: no undeclared read (it would raise), and every declared
    # read is really read (declarations are not padded), except the claims a read cell was transcribed from.
    from audit_support import published_claims

    from analysis.reconstruct.build import reconstruct
    from analysis.reconstruct.rules import TRANSCRIBED_FROM
    claims = published_claims()  # load_claims(data/published/claims.yaml), once per session
    b = reconstruct(claims)
    sources = {x for v in TRANSCRIBED_FROM.values() for x in v}
    for r in resolve_rules(claims).values():
        assert r.reads - sources == b.claims_read.get(r.id, set()), r.id
    assert {r.id for r in RULES} >= set(b.claims_read)


def test_a_rule_declaration_with_an_unknown_id_stops_the_build(monkeypatch, tmp_path):
    import analysis.reconstruct.rules as rules_mod
    from analysis.reconstruct.build import build_reconstruction
    monkeypatch.setattr(rules_mod, "RULES", (*RULES, Rule("R99", "typo", reads=("t3.nope.j_mean",))))
    with pytest.raises(RuleDeclarationError, match="R99"):
        build_reconstruction(ROOT / "data" / "published" / "claims.yaml", tmp_path / "v1")
    assert not (tmp_path / "v1" / "rows.csv").exists()


def test_clis_name_the_bad_declaration_and_exit_2(tmp_path, capsys):
    # A claims file that lacks claims the rules declare: both the audit and the rebuild stop with a named error.
    bad = tmp_path / "claims.yaml"
    bad.write_text(TINY, encoding="utf-8")
    from analysis.audit.__main__ import main as audit_main
    from analysis.reconstruct.__main__ import main as build_main
    assert audit_main(["--evidence", str(ROOT / "data" / "v1"), "--claims", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "rule declarations" in err and "unknown claim id" in err and "Traceback" not in err
    assert build_main(["build", "--claims", str(bad), "--out", str(tmp_path / "v1")]) == 2
    assert "rule R1 reads names unknown claim id 'design.standard.rows_per_arm'" in capsys.readouterr().err
    assert not (tmp_path / "v1").exists()
