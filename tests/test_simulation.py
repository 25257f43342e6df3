"""The simulated summariser (issue 35): a truth file, the loopback server the runner sweeps, and the
package it writes (kind = "simulation", the truth recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.evidence import load_package
from analysis.evidence.truth import TruthError, parse_truth
from analysis.runner.arms import load_arms
from analysis.runner.cli import main as runner_main
from analysis.runner.ladder import rung_fixture
from analysis.runner.simulate.summariser import SimulatedSummariser
from support.paths import REPO

CLEAR = REPO / "docs" / "truth" / "clear-effect.toml"
ARMS = "[arms.j]\ncapture = 1\nkeep = 1\nrecall = 1\n[arms.q]\ncapture = 1\nkeep = 1\nrecall = 1\n"


@pytest.mark.parametrize(("text", "key"), [
    ("[arms.j]\ncapture = 1.5\nkeep = 1\nrecall = 1\n", "arms.j.capture"),
    ("[arms.j]\ncapture = -0.1\nkeep = 1\nrecall = 1\n", "arms.j.capture"),
    ("[arms.j]\ncapture = nan\nkeep = 1\nrecall = 1\n", "arms.j.capture"),
    ("[arms.j]\ncapture = 1\nkeep = 1\nrecall = true\n", "arms.j.recall"),
    ("[arms.zz]\ncapture = 1\nkeep = 1\nrecall = 1\n", "arms.zz"),
    ("[arms.j]\ncapture = 1\nkeep = 1\nrecall = 1\nforget = 0\n", "arms.j.forget"),
    ("[arms.j]\ncapture = 1\nkeep = 1\n", "arms.j.recall"),
    (ARMS + "[load]\ncapture_per_fold = 0.5\n", "load.capture_per_fold"),
    (ARMS + "[faults]\nserver_error = 2\n", "faults.server_error"),
    (ARMS + "colour = 1\n", "colour"),
    ('description = "' + "x" * 1_000_000 + '"\n' + ARMS, "description"),
    ("[arms." + "k" * 1_000_000 + "]\ncapture = 1\n" + ARMS, "arms.kkkk"),
    ('description = "a\\u007fb"\n' + ARMS, "description"),  # DEL
    ('description = "a\\u2028b"\n' + ARMS, "description"),  # line separator
    ('description = "a\\u202eb"\n' + ARMS, "description"),  # right-to-left override
    ("\ufeff" + ARMS, "byte-order mark"),
])
def test_a_bad_truth_file_is_refused_naming_the_key_and_nothing_starts(
        text: str, key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TruthError, match=key.replace(".", r"\.")):
        parse_truth(text.encode(), "t.toml", tuple(load_arms()))
    truth = tmp_path / "t.toml"
    truth.write_text(text)
    out = tmp_path / "out"
    assert runner_main(["simulate", str(truth), "--repeats", "1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "TruthError" not in err  # the fix, never the class name (issue 33)
    assert key in err and len(err.strip().splitlines()) == 1 and len(err) < 400
    assert not out.exists()  # nothing started, nothing written


def test_truth_errors_are_short_and_name_their_source_once() -> None:
    for text in ("[arms." + "k" * 1_000_000 + "]\ncapture = 1\n" + ARMS,  # checked for size before any echo
                 ARMS.replace("keep", "k" * 100_000)):  # a long unknown key is cut to 40 characters
        with pytest.raises(TruthError) as exc:
            parse_truth(text.encode(), "t.toml", ("j", "q"))
        assert len(str(exc.value)) < 300, str(exc.value)[:300]
    with pytest.raises(TruthError, match=r"^t\.toml: is not valid TOML") as exc:
        parse_truth(b"x = [", "t.toml")
    assert "t.toml: t.toml" not in str(exc.value)


def test_a_missing_truth_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert runner_main(["simulate", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "truth file" in err and not (tmp_path / "o").exists()
    assert "see `python generate.py docs simulation`" in err  # a doc the package ships (issue 33)


def test_closed_form_recall_and_survival_by_hand() -> None:
    t = parse_truth(b"[arms.j]\ncapture = 0.9\nkeep = 0.6\nrecall = 0.5\n[load]\ncapture_per_extra_value = 0.8\n"
                    b"capture_per_extra_100_tokens = 0.5\n", "t")
    # hand: c = 0.9 * 0.8^(2-1) * 0.5^((300-100)/100) = 0.18; mean_{j<3} 0.6^j = (1+0.6+0.36)/3
    assert t.capture("j", 2, 300, 0) == pytest.approx(0.18)
    assert t.recall("j", 2, 300, 0, 3) == pytest.approx(0.18 * 0.5 * 1.96 / 3)
    assert t.survival("j", 2) == pytest.approx(0.36)


def _fold_body(fx, arm, carrier: str = "", seed: int = 1) -> dict:
    from analysis.runner.arms import response_format
    from analysis.runner.protocol import _hint, fold_user_message

    user = fold_user_message(carrier, [fx.chunks[0].text], [0], len(fx.chunks), _hint(arm, _settings()))
    return {"messages": [{"role": "system", "content": arm.prompt}, {"role": "user", "content": user}],
            "response_format": response_format(arm, "json_schema"), "seed": seed, "max_tokens": 2400}


def _settings():
    from analysis.runner.protocol import RunSettings

    return RunSettings()


def test_replies_are_seeded_per_call_and_follow_the_arms_schema() -> None:
    import json

    fx = rung_fixture("g1-d0-c100-f3")
    arms = {c: a for c, a in load_arms().items() if c in "jq"}
    truth = parse_truth(b"[arms.j]\ncapture = 0.5\nkeep = 1\nrecall = 1\n[arms.q]\ncapture = 0.5\nkeep = 1\n"
                        b"recall = 1\n", "t")
    sim = SimulatedSummariser(truth, [fx], arms, salt="0")
    replies = [sim(_fold_body(fx, arms["q"], seed=s), 0).content for s in range(40)]
    assert replies == [sim(_fold_body(fx, arms["q"], seed=s), 0).content for s in range(40)]  # same call, same draw
    docs = [json.loads(r or "") for r in replies]
    assert all(set(d) == {f.name for f in arms["q"].fields} for d in docs)  # q's five fields, valid JSON
    captured = sum(fx.graded[0].value in d["identifiers_and_values"] for d in docs)
    assert 8 <= captured <= 32  # Binomial(40, 0.5): outside this range with probability < 1e-4
    assert set(json.loads(sim(_fold_body(fx, arms["j"]), 0).content or "")) == {"summary"}


def test_the_fixture_is_found_by_its_chunk_header_and_labels_are_not_shared() -> None:
    import dataclasses
    import json

    from analysis.runner.graders import RECALL_SYSTEM_PROMPT, recall_prompt

    fx = rung_fixture("g1-d0-c100-f3")
    # a one-chunk fixture with fx's first chunk on a long-chunk rung (capture 0 there: 0.0 per extra 100 tokens)
    one = dataclasses.replace(fx, chunks=fx.chunks[:1], graded=fx.graded[:1],
                              spec=dataclasses.replace(fx.spec, rung="g1-d0-c900-f1"))
    arms = {c: a for c, a in load_arms().items() if c in "jq"}
    truth = parse_truth(ARMS.encode() + b"[load]\ncapture_per_extra_100_tokens = 0\n", "t")
    sim = SimulatedSummariser(truth, [one, fx], arms, salt="0")  # `one` first: the chunk text alone matches it
    doc = json.loads(sim(_fold_body(fx, arms["q"]), 0).content or "")  # "chunk 1 of 3": fx, capture 1
    assert fx.graded[0].value in doc["identifiers_and_values"]
    # two fixtures with one label and different values: the recall answers the value the carrier holds
    other = dataclasses.replace(fx, graded=tuple(dataclasses.replace(g, value=g.value + "7") for g in fx.graded))
    sim2 = SimulatedSummariser(truth, [fx, other], arms, salt="0")
    g = other.graded[0]
    body = {"messages": [{"role": "system", "content": RECALL_SYSTEM_PROMPT},
                         {"role": "user", "content": recall_prompt(f"(simulated summary, arm q)\n- {g.label}: "
                                                                   f"{g.value}", [g.label])}], "seed": 1}
    assert sim2(body, 0).content == f"{g.label}: {g.value}"


def test_a_simulated_sweep_writes_a_simulation_package_that_records_its_truth(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner_main(["simulate", str(CLEAR), "--ladder", "g1-d0-c100-f1,g1-d0-c100-f3", "--repeats", "2",
                        "--out", str(out), "--quiet"]) == 0
    pkg = load_package(out / "evidence")
    assert pkg.study.kind == "simulation"
    assert pkg.study.simulation.sha256 == __import__("hashlib").sha256(CLEAR.read_bytes()).hexdigest()
    assert pkg.study.simulation.text == CLEAR.read_text()
    assert pkg.rows.height == 8 and pkg.rows.get_column("valid").all()
    # --kind pilot cannot relabel a simulation
    assert runner_main(["simulate", str(CLEAR), "--kind", "pilot", "--out", str(tmp_path / "p"), "--quiet"]) == 2


def test_faults_change_the_shape_never_the_values(tmp_path: Path) -> None:
    truth = tmp_path / "faults.toml"
    truth.write_text(ARMS + "[faults]\nparse_failure = 0.3\nlength_cut = 0.3\nserver_error = 0.2\n")
    out = tmp_path / "run"
    assert runner_main(["simulate", str(truth), "--ladder", "g1-d0-c100-f3", "--repeats", "3",
                        "--max-attempts", "20", "--out", str(out), "--quiet"]) == 0
    pkg = load_package(out / "evidence")
    ok = pkg.rows.filter(pkg.rows.get_column("valid"))
    assert ok.height == 6
    assert (ok.get_column("checks_passed") == 3).all()  # capture = keep = recall = 1 survives every fault
    assert ok.get_column("parse_failures").sum() > 0


def test_an_edited_truth_or_a_relabelled_simulation_is_a_study_error(tmp_path: Path) -> None:
    from analysis.evidence import StudyError, write_lock

    out = tmp_path / "run"
    assert runner_main(["simulate", str(CLEAR), "--ladder", "g1-d0-c100-f1", "--repeats", "1", "--out", str(out),
                        "--quiet"]) == 0
    ev = out / "evidence"
    study = (ev / "study.toml").read_text()
    for edited, needle in ((study.replace("keep = 0.95", "keep = 0.96"), "truth_sha256"),
                           (study.replace('kind = "simulation"\n', ""), "kind"),
                           (study.replace('kind = "simulation"', 'kind = "pilot"'), "never relabelled")):
        (ev / "study.toml").write_text(edited)
        write_lock(ev)
        with pytest.raises(StudyError, match=needle):
            load_package(ev)
    # relabelled as a pilot without a trace of [simulation]: the runner's truth digest and the configuration's
    # family still say simulated; each alone is enough
    pilot = study.replace('kind = "simulation"', 'kind = "pilot"').split("[simulation]")[0]
    family = "\n".join(x for x in pilot.splitlines() if not x.startswith("simulated_truth_sha256"))
    no_family = pilot.replace('family = "simulated"', 'family = "smollm"')
    assert "simulated_truth_sha256" in no_family and 'family = "simulated"' in family
    for edited, needle in ((pilot, "simulated_truth_sha256"), (family, "family"), (no_family, "never relabelled")):
        (ev / "study.toml").write_text(edited)
        write_lock(ev)
        with pytest.raises(StudyError, match=needle):
            load_package(ev)


SIM_LADDER = REPO / "data" / "v2" / "simulated-ladder"


def test_the_committed_simulated_ladder_reports_planted_values_beside_its_estimates(tmp_path: Path) -> None:
    import json

    from analysis.params import DEFAULT_PARAMS
    from analysis.pipeline import build
    from analysis.pipeline.inputs import CompanionError

    pkg = load_package(SIM_LADDER)
    truth = pkg.study.simulation
    assert pkg.study.kind == "simulation" and truth is not None
    out = tmp_path / "o"
    build(SIM_LADDER, out, DEFAULT_PARAMS, progress=None)
    results = json.loads((out / "results.json").read_text())
    assert results["evidence"]["kind"] == "simulation"
    for g in results["dose_response"]["rungs"]:
        f = (g["graded_per_chunk"], g["chunk_tokens"], g["distractors"], g["folds"])
        for arm, rec in g["arms"].items():  # the closed form of analysis.evidence.truth, rung by rung
            assert rec["planted"] == pytest.approx(truth.recall(arm, *f))
        assert g["paired"]["planted"] == pytest.approx(truth.recall("q", *f) - truth.recall("j", *f))
    # and one rung by hand (docs/truth of the ladder: capture 0.9, recall 0.9; keep j 0.6, q 0.95; 3 folds)
    f3 = next(g for g in results["dose_response"]["rungs"] if g["rung"] == "g1-d0-c100-f3")
    assert f3["arms"]["j"]["planted"] == pytest.approx(0.81 * (1 + 0.6 + 0.36) / 3)
    assert f3["arms"]["q"]["planted"] == pytest.approx(0.81 * (1 + 0.95 + 0.9025) / 3)
    assert results["fact_survival"]["km"]["j"][2]["planted"] == pytest.approx(0.6 ** 2)
    qmd = (out / "report" / "index.qmd").read_text()
    head = qmd.split("## What this report is")[0]
    assert "Simulated, planted truth" in head  # at the top, above the key results
    assert "planted recall" in (out / "tables" / "t_dose_response.md").read_text()
    assert "simulated, planted truth" in (out / "report" / "trajectories.html").read_text()
    # never a pilot: refused as a companion
    with pytest.raises(CompanionError, match="pilot"):
        build(REPO / "tests" / "fixtures" / "handmade", tmp_path / "c", DEFAULT_PARAMS, progress=None,
              companions=[SIM_LADDER])
    assert not (tmp_path / "c" / "results.json").exists()
