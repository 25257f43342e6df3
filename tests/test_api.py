"""The public Python API (analysis.api: core, stats, studies; re-exported by ``import analysis``; docs/API.md).

Oracles: the hand-made package's numbers derived by hand in tests/fixtures/handmade/README.md (panel
mean 0.75/3 = 0.25; family-weighted mean 0.375, leave-one-family-out [0.0, 0.75]), the t quantile
from scipy, and the command line's own results.json and tables/<name>.csv for the same package.
"""

from __future__ import annotations

import doctest
import inspect
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import analysis
from analysis.evidence import EvidenceError, PackageNotFoundError, ProvenanceError
from support.paths import HANDMADE, REPO


def _public() -> list[tuple[str, object]]:
    return [(name, getattr(analysis, name)) for name in analysis.__all__ if name != "__version__"]


def test_all_names_resolve_and_import_stays_light() -> None:
    """Every name of analysis.__all__ resolves; a bare ``import analysis`` loads no polars (the CLI's --help)."""
    assert {"verify", "load", "analyse", "paired_effect", "report", "plan_v2"} <= set(analysis.__all__)
    for name, obj in _public():
        assert obj is getattr(analysis.api, name), name
    code = "import sys, analysis; print('polars' in sys.modules, analysis.__version__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", analysis.__version__]
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        analysis.nonesuch  # noqa: B018


def test_every_public_name_is_documented_numpydoc_with_examples() -> None:
    """Each public function has a typed signature and numpydoc Parameters/Returns/References/Examples sections;
    each public class a docstring with a doctest in it or in its methods."""
    for name, obj in _public():
        doc = inspect.getdoc(obj) or ""
        assert doc, name
        if inspect.isfunction(obj):
            sig = inspect.signature(obj)
            assert sig.return_annotation is not inspect.Signature.empty, name
            for section in ("Parameters\n----------", "Returns\n-------", "References\n----------",
                            "Examples\n--------\n>>> "):
                assert section in doc, f"{name}: no {section.splitlines()[0]} section"
        elif inspect.isclass(obj) and not issubclass(obj, Exception):  # a result type: its methods show it
            docs = [doc, *(inspect.getdoc(m) or "" for n, m in vars(obj).items() if not n.startswith("_"))]
            assert any("Examples\n--------\n>>> " in d for d in docs), f"{name}: no Examples"


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_docstring_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Examples section of the public API runs as a doctest (from the repository root, where
    tests/fixtures/handmade lies) and passes."""
    monkeypatch.chdir(REPO)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    examples = 0
    for module in (analysis.api.core, analysis.api.stats, analysis.api.studies):
        for test in finder.find(module):
            examples += len(test.examples)
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert examples >= 20


def test_paired_effect_is_the_hand_derived_panel_mean_with_its_t_interval() -> None:
    """Panel mean 0.25 (README: 0.75/3); sd = sqrt(0.875/2); t(0.975, 2) from scipy; a one-row polars frame."""
    from scipy import stats

    e = analysis.paired_effect(HANDMADE)
    half = stats.t.ppf(0.975, 2) * math.sqrt(0.875 / 2) / math.sqrt(3)
    assert e.estimate == pytest.approx(0.25)
    assert (e.ci_low, e.ci_high) == pytest.approx((0.25 - half, 0.25 + half))
    assert e.n == 3
    frame = e.to_frame()
    assert isinstance(frame, pl.DataFrame) and frame.height == 1
    assert frame.select("estimate", "n").row(0) == (pytest.approx(0.25), 3)
    f = analysis.family_weighted(analysis.load(HANDMADE))
    assert (f.estimate, f.n, f.extra["lofo_min"], f.extra["lofo_max"]) == (0.375, 2, 0.0, 0.75)


def test_one_call_results_match_results_json() -> None:
    """Each one-call function reads the number results.json holds (the same estimator, not a second one)."""
    pkg = analysis.load(HANDMADE)
    r = analysis.analyse(pkg).to_dict()
    assert analysis.repeat_bounds(pkg).ci_low == r["bounds"]["lo"]
    assert analysis.repeat_bounds(pkg).ci_high == r["bounds"]["hi"]
    icc = analysis.within_row_icc(pkg)
    assert (icc.estimate, icc.extra["design_effect"], icc.n) == (
        r["dependence"]["icc"], r["dependence"]["design_effect"], r["dependence"]["rows"])
    h = analysis.heading_slopes(pkg)
    assert (h.estimate, h.n, h.extra["pooled_r"]) == (
        r["headings"]["within_cell"]["slope"], r["headings"]["within_cell"]["rows"], r["headings"]["pooled_r"])
    m = analysis.mcnemar(pkg)
    assert m.p_value == r["mcnemar"]["partial"]["complete"]["p_value"]
    assert m.n == r["mcnemar"]["partial"]["complete"]["pairs"]
    for fn in (analysis.repeat_bounds, analysis.within_row_icc, analysis.mcnemar, analysis.family_weighted,
               analysis.heading_slopes, analysis.fill, analysis.survival):
        frame = fn(pkg).to_frame()
        assert frame.height == 1 and frame.columns[:5] == ["statistic", "estimate", "ci_low", "ci_high", "n"]
    with pytest.raises(analysis.ApiError, match="threshold='partial' or threshold='full'"):
        analysis.mcnemar(pkg, threshold="half")


@pytest.mark.slow  # issue 32: over 5 s in a profile of the fast subset (2 busy cores); the full suite runs it
def test_analyse_equals_the_command_lines_results_json_and_tables(tmp_path: Path) -> None:
    """``analyse(pkg).to_dict()`` is, key for key and in order, the results.json that ``generate.py --evidence
    DIR --out OUT`` writes; ``table(name)`` is every tables/<name>.csv, byte for byte as the build writes it."""
    from analysis.tables.render import to_csv
    from analysis.tables.spec import TableSpec

    out = tmp_path / "out"
    subprocess.run([sys.executable, "generate.py", "--evidence", str(HANDMADE), "--out", str(out)],
                   cwd=REPO, check=True, capture_output=True, timeout=600)
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    r = analysis.analyse(HANDMADE)
    assert list(r.to_dict()) == list(written)
    assert r.to_dict() == written
    names = json.loads((out / "tables" / "index.json").read_text(encoding="utf-8"))
    assert list(r.table_names) == [t["name"] for t in names]
    for name in r.table_names:
        frame = r.table(name)
        assert isinstance(frame, pl.DataFrame)
        text = to_csv(TableSpec(name, "", frame, frame))
        assert text == (out / "tables" / f"{name}.csv").read_text(encoding="utf-8"), name


def test_unknown_table_names_the_known_ones() -> None:
    r = analysis.analyse(HANDMADE)
    with pytest.raises(analysis.UnknownTableError) as caught:
        r.table("t99_nonesuch")
    assert not isinstance(caught.value, KeyError | AttributeError)
    assert "'t99_nonesuch'" in str(caught.value) and "t3_panel" in str(caught.value)


def test_bad_input_raises_the_command_lines_named_errors(tmp_path: Path) -> None:
    """A missing path, a tampered lock and a package without rows of its primary scenario raise the
    evidence layer's named errors (what ``carriers`` prints, exit 1), each with its fix; never KeyError."""
    with pytest.raises(PackageNotFoundError):
        analysis.verify(tmp_path / "missing")
    with pytest.raises(PackageNotFoundError):
        analysis.analyse(tmp_path / "missing")
    tampered = shutil.copytree(HANDMADE, tmp_path / "tampered")
    rows = tampered / "rows.csv"
    rows.write_bytes(rows.read_bytes().replace(b"all recalled", b"all recalleD", 1))
    for call in (analysis.verify, analysis.load, analysis.paired_effect):
        with pytest.raises(ProvenanceError, match=r"rows\.csv"):
            call(tampered)
    moved = shutil.copytree(HANDMADE, tmp_path / "moved")
    study = moved / "study.toml"
    study.write_text(study.read_text(encoding="utf-8").replace('scenario = "S5"', 'scenario = "S9"'),
                     encoding="utf-8")
    from analysis.evidence import write_lock

    write_lock(moved, [])
    analysis.verify(moved)  # a well-formed package: only the analysis has nothing to estimate
    for fn in (analysis.analyse, analysis.paired_effect):
        with pytest.raises(EvidenceError, match="'S9' has no valid row") as caught:
            fn(moved)
        assert "carriers lock DIR" in str(caught.value)
    with pytest.raises(analysis.NotAPackageError, match="pass the directory"):
        analysis.analyse(42)  # type: ignore[arg-type]


def test_claims_audit_refuses_a_package_that_is_not_v1() -> None:
    with pytest.raises(analysis.ApiError, match="pass a v1 package"):
        analysis.claims_audit(HANDMADE)


@pytest.mark.slow
def test_v1_analyse_and_claims_audit_match_the_build(prebuilt: Any, tmp_path: Path) -> None:
    """On data/v1 (the claims audit runs): ``analyse`` equals the build's results.json, claims_audit's frame
    is the build's claims-audit table."""
    v1 = REPO / "data" / "v1"
    if not (v1 / "provenance.lock").is_file():
        pytest.skip("data/v1 is not in this checkout")
    out = prebuilt.copy(v1, tmp_path / "out")
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    r = analysis.analyse(v1)
    assert r.to_dict() == written
    audit = analysis.claims_audit(v1)
    table = r.table("t_claims_audit")
    assert audit.to_frame().height == table.height > 100
    assert audit.n == written["claims_audit"]["derived"]


def test_report_stays_the_public_function_after_its_subpackage_is_imported() -> None:
    """``analysis.report`` shares its name with the subpackage analysis/report/: importing that (as
    analysis.report() itself does) must not replace the function by the module (a second call would fail)."""
    code = ("import analysis, analysis.report.render, importlib; importlib.import_module('analysis.report.numbers'); "
            "from analysis.report import render; print(callable(analysis.report), analysis.report.__module__, "
            "render.__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "analysis.api.core", "analysis.report.render"]
