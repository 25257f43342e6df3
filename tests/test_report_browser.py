"""The offline report (Pandoc's rendering of index.qmd) opens in headless Chromium with every image
loaded and every table present.

Needs Debian's `chromium` (`apt-get install -y chromium`); skipped only when /usr/bin/chromium is
missing. A screenshot of the page is taken (kept under the test's tmp dir) and must be a PNG.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prebuilt_support import Prebuilt

from report_support import HANDMADE
from support.paths import REPO

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install -y chromium)")]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]

PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images).map(function (i) {
    return {src: i.getAttribute('src'), width: i.naturalWidth, loaded: i.complete && i.naturalWidth > 0}; });
  var ids = Array.from(document.querySelectorAll('[id]')).map(function (e) { return e.id; });
  var out = document.createElement('pre'); out.id = 'probe-result';
  out.textContent = JSON.stringify({images: imgs, ids: ids, tables: document.querySelectorAll('table').length});
  document.body.appendChild(out);
});
</script>"""


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory, prebuilt: Prebuilt) -> Path:
    pilot = HANDMADE.parents[2] / "data" / "v2" / "pilot"  # its survival figure joins the report (--companion)
    # build(HANDMADE, o, DEFAULT_PARAMS, progress=None, companions=...), shared by the session (conftest)
    return prebuilt.copy(HANDMADE, tmp_path_factory.mktemp("out") / "out",
                         [pilot] if (pilot / "provenance.lock").is_file() else [])


def test_every_image_loads_and_every_table_is_present(out: Path, tmp_path: Path) -> None:
    page = out / "report" / "index.html"
    probe = page.with_name("_probe.html")  # same directory, so relative image paths resolve alike
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        done = _chromium(tmp_path / "profile", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    m = re.search(r'<pre id="probe-result">(.*?)</pre>', done.stdout, re.S)
    assert m, f"the probe did not run; chromium stderr:\n{done.stderr[-2000:]}"
    result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    figures = json.loads((out / "figures" / "index.json").read_text(encoding="utf-8"))
    tables = json.loads((out / "tables" / "index.json").read_text(encoding="utf-8"))
    qmd = (out / "report" / "index.qmd").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(\.\./figures/(\w+)\.png\)", qmd))
    # every figure is in the report, except one whose section cannot apply to this evidence: that figure
    # carries its reason (figures/index.json) and the report leaves the section out
    assert {f["name"] for f in figures if f["name"] not in shown and not f.get("empty_reason")} == set()
    assert len(result["images"]) == len(shown)
    assert all(i["loaded"] and i["width"] > 100 for i in result["images"]), result["images"]
    in_report = set(re.findall(r"\{\{< include \.\./tables/(\w+)\.md >\}\}",
                               (out / "report" / "index.qmd").read_text(encoding="utf-8")))
    float_ids = {"tbl-" + name.replace("_", "-") for name in in_report}  # Quarto table floats #tbl-…
    assert in_report and float_ids <= set(result["ids"]), float_ids - set(result["ids"])
    non_empty = {t["name"] for t in tables if t["rows"] and t["name"] in in_report}
    assert result["tables"] >= len(non_empty)


def test_screenshot(out: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = _chromium(tmp_path / "profile", "--window-size=1280,2000", f"--screenshot={shot}",
                     (out / "report" / "index.html").as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    keep = REPO / ".pytest_cache" / "report-screenshot.png"
    keep.parent.mkdir(exist_ok=True)
    shutil.copyfile(shot, keep)
