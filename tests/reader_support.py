"""A page as a reader sees it: headless Chromium at 1280 px measures layout and text (issue 23).

``read_page(page)`` loads a copy of ``page`` with a probe script (same directory, so relative paths
resolve alike) and returns what the probe measured; ``reader_problems(page, probe)`` turns that into
the list of what a reader would trip over. Used by tests/test_report_reader.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

CHROMIUM = Path("/usr/bin/chromium")
WIDTH = 1280
MAX_CELL_LINES = 12
CENTRED_TEXT_CHARS = 24
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000", f"--window-size={WIDTH},900"]

PROBE = r"""<script>
window.addEventListener('load', function () {
  function lineHeight(el) {
    var cs = getComputedStyle(el), lh = parseFloat(cs.lineHeight);
    return isNaN(lh) ? 1.2 * parseFloat(cs.fontSize) : lh;
  }
  function column(el) {   /* the text column a table sits in: Quarto's main, else the body */
    var c = el.closest('main') || document.body, cs = getComputedStyle(c);
    return c.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  }
  var tables = Array.from(document.querySelectorAll('table')).map(function (t) {
    var cap = t.closest('[id^="tbl-"]');
    var tall = [], centred = [];
    Array.from(t.querySelectorAll('td, th')).forEach(function (c) {
      var text = c.innerText.trim(), range = document.createRange();
      range.selectNodeContents(c);  /* the text's own height, not the row's */
      var lines = Math.round(range.getBoundingClientRect().height / lineHeight(c));
      if (lines > %(lines)d) tall.push(text.slice(0, 60) + ' (' + lines + ' lines)');
      if (c.tagName === 'TD' && text.length >= %(chars)d && getComputedStyle(c).textAlign === 'center'
          && /[A-Za-z]{3}/.test(text)) centred.push(text.slice(0, 60));
    });
    return {id: cap ? cap.id : '', width: t.getBoundingClientRect().width, column: column(t),
            tall: tall, centred: centred};
  });
  var prose = Array.from(document.querySelectorAll('p, li, figcaption, .callout-note, .callout-warning'))
    .filter(function (e) { return !e.closest('table, nav, pre, code'); })
    .map(function (e) { return e.innerText; });
  var links = Array.from(document.querySelectorAll('a[href]')).map(function (a) { return a.getAttribute('href'); });
  var ids = Array.from(document.querySelectorAll('[id]')).map(function (e) { return e.id; });
  var out = document.createElement('pre'); out.id = 'probe-result';
  out.textContent = JSON.stringify({
    scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
    tables: tables, prose: prose, links: links, ids: ids, text: document.body.innerText,
    toc: Array.from(document.querySelectorAll('nav#TOC a, nav#TOC a')).map(function (a) { return a.innerText; })});
  document.body.appendChild(out);
});
</script>""".replace("%(lines)d", str(MAX_CELL_LINES)).replace("%(chars)d", str(CENTRED_TEXT_CHARS))

PLACEHOLDER = re.compile(r"(?:^|[\s(\[=])—(?=[\s,.;:)\]]|$)")
"""An em dash standing alone as a value (`` — ``, ``[—, —]``, ``= —``): a number that was not there."""


QUARTO_COLUMN_PX = 760
"""About the width of the text column of Quarto's page at 1280 px (the contents sidebar takes the rest)."""


def read_page(page: Path, *, column_px: int | None = None) -> dict[str, Any]:
    """What the probe measured on ``page`` in headless Chromium at WIDTH px; with ``column_px`` the page's
    body is narrowed to that width first (a stand-in for Quarto's column where Quarto is not installed)."""
    probe = page.with_name("_reader_probe.html")
    html = page.read_text(encoding="utf-8")
    if column_px is not None:
        html = html.replace("</head>", f"<style>body {{ max-width: {column_px}px !important; }}</style></head>", 1)
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            done = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                                   probe.as_uri()], capture_output=True, text=True, timeout=180, check=False)
    finally:
        probe.unlink()
    m = re.search(r'<pre id="probe-result">(.*?)</pre>', done.stdout, re.S)
    if not m:
        raise RuntimeError(f"the probe did not run; chromium stderr:\n{done.stderr[-2000:]}")
    raw = m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    return json.loads(raw)


def broken_links(page: Path, probe: dict[str, Any]) -> list[str]:
    """Relative links of ``page`` whose file does not exist, and in-page anchors without a target."""
    bad = []
    ids = set(probe["ids"])
    for href in probe["links"]:
        parts = urlsplit(href)
        if parts.scheme or href.startswith("//"):
            continue  # an absolute URL is not this test's business (the offline page has none)
        if not parts.path:
            if parts.fragment and unquote(parts.fragment) not in ids:
                bad.append(href)
            continue
        if not (page.parent / unquote(parts.path)).exists():
            bad.append(href)
    return bad


def reader_problems(page: Path, probe: dict[str, Any]) -> list[str]:
    """Everything a reader at 1280 px would trip over on ``page`` (empty when it reads well)."""
    problems = []
    if probe["scrollWidth"] > probe["clientWidth"] + 1:
        problems.append(f"the page scrolls sideways ({probe['scrollWidth']} px in {probe['clientWidth']} px)")
    for t in probe["tables"]:
        if t["width"] > t["column"] + 1:
            problems.append(f"table {t['id'] or '?'} is {t['width']:.0f} px wide in a {t['column']:.0f} px column")
        problems += [f"table {t['id'] or '?'}: a cell taller than {MAX_CELL_LINES} lines: {c}" for c in t["tall"]]
        problems += [f"table {t['id'] or '?'}: a centred text cell: {c}" for c in t["centred"]]
    problems += [f"a link that does not resolve: {href}" for href in broken_links(page, probe)]
    if "(s)" in probe["text"]:
        i = probe["text"].index("(s)")
        problems.append(f"'(s)' in the text: …{probe['text'][max(0, i - 60):i + 3]}")
    for text in probe["prose"]:
        m = PLACEHOLDER.search(text)
        if m:
            problems.append(f"a placeholder dash in a sentence: …{text[max(0, m.start() - 60):m.end() + 20]}")
    return problems
