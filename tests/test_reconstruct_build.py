"""The rebuild of data/v1: byte-identical, locked, fast, and every primitive it uses met."""
from __future__ import annotations

import time

import polars as pl
import pytest
from audit_support import published_claims

from analysis.evidence import load_package
from analysis.reconstruct.build import build_reconstruction, reconstruct
from support.paths import REPO as ROOT

CLAIMS = ROOT / "data" / "published" / "claims.yaml"


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    t0 = time.perf_counter()
    build_reconstruction(CLAIMS, a)
    elapsed = time.perf_counter() - t0
    build_reconstruction(CLAIMS, b)
    return a, b, elapsed


def test_rebuild_is_byte_identical_and_fast(two_builds):
    a, b, elapsed = two_builds
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
    assert elapsed < 30


def test_committed_data_v1_is_the_current_rebuild(two_builds):
    a, _, _ = two_builds
    for p in sorted(a.iterdir()):
        assert (ROOT / "data" / "v1" / p.name).read_bytes() == p.read_bytes(), f"rerun the build: {p.name} differs"


def test_lock_verifies_and_the_package_loads(two_builds):
    a, _, _ = two_builds
    pkg = load_package(a)
    assert set(pkg.digests) == {"rows.csv", "checks.csv", "study.toml", "RECONSTRUCTION.md", "findings.csv",
                                "datapackage.json"}
    assert len(pkg.study.partition_runs) == 23
    assert "RECONSTRUCTION" in (a / "RECONSTRUCTION.md").read_text(encoding="utf-8").splitlines()[0]


def test_tampering_breaks_the_lock(two_builds, tmp_path):
    import shutil

    from analysis.evidence import EvidenceError
    a, _, _ = two_builds
    d = tmp_path / "t"
    shutil.copytree(a, d)
    (d / "rows.csv").write_bytes((d / "rows.csv").read_bytes().replace(b",14,14,", b",14,13,", 1))
    with pytest.raises(EvidenceError):
        load_package(d)


def test_catchup_rows_are_the_papers_six():
    b = reconstruct(published_claims())  # load_claims(CLAIMS), once per session (audit_support)
    cu = [r for r in b.rows if r["invalid_reason"] == "catchup"]
    assert sorted(r["arm"] for r in cu) == ["j", "j", "j", "j", "p", "q"]
    assert sorted(r["checks_passed"] for r in cu) == [0, 0, 0, 0, 14, 14]


def test_every_row_with_an_outcome_has_its_checks(two_builds):
    a, _, _ = two_builds
    pkg = load_package(a)
    per_row = pkg.checks.group_by("row_id").agg(pl.len().alias("n"), pl.col("passed").sum().alias("p"))
    j = pkg.rows.filter(pl.col("checks_passed").is_not_null()).join(per_row, on="row_id")
    assert j.height == pkg.rows.filter(pl.col("checks_passed").is_not_null()).height
    assert (j["n"] == j["checks_total"]).all() and (j["p"] == j["checks_passed"]).all()
