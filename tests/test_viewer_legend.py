"""The trajectory viewer explains itself on the page (issue 23, item 11), and is written only where there is
something to show (item 10).

Every chip colour and every fold marker the viewer's script can draw has a legend entry on the page (not only
a hover tooltip), and the legend says how often each occurs in the rows shown, so a reader of the v2 pilot
sees that no value was ever lost after capture. A package without folds.jsonl gets no trajectory page.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from report_support import HANDMADE
from support.paths import REPO

TEMPLATE = REPO / "analysis" / "viewer" / "trajectories.html"
PILOT = HANDMADE.parents[2] / "data" / "v2" / "pilot"
CHROMIUM = Path("/usr/bin/chromium")


def _legend(html: str) -> str:
    return html.split('id="legend"', 1)[1].split("</div>", 1)[0]


def test_every_chip_and_marker_the_script_draws_has_a_legend_entry() -> None:
    html = TEMPLATE.read_text(encoding="utf-8")
    script = html.split("<script>", 1)[1]
    legend = _legend(html)
    statuses = re.findall(r"(\w+): '[^']*'", script.split("var WORDS = {", 1)[1].split("};", 1)[0])
    assert set(statuses) == {"present", "lost", "missed", "absent"}
    for status in statuses:  # chip classes 'chip ' + status
        assert f'class="chip {status}"' in legend and f'data-legend="{status}"' in legend, status
    flags = re.findall(r"el\('span', 'flag(?: bad)?', '([^']+)'", script)
    assert len(flags) >= 5
    for text in flags:  # 'did not parse', 'parsed', 'clipped at the carry cap', 'lost (no reply)', 'finish: '
        assert text.rstrip(": ") in legend, text
    assert "<mark>" in legend and 'class="pass"' in legend and 'class="fail"' in legend
    assert "red marker" not in html.split('id="legend"', 1)[0]  # the note no longer promises what may not appear


def test_no_trajectory_page_for_a_package_without_folds(tmp_path: Path, prebuilt: Prebuilt) -> None:
    assert not (HANDMADE / "folds.jsonl").exists()
    prebuilt.copy(HANDMADE, tmp_path / "o")  # build(HANDMADE, tmp_path / "o", DEFAULT_PARAMS), shared (conftest)
    report = tmp_path / "o" / "report"
    assert not (report / "trajectories.html").exists()
    assert "trajectories" not in (report / "index.qmd").read_text(encoding="utf-8")


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install -y chromium)")
@pytest.mark.skipif(not (PILOT / "provenance.lock").is_file(), reason="data/v2/pilot not present")
def test_the_pilot_viewer_legend_counts_what_occurs(tmp_path: Path, prebuilt: Prebuilt) -> None:
    prebuilt.copy(PILOT, tmp_path / "o")  # build(PILOT, tmp_path / "o", DEFAULT_PARAMS), shared (conftest)
    page = tmp_path / "o" / "report" / "trajectories.html"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
                               page.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    legend = _legend(done.stdout)
    # data/v2/pilot/README.md: no graded value is ever captured, so none is lost later; j and q folds fail to
    # parse (16 of 20 each), q folds are cut at the length budget.
    assert re.search(r'data-legend="lost">.*?\(none in these rows\)', legend, re.S), legend
    assert re.search(r'data-legend="present">.*?\(none in these rows\)', legend, re.S)
    assert re.search(r'data-legend="unparsed">.*?\(32 in these rows\)', legend, re.S)


def test_the_unparsed_marker_says_what_the_protocol_carries() -> None:
    # issue 24: on real events (the ladder pilot) a fold that did not parse shows its own reply as the carrier,
    # because the protocol carries an unparseable reply raw (the parse-and-carry fail-safe); the legend said
    # the previous carrier was kept
    from analysis.runner.arms import load_arms
    from analysis.runner.protocol import derive_carrier

    reply = '{ "summary": "{\n  " }'  # a raw newline inside a JSON string: SmolLM2's commonest j reply
    assert derive_carrier(load_arms()["j"], reply) == (reply.strip(), False)
    entry = _legend(TEMPLATE.read_text(encoding="utf-8")).split('data-legend="unparsed">', 1)[1].split("</dd>", 1)[0]
    assert "carried, raw" in entry and "previous carrier was kept" not in entry


# ------------------------------------------------------------------ the viewer's names

def test_the_viewer_lists_names_that_shadow_object_members() -> None:
    """The viewer's uniq() (run by node) with __proto__, constructor and hasOwnProperty as names."""
    import re
    import shutil

    page = (REPO / "analysis" / "viewer" / "trajectories.html").read_text(encoding="utf-8")
    assert ".hasOwnProperty(" not in page and "seen = {}" not in page
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the uniq() call is checked textually only")
    body = re.search(r"function uniq\(list\) \{.*?\n  \}", page, re.S)
    assert body is not None
    names = ["__proto__", "constructor", "hasOwnProperty", "toString", "a", "__proto__"]
    script = body.group(0) + f"\nconsole.log(JSON.stringify(uniq({json.dumps(names)})));\n"
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)) == sorted(set(names))

