"""Layout rules of a report page, measured in headless Chromium at 1280 px (issue 34).

``layout_problems(page, profile, quarto=False)`` opens ``page`` (an HTML file) with a probe script and
returns every breach of the reading rules below, as short strings (empty: the page passes):

- a numeric cell (a digit, no letter but ``n``/``e``, at most 22 characters) wrapped onto two lines;
- a one-word cell (no space) broken inside the word;
- a header cell taller than 4 lines;
- a centred paragraph, caption or figure caption longer than 2 lines;
- a list run into a paragraph (a paragraph holding ``. - Word``, Markdown's list without its blank line);
- a table wider than its column (it would scroll inside its float: a last resort, so none is expected).

``quarto=True`` first restyles the page as Quarto's HTML theme lays it out (``quarto_page``; measured with
Quarto 1.10.18 at 1280 px, CONTRIBUTING.md): a 799 px text column, 17 px text, 25.5 px line height,
8.5 px cell padding, floats centred as ``fig-align: center`` centres them, and the report's own rules as
_quarto.yml puts them in Quarto's header. Lines are counted
from the rectangles of a Range over the element's contents (one per line box fragment), grouped by top.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000", "--window-size=1280,2000"]

QUARTO_THEME = """<style id="quarto-theme">
html, body { font-size: 17px; line-height: 25.5px; font-family: "Source Sans Pro", "DejaVu Sans", sans-serif; }
body { max-width: 799px; margin: 0 auto 0 40px; }
nav#TOC { display: none; }
.table > :not(caption) > * > * { padding: 8.5px; }
.quarto-figure-center, .quarto-figure-center > figure, figure { text-align: center; }
</style>"""
"""Quarto's page as QUARTO_PAGE.md measures it (cosmo theme, 1280 px): a 799 px text column, 17 px text at
25.5 px line height, tables of class ``table`` whose cells Bootstrap pads by 8.5 px (at Bootstrap's own
specificity, so the report's rules can outrank it as they would in Quarto), floats centred as
``fig-align: center`` centres them."""
CLASSES = """<script>document.querySelectorAll('table').forEach(function (t) { t.classList.add('table'); });
document.querySelectorAll('[id^="tbl-"], figure').forEach(function (d) { d.classList.add('quarto-figure-center'); });
</script>"""
"""The classes Quarto gives tables and centred floats."""


def quarto_page(html: str, quarto_yml: str) -> str:
    """``html`` (the offline page) dressed as Quarto's page: its own styles removed, the theme imitation and
    the rules ``_quarto.yml`` includes in Quarto's header (``include-in-header``) put in their place."""
    import yaml

    header = yaml.safe_load(quarto_yml)["format"]["html"]["include-in-header"]["text"]
    html = re.sub(r"<style[^>]*>.*?</style>", "", html, flags=re.S)
    return html.replace("</head>", QUARTO_THEME + header + "</head>", 1).replace("</body>", CLASSES + "</body>", 1)


PROBE = r"""<script>
window.addEventListener('load', function () {
  function lines(el) {
    var r = document.createRange(); r.selectNodeContents(el);
    var tops = [];
    Array.from(r.getClientRects()).forEach(function (q) {
      if (q.width < 1 || q.height < 1) return;
      if (!tops.some(function (t) { return Math.abs(t - q.top) < q.height / 2; })) tops.push(q.top);
    });
    return tops.length;
  }
  function txt(el) { return el.textContent.replace(/\s+/g, ' ').trim(); }
  var out = [];
  document.querySelectorAll('td').forEach(function (td) {
    var t = txt(td), n = lines(td);
    if (n < 2) return;
    if (t.length <= 22 && /[0-9]/.test(t) && !/[A-DF-Za-mo-z]/.test(t)) out.push('numeric cell wrapped: ' + t);
    else if (t.length && !/\s/.test(t)) out.push('word broken: ' + t);
  });
  document.querySelectorAll('th').forEach(function (th) {
    var n = lines(th); if (n > 4) out.push('header of ' + n + ' lines: ' + txt(th));
  });
  document.querySelectorAll('p, figcaption, caption').forEach(function (p) {
    if (getComputedStyle(p).textAlign !== 'center') return;
    var n = lines(p); if (n > 2) out.push('centred text of ' + n + ' lines: ' + txt(p).slice(0, 60));
  });
  document.querySelectorAll('p').forEach(function (p) {
    var t = p.textContent;
    if (/(^|[.:;!?]\s)[-*+] \S/.test(t)) out.push('list run into a paragraph: ' + t.slice(0, 80));
  });
  document.querySelectorAll('table').forEach(function (t) {
    var box = t.closest('[id^="tbl-"]') || t.parentElement;
    if (t.getBoundingClientRect().width > box.clientWidth + 1)
      out.push('table wider than its column: ' + (box.id || '?') + ' '
               + Math.round(t.getBoundingClientRect().width) + ' px in ' + box.clientWidth);
  });
  var pre = document.createElement('pre'); pre.id = 'layout-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def layout_problems(page: Path, profile: Path, *, quarto: bool = False) -> list[str]:
    """Every breach of the reading rules on ``page`` at 1280 px (see the module docstring)."""
    html = page.read_text(encoding="utf-8")
    if quarto:
        html = quarto_page(html, (page.parent / "_quarto.yml").read_text(encoding="utf-8"))
    probe = page.with_name(f"_layout_{'quarto' if quarto else 'pandoc'}.html")  # beside it: relative paths resolve
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        done = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", probe.as_uri()],
                              capture_output=True, text=True, timeout=180, check=False)
    finally:
        probe.unlink()
    m = re.search(r'<pre id="layout-result">(.*?)</pre>', done.stdout, re.S)
    if not m:
        raise RuntimeError(f"the layout probe did not run; chromium stderr:\n{done.stderr[-2000:]}")
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return list(json.loads(text))


def screenshot(page: Path, shot: Path, profile: Path, *, quarto: bool = False, height: int = 6000) -> None:
    """A PNG of ``page`` at 1280 px wide (dressed as Quarto's page with ``quarto=True``) written to ``shot``."""
    html = page.read_text(encoding="utf-8")
    if quarto:
        html = quarto_page(html, (page.parent / "_quarto.yml").read_text(encoding="utf-8"))
    copy = page.with_name(f"_shot_{'quarto' if quarto else 'pandoc'}.html")
    copy.write_text(html, encoding="utf-8")
    flags = [f for f in FLAGS if not f.startswith("--window-size")] + [f"--window-size=1280,{height}"]
    try:
        subprocess.run([str(CHROMIUM), *flags, f"--user-data-dir={profile}", f"--screenshot={shot}", copy.as_uri()],
                       capture_output=True, text=True, timeout=180, check=False)
    finally:
        copy.unlink()


def main(argv: list[str]) -> int:
    """``python tests/layout_probe_support.py report/index.html [SHOTS_DIR]``: print every breach of the reading
    rules on the offline page and on its Quarto-dressed copy; with SHOTS_DIR, also write offline.png and
    quarto.png there (1280 px wide) to look at. Exit status 1 when anything was found."""
    import tempfile

    page = Path(argv[0]).resolve()
    found = 0
    with tempfile.TemporaryDirectory() as profile:
        for quarto in (False, True):
            problems = layout_problems(page, Path(profile), quarto=quarto)
            found += len(problems)
            print(f"{'Quarto-dressed' if quarto else 'offline'} page: {len(problems)} problem(s)")
            for line in problems:
                print("  " + line)
            if len(argv) > 1:
                shots = Path(argv[1])
                shots.mkdir(parents=True, exist_ok=True)
                screenshot(page, shots / ("quarto.png" if quarto else "offline.png"), Path(profile), quarto=quarto)
    return 1 if found else 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
