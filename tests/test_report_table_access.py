"""The report's tables can be taken away (issue 33): each table of the report links its full-precision CSV,
and the claims page's table can be filtered and sorted offline (plain inline JavaScript, no CDN)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.paths import REPO as ROOT

V1 = ROOT / "data" / "v1"
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def v1_out(tmp_path_factory: pytest.TempPathFactory, prebuilt: Any) -> Path:
    if not (V1 / "provenance.lock").is_file():
        pytest.skip("data/v1 is not in this checkout")
    return prebuilt.copy(V1, tmp_path_factory.mktemp("v1") / "out")  # build(V1, ...), shared by the session


def test_every_table_in_the_report_links_its_csv(v1_out: Path) -> None:
    qmd = (v1_out / "report" / "index.qmd").read_text(encoding="utf-8")
    html = (v1_out / "report" / "index.html").read_text(encoding="utf-8")
    included = re.findall(r"\{\{< include \.\./tables/(\w+)\.md >\}\}", qmd)
    assert len(included) > 10
    for name in included:
        assert f'href="tables/{name}.csv"' in html, name
        # the copy beside the report (where both the offline page and Quarto's resource copy find it) is the table's CSV
        beside = v1_out / "report" / "tables" / f"{name}.csv"
        assert beside.read_bytes() == (v1_out / "tables" / f"{name}.csv").read_bytes(), name


def test_the_claims_page_filters_and_sorts_offline(v1_out: Path) -> None:
    page = (v1_out / "report" / "claims.html").read_text(encoding="utf-8")
    assert 'id="claims-filter"' in page and "aria-sort" in page
    assert not re.search(r"""(?:src|href)=["']?https?:""", page)  # nothing loaded from a network
    assert "importmap" not in page and "esm.sh" not in page


PROBE = """<script>
window.addEventListener('load', function () {
  var input = document.getElementById('claims-filter');
  var rows = function () { return Array.from(document.querySelectorAll('.claims tbody tr')); };
  var before = rows().filter(function (r) { return !r.hidden; }).length;
  input.value = 'fitted'; input.dispatchEvent(new Event('input'));
  var filtered = rows().filter(function (r) { return !r.hidden; }).map(function (r) { return r.textContent; });
  input.value = ''; input.dispatchEvent(new Event('input'));
  var th = document.querySelector('.claims thead th');
  var ids = function () { return rows().map(function (r) { return r.cells[0].textContent.trim(); }); };
  th.click();
  var up = ids();
  th.click();
  var first = ids();
  var out = document.createElement('pre'); out.id = 'probe-result';
  out.textContent = JSON.stringify({before: before, filtered: filtered, ids: first, up: up,
                                    sort: th.getAttribute('aria-sort'),
                                    count: document.getElementById('claims-count').textContent});
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install -y chromium)")
def test_the_claims_filter_and_sort_work_in_a_browser(v1_out: Path, tmp_path: Path) -> None:
    page = v1_out / "report" / "claims.html"
    probe = page.with_name("_probe_claims.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
                               "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
                              capture_output=True, text=True, timeout=120, check=False)
    finally:
        probe.unlink()
    m = re.search(r'<pre id="probe-result">(.*?)</pre>', done.stdout, re.S)
    assert m, f"the probe did not run; chromium stderr:\n{done.stderr[-2000:]}"
    result = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                        .replace("&gt;", ">"))
    derived = json.loads((v1_out / "results.json").read_text(encoding="utf-8"))["claims_audit"]["derived"]
    assert result["before"] == len(result["ids"]) == derived
    assert result["filtered"] and all("fitted" in t.lower() for t in result["filtered"])
    assert len(result["filtered"]) < result["before"]
    assert result["sort"] == "descending"  # two clicks: ascending, then descending
    assert result["ids"] == result["up"][::-1] != result["up"]
    initials = [i[0].lower() for i in result["up"]]
    assert initials == sorted(initials)  # ascending by the id column (the locale's collation within a letter)
    assert result["count"] == f"{derived} of {derived} claims shown"
