"""The build pipeline: stage skipping by content hash, --check diffs, report structure."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from prebuilt_support import Prebuilt

from analysis.params import DEFAULT_PARAMS
from analysis.pipeline import STAGES, STAMP_NAME, build, check, diff_outputs, managed_files
from report_support import HANDMADE, unspanned

PILOT = HANDMADE.parents[2] / "data" / "v2" / "pilot"
COMPANIONS = [PILOT] if (PILOT / "provenance.lock").is_file() else []
"""The v2 pilot reported beside the hand-made package in the ``built`` tree (--companion)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    # build(HANDMADE, out, DEFAULT_PARAMS, progress=None, companions=COMPANIONS), shared by the session (conftest)
    return prebuilt.copy(HANDMADE, tmp_path_factory.mktemp("out") / "out", COMPANIONS)


def test_outputs_exist(built: Path) -> None:
    assert (built / "results.json").is_file()
    assert (built / "report" / "index.qmd").is_file() and (built / "report" / "index.html").is_file()
    assert (built / "report" / "_quarto.yml").is_file()
    assert len(list((built / "tables").glob("*.csv"))) >= 20
    assert len(list((built / "figures").glob("*.svg"))) == len(list((built / "figures").glob("*.png"))) >= 6
    stamp = json.loads((built / STAMP_NAME).read_text())
    assert set(stamp["stages"]) == set(STAGES)


def test_noop_rebuild_skips_every_stage(built: Path) -> None:
    build(HANDMADE, built, DEFAULT_PARAMS, progress=None, companions=COMPANIONS)  # refresh: the tree may have changed
    lines: list[str] = []
    summary = build(HANDMADE, built, DEFAULT_PARAMS, progress=lines.append, companions=COMPANIONS)
    assert summary.ran == () and summary.skipped == STAGES
    assert len(lines) == len(STAGES) and all("skipped" in line for line in lines)


def test_changed_params_rerun_from_results(tmp_path: Path, built: Path) -> None:
    out = tmp_path / "o"
    shutil.copytree(built, out)
    summary = build(HANDMADE, out, DEFAULT_PARAMS.replace(min_pairs=2), progress=None, companions=COMPANIONS)
    assert summary.ran == STAGES  # verify is re-run whenever any stage has work


def test_deleted_output_is_rebuilt(tmp_path: Path, built: Path) -> None:
    out = tmp_path / "o"
    shutil.copytree(built, out)
    (out / "figures" / "forest.svg").unlink()
    summary = build(HANDMADE, out, DEFAULT_PARAMS, progress=None, companions=COMPANIONS)
    assert summary.ran == ("verify", "figures") and (out / "figures" / "forest.svg").is_file()


@pytest.mark.slow  # issue 22: among the slowest of the suite (full builds); the full suite and CI run it
def test_check_is_clean_then_names_a_tampered_file(tmp_path: Path, built: Path) -> None:
    out = tmp_path / "o"
    shutil.copytree(built, out)
    assert check(HANDMADE, out, DEFAULT_PARAMS, companions=COMPANIONS) == []
    (out / "tables" / "t3_panel.md").write_text("tampered\n")
    (out / "tables" / "stale.csv").write_text("x\n")
    (out / "figures" / "ladder.png").unlink()
    assert check(HANDMADE, out, DEFAULT_PARAMS, companions=COMPANIONS) == ["figures/ladder.png", "tables/stale.csv",
                                                    "tables/t3_panel.md"]


def test_results_json_names_the_code_by_digest_not_by_commit(tmp_path: Path, built: Path) -> None:
    from analysis.sources import source_digest

    out = tmp_path / "o"
    shutil.copytree(built, out)
    doc = json.loads((out / "results.json").read_text())
    prov = doc["provenance"]
    assert "git_commit" not in prov and "git_dirty" not in prov  # a clone rebuilds the same bytes
    assert prov["code_sha256"] == source_digest("results") and len(prov["code_sha256"]) == 64
    prov["code_sha256"] = "0" * 64  # other code: check() must see it (no field is ignored any more)
    (out / "results.json").write_text(json.dumps(doc))
    assert diff_outputs(built, out) == ["results.json"]
    prov["code_sha256"] = source_digest("results")
    doc["panel"]["mean"] = 0.3
    (out / "results.json").write_text(json.dumps(doc))
    assert diff_outputs(built, out) == ["results.json"]


def test_quarto_output_dir_is_not_managed(tmp_path: Path, built: Path) -> None:
    out = tmp_path / "o"
    shutil.copytree(built, out)
    (out / "report" / "_quarto").mkdir()
    (out / "report" / "_quarto" / "index.html").write_text("quarto output")
    assert "report/_quarto/index.html" not in managed_files(out)


def _front_matter(qmd: str) -> dict:
    assert qmd.startswith("---\n")
    return yaml.safe_load(qmd[4:qmd.index("\n---\n", 4)])


def test_qmd_front_matter_and_quarto_yml_parse(built: Path) -> None:
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    meta = _front_matter(qmd)
    assert meta["title"] and meta["subtitle"]
    cfg = yaml.safe_load((built / "report" / "_quarto.yml").read_text(encoding="utf-8"))
    assert cfg["project"]["output-dir"] == "_quarto" and cfg["project"]["render"] == ["index.qmd"]
    html = cfg["format"]["html"]
    assert html["embed-resources"] is True and html["output-file"] == "manuscript.html"
    theme, scss = html["theme"]
    assert theme == "cosmo" and "$web-font-path: false;" in (built / "report" / scss).read_text()


def test_every_include_and_figure_path_exists(built: Path) -> None:
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    includes = re.findall(r"\{\{< include (\S+) >\}\}", qmd)
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", qmd)
    figures = json.loads((built / "figures" / "index.json").read_text(encoding="utf-8"))
    assert len(includes) >= 15 and 6 <= len(images) <= len(figures)  # figures without data have no float
    for rel in includes + images:
        assert (built / "report" / rel).resolve().is_file(), rel
    html = (built / "report" / "index.html").read_text(encoding="utf-8")
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(sources) == len(images) and all(s.startswith("data:image/png;base64,") for s in sources)


def test_no_template_marker_survives(built: Path) -> None:
    for name in ("index.qmd", "_quarto.yml", "index.html"):
        text = (built / "report" / name).read_text(encoding="utf-8")
        text = re.sub(r"\{\{< include \S+ >\}\}", "", text)  # Quarto's own shortcode is intended
        assert "{{" not in text and "{%" not in text and "{#" not in text.replace("{#fig-", "").replace(
            "{#tbl-", ""), name


def test_report_states_what_the_evidence_is(built: Path) -> None:
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    assert "hand-made oracle fixture" in qmd and "not the study's data" in qmd
    assert "## Beyond the paper" in qmd


def test_unusable_out_is_a_named_error(tmp_path: Path) -> None:
    from analysis.pipeline import BuildError

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BuildError, match="pass a directory"):
        build(HANDMADE, f, DEFAULT_PARAMS, progress=None, companions=COMPANIONS)


def test_outputs_do_not_depend_on_the_working_directory(tmp_path: Path, built: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check(HANDMADE.resolve(), built, DEFAULT_PARAMS, companions=COMPANIONS) == []


@pytest.mark.slow  # issue 22: among the slowest of the suite (full builds); the full suite and CI run it
def test_v2_pilot_section_when_the_pilot_exists(tmp_path: Path) -> None:
    from analysis.evidence import write_lock

    pilot = tmp_path / "pilot"
    shutil.copytree(HANDMADE, pilot)  # any conforming package declared a pilot stands in for data/v2/pilot
    study = pilot / "study.toml"
    study.write_text(study.read_text().replace('kind = "fixture"', 'kind = "pilot"', 1))
    write_lock(pilot)
    out = tmp_path / "o"
    build(HANDMADE, out, DEFAULT_PARAMS, progress=None, companions=[pilot])
    block = json.loads((out / "results.json").read_text())["v2_pilot"]
    assert block["panel"]["configurations"] == 3 and block["panel"]["mean"] == pytest.approx(0.25)
    assert block["mcnemar"]["complete"]["pairs"] == 6 and block["rows"] == 22
    assert [a["arm"] for a in block["arms"][:3]] == ["j", "q", "m"] and block["identical_repeats"] is False
    qmd = (out / "report" / "index.qmd").read_text(encoding="utf-8")
    section = " ".join(qmd.split("## The v2 pilot\n")[1].split("## How to rebuild")[0].split())
    # Hand-made README: panel mean 0.25 over 3 configurations; bounds [0.0, 0.444444]; 6 complete pairs.
    assert "holds 3 configurations:" in section and "+0.250" in section
    assert "[+0.000, +0.444]" in section and "exact McNemar p =" in section
    assert "{{< include ../tables/t_v2_pilot.md >}}" in section
    assert "result is null" not in section and "copies of each other" not in section  # it recalled
    assert "154 of 224 graded checks passed" in section  # 16 valid S5 rows x 14 checks; passed: README rows
    table = unspanned((out / "tables" / "t_v2_pilot.md").read_text(encoding="utf-8"))
    assert "| acme/alpha-1 | j (one opaque field) | 3 (3) | 0.500 (n=3) |" in table
    # A changed pilot reruns every stage after verify, and the pilot table follows it.
    rows = pilot / "rows.csv"
    rows.write_text(rows.read_text().replace("a1-j,S5,acme/alpha-1,g1,1,j,1,true,,14,14,0,5,8200,",
                                             "a1-j,S5,acme/alpha-1,g1,1,j,1,true,,14,14,0,5,8500,", 1))
    write_lock(pilot)
    again = build(HANDMADE, out, DEFAULT_PARAMS, progress=None, companions=[pilot])
    assert again.ran == STAGES
    # alpha-1 j carried chars (8500 + 9500 + 9000) / 3 = 9000 (was 8900).
    assert "| 9000 (n=3) |" in unspanned((out / "tables" / "t_v2_pilot_folds.md").read_text(encoding="utf-8"))
    summary = build(pilot, tmp_path / "p", DEFAULT_PARAMS, progress=None)  # the pilot itself
    assert "v2_pilot" not in json.loads((tmp_path / "p" / "results.json").read_text())
    assert "v2 pilot" in (tmp_path / "p" / "report" / "index.qmd").read_text(encoding="utf-8")
    assert summary.ran == STAGES


def test_a_package_failing_verification_writes_nothing(tmp_path: Path) -> None:
    from analysis.evidence import ProvenanceError

    bad = tmp_path / "bad"
    shutil.copytree(HANDMADE, bad)
    (bad / "rows.csv").write_text((bad / "rows.csv").read_text().replace("all recalled", "all recal1ed", 1))
    with pytest.raises(ProvenanceError, match=r"rows\.csv"):
        build(bad, tmp_path / "o", DEFAULT_PARAMS, progress=None)
    assert not (tmp_path / "o").exists()



@pytest.mark.skipif(not (PILOT / "provenance.lock").is_file(), reason="data/v2/pilot not present")
def test_the_committed_pilot_section_reports_the_null_result(built: Path) -> None:
    # data/v2/pilot: one configuration, 4 j/q pairs all at recall 0, no graded value in any final carrier,
    # temperature 0 (identical repeats), served by llama.cpp with max_length_mode "describe".
    qmd = (built / "report" / "index.qmd").read_text(encoding="utf-8")
    section = " ".join(qmd.split("## The v2 pilot\n")[1].split("## How to rebuild")[0].split())
    assert "1 configurations" not in section and "holds 1 configuration:" in section
    assert "4 complete pairs with paired effect +0.000" in section
    # nothing missing and no discordant pair: said in words, not as [+0.000, +0.000] or p = 1.0000 (issue 30)
    assert "No planned repeat of its panel is missing" in section and "[+0.000, +0.000]" not in section
    assert "4 under neither (the McNemar test is not estimable: no discordant pair" in section
    assert "p = 1.0000" not in section
    assert "**The pilot's result is null.**" in section and "none of the 168 graded values" in section
    assert "copies of each other" in section
    assert "`describe`" in section and "`json_object_schema`" in section
    assert "`smollm2-135m-instruct`" in section
    assert "{{< include ../tables/t_v2_pilot.md >}}" in section
    table = unspanned((built / "tables" / "t_v2_pilot.md").read_text(encoding="utf-8"))
    assert table.count("| 0.000 (n=4) |") == 3 and "| 1 of 4 |" in table


RESULTS_ONLY = """
import sys
from pathlib import Path
from analysis.pipeline import _CLAIMS, run_stage
from analysis.pipeline.inputs import BuildInputs
from analysis.params import DEFAULT_PARAMS
inputs = BuildInputs(Path(sys.argv[1]), Path(sys.argv[2]), DEFAULT_PARAMS, claims_path=_CLAIMS)
run_stage("verify", inputs)
Path(sys.argv[2]).mkdir(parents=True)
run_stage("results", inputs)
"""


@pytest.mark.skipif(not (HANDMADE.parents[2] / ".git").exists() or shutil.which("git") is None,
                    reason="needs a git checkout")
def test_results_json_is_byte_stable_across_clones(tmp_path: Path) -> None:
    """Two clones of the same commit, one with a later commit and a dirty tree, write the same bytes."""
    import os
    import subprocess
    import sys

    repo = HANDMADE.parents[2]
    outputs = []
    for name, extra in (("a", False), ("b", True)):
        clone = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, timeout=120)
        if extra:
            git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "later"], check=True, timeout=60)
            (clone / "README.md").write_text("dirty\n")
        out = tmp_path / f"out-{name}"
        subprocess.run([sys.executable, "-c", RESULTS_ONLY, str(clone / "tests" / "fixtures" / "handmade"),
                        str(out)], cwd=clone, env={**os.environ, "PYTHONPATH": str(clone)},
                       check=True, timeout=600)
        outputs.append((out / "results.json").read_bytes())
    assert outputs[0] == outputs[1]
    prov = json.loads(outputs[0])["provenance"]
    assert "git_commit" not in prov and len(prov["code_sha256"]) == 64
