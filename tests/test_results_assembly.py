"""results.json assembly: the docs/RESULTS_CONTRACT.md keys exactly, JSON types, null for undefined, extras."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis.params import DEFAULT_PARAMS
from analysis.results import build_results, registry, write_results
from est_loader_support import load_handmade

# The required keys of docs/RESULTS_CONTRACT.md (contract version 1), block by block.
PANEL_KEYS = {"configurations", "mean", "median", "q1", "q3", "min", "max", "positive",
              "negative", "zero", "loo_min", "loo_max", "dispersion_lo", "dispersion_hi", "effects"}
EFFECT_KEYS = {"effect", "pairs", "control_rows", "treatment_rows", "control_mean", "treatment_mean"}
SPARSE_KEYS = {"configurations", "mean", "median"}
FAMILY_KEYS = {"families", "mean", "lofo_min", "lofo_max", "dispersion_lo", "dispersion_hi"}
DEPENDENCE_KEYS = {"scenario", "rows", "checks_per_row", "icc", "design_effect", "effective_per_row"}
HEADINGS_KEYS = {"pooled_r", "rows", "within_cell"}
WITHIN_KEYS = {"cells", "rows", "slope", "r"}
INT_FIELDS = {"configurations", "positive", "negative", "zero", "pairs", "control_rows",
              "treatment_rows", "families", "rows", "checks_per_row", "cells"}


@pytest.fixture(scope="module")
def results():
    return build_results(load_handmade(), DEFAULT_PARAMS)


def test_contract_blocks_have_exactly_the_contract_keys(results):
    assert set(results["panel"]) == PANEL_KEYS
    for eff in results["panel"]["effects"].values():
        assert set(eff) == EFFECT_KEYS
    assert set(results["sparse"]) == {"min_pairs_4", "equal_counts"}
    assert all(set(v) == SPARSE_KEYS for v in results["sparse"].values())
    assert set(results["bounds"]) == {"lo", "hi"}
    assert set(results["families"]) == FAMILY_KEYS
    assert set(results["dependence"]) == DEPENDENCE_KEYS
    assert set(results["evidence"]) == {"sha256", "kind"}  # kind: added by issue 35 (docs/RESULTS_KEYS.md)
    assert results["evidence"]["kind"] == "handmade"
    assert {"rows.csv", "checks.csv", "study.toml"} <= set(results["evidence"]["sha256"])
    if "headings" in results:
        assert set(results["headings"]) == HEADINGS_KEYS
        assert set(results["headings"]["within_cell"]) == WITHIN_KEYS


def test_counts_are_ints_and_undefined_is_null(results):
    def walk(node, path=""):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in INT_FIELDS and v is not None and not isinstance(v, (dict, list)):
                    assert type(v) is int, f"{path}.{k} is {type(v).__name__}"
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for v in node:
                walk(v, path)
        elif isinstance(node, float):
            assert math.isfinite(node), path
    contract = {k: results[k] for k in ("panel", "sparse", "bounds", "families", "dependence")}
    walk(contract)
    # No pairs with >= 4 pairs in the hand-made package: null, never 0.
    assert results["sparse"]["min_pairs_4"] == {"configurations": 0, "mean": None, "median": None}
    assert results["reasons"]["sparse.min_pairs_4.mean"]
    json.dumps(results, allow_nan=False)


def test_contract_values_match_the_hand_derivations(results):
    p = results["panel"]
    assert (p["configurations"], p["mean"], p["median"], p["q1"], p["q3"]) == (3, 0.25, 0.5, 0.0, 0.625)
    assert p["effects"]["beta/beta-1"] == {"effect": 0.75, "pairs": 2, "control_rows": 2,
                                           "treatment_rows": 3, "control_mean": 0.25,
                                           "treatment_mean": 1.0}
    assert results["sparse"]["equal_counts"] == {"configurations": 1, "mean": -0.5, "median": -0.5}
    assert results["bounds"]["hi"] == pytest.approx(4 / 9)
    assert results["families"]["mean"] == 0.375
    assert results["dependence"]["icc"] == pytest.approx(82 / 117)


def test_extras(results):
    assert results["provenance"]["version"] and results["provenance"]["params"]["min_pairs"] == 4
    assert results["contrast"] == {"control": "j", "treatment": "q", "scenario": "S5",
                                   "recency_cutoff": "2026-01-28", "checks_total": 14}
    assert results["panel_detail"]["effects_exact"]["acme/alpha-2"] == "-1/2"
    assert set(results["sensitivity"]["each_excluded"]) == set(results["panel"]["effects"])
    assert results["mcnemar"]["partial"]["complete"]["b"] == 1
    assert results["mcnemar"]["full"]["threshold"] == 1.0
    assert results["bounds_detail"]["missing_both"] == 1
    assert len(results["cells"]["rows"]) == 9


def test_named_exclusion_and_other_k(results):
    params = DEFAULT_PARAMS.replace(min_pairs=2, excluded_configurations=("beta/beta-1",))
    r = build_results(load_handmade(), params)
    assert r["sparse"]["min_pairs_4"]["configurations"] == 0      # the contract key stays K = 4
    assert r["sensitivity"]["min_pairs_2"]["configurations"] == 3
    assert r["sensitivity"]["excluded"]["members"] == ["acme/alpha-1", "acme/alpha-2"]
    assert r["sensitivity"]["excluded"]["mean"] == 0.0


def test_write_results_round_trips(results, tmp_path: Path):
    path = tmp_path / "results.json"
    write_results(results, path)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "NaN" not in text
    assert json.loads(text) == results


def test_secondary_mcnemar(results):
    # Hand-made: m rows exist only in alpha-1 g1 repeats 1 and 2, where q is 14/14 both times:
    # q vs m at >= .5: both succeed twice, b = c = 0 -> p = 1 (no discordant block);
    # only alpha-1 g1 plans both q and m (issue 10: the other runs never planned m, so their q rows are not
    # "missing partners"); there q's r3 row is invalid, so no block has q without m: first_only = 0
    # (it was 5 when b1, b2, c1, c2, c3 counted).
    sec = results["mcnemar_secondary"]["q_vs_m"]
    q_m = sec["partial"]
    assert len(sec["runs"]) == 1 and sec["runs"][0].startswith("acme/alpha-1 ")
    assert (q_m["complete"]["both"], q_m["complete"]["b"], q_m["complete"]["c"]) == (2, 0, 0)
    # no discordant block: the test is not estimable (issue 30), null with its reason, not p = 1
    assert q_m["complete"]["p_value"] is None and "no discordant pair" in q_m["complete"]["reason"]
    assert q_m["first_only"] == 0
    assert q_m["missing_as_failure"]["pairs"] == 2
    # No t rows at all: j vs t has no complete block -> null p with a reason.
    j_t = results["mcnemar_secondary"]["j_vs_t"]["full"]["complete"]
    assert j_t["pairs"] == 0 and j_t["p_value"] is None and j_t["reason"]


# -------------------------------------------------------------------------------- results registry
def test_the_registry_duplicate_key_check_fires(monkeypatch) -> None:
    # Plant: check_registry without the duplicate-key line -> a second block under an existing key
    # silently replaced the first in results.json.
    first = registry.RESULTS_BLOCKS[0]
    monkeypatch.setattr(registry, "RESULTS_BLOCKS", (*registry.RESULTS_BLOCKS, first))
    problems = registry.check_registry({})
    assert f"key {first.key!r} registered twice" in problems

