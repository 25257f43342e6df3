"""Render report/index.qmd with plain Pandoc: the offline page report/index.html, and the test engine.

Methods note: Quarto is Pandoc plus shortcodes, cross-references and a theme. The report uses
only one shortcode (``{{< include PATH >}}`` on a line of its own) and Quarto's figure/table
cross-references, so Pandoc renders the very same index.qmd once (1) the includes are expanded
here, each resolved inside OUT (a path leaving OUT is refused), and (2) the Lua filter
``templates/crossref.lua`` numbers figures and tables as Quarto does and turns every
``@fig-``/``@tbl-`` into a link, failing on a reference without a target (a page without
cross-references, the claims page, runs only ``templates/table_alignment.lua``, the part of it
that turns column alignment into classes: the same bytes for one walk less). Pandoc runs with
``--fail-if-warnings``; its stderr is returned so tests can assert it is empty. It reads the
Markdown without the extensions (raw TeX, $math$, raw HTML) whose syntax the text does not hold,
which gives the same document for less CPU (UNUSED_EXTENSIONS). The binary is
the one shipped by the ``pypandoc-binary`` wheel (Pandoc 3.x), so no system install is needed.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from analysis.locations import package_path
from analysis.outdir import BuildError
from analysis.safeio import read_text

TEMPLATES = package_path("report", "templates")
CROSSREF_FILTER = TEMPLATES / "crossref.lua"
ALIGNMENT_FILTER = TEMPLATES / "table_alignment.lua"
"""The table part of CROSSREF_FILTER on its own (crossref.lua loads it from the same folder)."""
PAGE_CSS = TEMPLATES / "offline.css"
INCLUDE_LINE = re.compile(r"^\{\{< include (?P<path>\S+) >\}\}$", re.M)
SHORTCODE = re.compile(r"\{\{<")
CITATION = re.compile(r'<span class="citation" data-cites="(?P<ids>[^"]*)"')
"""How Pandoc writes a citation no filter resolved (with --wrap=none, so on one line)."""
TOC_DEPTH = 2
"""Table-of-contents depth of both renders (this one and Quarto's toc-depth in _quarto.yml): sections only."""
PANDOC_ARGS: tuple[str, ...] = (
    "--from=markdown", "--to=html5", "--standalone", "--embed-resources", "--toc", f"--toc-depth={TOC_DEPTH}",
    "--number-sections", "--fail-if-warnings", "--wrap=none")
"""Pandoc options of the render (what ``quarto render`` does for this report's _quarto.yml)."""
UNUSED_EXTENSIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("raw_tex", re.compile(r"\\[^\W\d_]")),
    ("tex_math_dollars", re.compile(r"\$")),
    ("raw_html", re.compile(r"(?<!\\)(?:\\\\)*<")),
)
"""Pandoc Markdown extensions that act only on some text, with a pattern matching every such text:
TeX commands and environments need a backslash before a letter (``\\alpha``, ``\\begin``, ConTeXt's
``\\start``), math a ``$`` (an escaped ``\\$`` too), raw HTML a ``<`` that no backslash escapes (one
in a code span too). The test is conservative: an extension is switched off only where its pattern
is absent, and then the document is the same by construction."""


class ReportRenderError(BuildError):
    """Pandoc could not render the manuscript; the message carries Pandoc's own words (the CLI
    prints it as one line, like every BuildError)."""


@dataclass(frozen=True)
class PandocRender:
    """One Pandoc rendering of the manuscript."""

    html: str
    """The standalone HTML page (figures embedded as data URIs)."""
    stderr: str
    """Everything Pandoc printed on stderr (empty when there was no warning)."""
    seconds: float
    """Wall time of the Pandoc call."""
    markdown: str
    """The Markdown Pandoc read: index.qmd with every include expanded."""


def pandoc_path() -> str:
    """The Pandoc binary of the pypandoc-binary wheel (a clear error when it is missing)."""
    try:
        import pypandoc

        return str(pypandoc.get_pandoc_path())
    except (ImportError, OSError) as exc:  # a declared dependency; a broken install
        raise ReportRenderError("the offline report needs Pandoc 3: pip install pypandoc-binary") from exc


def expand_includes(qmd: str, report_dir: Path, root: Path) -> str:
    """``qmd`` with every ``{{< include PATH >}}`` line replaced by the file's text.

    PATH is resolved against ``report_dir`` and must stay inside ``root`` (OUT); includes are not
    nested (a table's Markdown is data, never a template). Any other ``{{<`` left in the text is
    an error: it would be a shortcode Quarto runs and Pandoc cannot.
    """
    base = Path(report_dir).resolve()
    top = Path(root).resolve()

    def read(m: re.Match[str]) -> str:
        target = (base / m["path"]).resolve()
        if not target.is_relative_to(top) or not target.is_file():
            raise ReportRenderError(f"index.qmd includes {m['path']}, which is not a file inside {top}")
        return read_text(target, root=top).rstrip("\n")

    text = INCLUDE_LINE.sub(read, qmd)
    stray = SHORTCODE.search(text)
    if stray:
        line = text.count("\n", 0, stray.start()) + 1
        raise ReportRenderError(f"line {line} of the expanded manuscript holds a shortcode '{{{{<' that "
                                "only Quarto would run; evidence text must reach Markdown escaped")
    return text


def reader_option(markdown: str) -> str:
    """Pandoc's ``--from`` for ``markdown``: without every UNUSED_EXTENSIONS the text gives no work to."""
    return "--from=markdown" + "".join(f"-{name}" for name, used in UNUSED_EXTENSIONS if not used.search(markdown))


LEAN_READER = reader_option("")
"""The reader of a manuscript without any of that syntax. Those extensions cost even where they never
fire: measured on the v1 build's pages, some 10% of Pandoc's CPU for the first two, a few % more for
raw_html."""


def render_html(qmd: str, report_dir: Path, root: Path, *, timeout: float = 120, toc: bool = True,
                crossref: bool = True) -> PandocRender:
    """Render ``qmd`` (index.qmd text) to one standalone HTML page with Pandoc.

    ``report_dir`` is where index.qmd lives (relative paths resolve from it); ``root`` is OUT.
    ``crossref=False`` is for a page without figures, ``tbl-`` floats or ``@`` references: only
    the table-alignment filter runs, which saves a walk of the document through Lua; a ``@word``
    on such a page is still an error, found in the HTML instead of by the filter (one inside an image's alt
    text leaves no citation span and is not caught: evidence text reaches Markdown with ``@``, ``!`` and ``[``
    escaped, so it cannot write one).
    Raises ReportRenderError when Pandoc fails or warns (``--fail-if-warnings``).
    """
    markdown = expand_includes(qmd, report_dir, root)
    options = PANDOC_ARGS if toc else tuple(a for a in PANDOC_ARGS if not a.startswith(("--toc", "--number")))
    options = tuple(reader_option(markdown) if a == "--from=markdown" else a for a in options)
    args = [pandoc_path(), *options, f"--lua-filter={CROSSREF_FILTER if crossref else ALIGNMENT_FILTER}",
            f"--css={PAGE_CSS}", f"--resource-path={Path(report_dir).resolve()}"]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(args, input=markdown.encode("utf-8"), capture_output=True,
                              cwd=str(report_dir), timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ReportRenderError(f"Pandoc did not finish within {timeout:.0f} s") from exc
    seconds = time.perf_counter() - t0
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        raise ReportRenderError(f"Pandoc failed (exit {done.returncode}): {stderr.strip()[-2000:]}")
    html = done.stdout.decode("utf-8")
    stray = None if crossref else CITATION.search(html)
    if stray:
        raise ReportRenderError(f"the page cites @{stray['ids']} but is rendered without cross-references "
                                "(crossref=False): escape the @ as \\@, or render it with crossref=True")
    return PandocRender(html, stderr, seconds, markdown)
