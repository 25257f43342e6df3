"""Render the report: jinja2 templates -> report/index.qmd, _quarto.yml (a YAML dump) and the
offline page report/index.html (the same index.qmd rendered by Pandoc, analysis.report.pandoc_render).

Methods note: the template context is built only from results.json, the params, the evidence
summary and the table/figure indexes written by the earlier stages, so the report stage can run
alone. Numbers reach the text only through the tracing filters of analysis.report.numbers, and
every other printed string is escaped for Markdown there (the output boundary of evidence text).
YAML (the qmd front matter, _quarto.yml) is written by a YAML dumper and read back before any
file is written, so no path or name can break it. Layout under OUT/report/ (Quarto project):

- ``index.qmd``: the manuscript; ``_quarto.yml``: Quarto's project file. Quarto writes a
  document's output beside its source and then moves it into ``output-dir``, so the output file
  is named ``manuscript.html`` (never ``index.html``) and lands in ``_quarto/``: a Quarto render
  cannot overwrite or move the offline page.
- ``.gitignore``: every entry Quarto requires (``QUARTO_REQUIRED_IGNORES``, the list of the Quarto
  version we target), so a render appends nothing and the tracked file stays as generate.py wrote it.
- ``offline-fonts.scss``: theme layer without web fonts (``$web-font-path: false``).
- ``index.html``: the offline page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from analysis import escape
from analysis.locations import package_path
from analysis.outdir import BuildError
from analysis.report.numbers import NumberTrace
from analysis.report.pandoc_render import TOC_DEPTH
from analysis.safeio import SafeIOError, read_json, read_text, write_text

TEMPLATES = package_path("report", "templates")
PAPER_TITLE = "Partitioned versus Undivided Compaction Carriers"
"""The paper's title, as printed on it and cited in CITATION.cff (tests/test_package_conventions.py holds the
three alike): the report's title, whatever the evidence."""
PAPER_CITE = "Tikhonov, 2026"
"""The paper's author and year, as the report cites it."""
CLAIMS_PAGE = "claims.html"
"""The full claims list (every derived claim), its own offline page beside index.html."""
QUARTO_RESOURCES = ("trajectories*.html", CLAIMS_PAGE, "claims_audit.csv", "claims_audit.md", "tables/*.csv")
"""Files the manuscript links to, which Quarto copies into output-dir so that the links of
_quarto/manuscript.html resolve as those of index.html do (``project: resources``)."""
TABLE_CSS = ("td, th { text-align: left; vertical-align: top; }\n"
             "td.r, th.r { text-align: right; }\n"
             ".claims td:first-child, .claims td:last-child { overflow-wrap: anywhere; }\n"
             "table { font-size: 0.88em; }\n"
             ".table > :not(caption) > * > *, td, th { padding: 0.25em 0.5em; }\n"
             ".nw { white-space: nowrap; }\n"
             "div[id^=\"tbl-\"] { overflow-x: auto; }\n"
             ".table-note, .table-note p, figcaption, caption { text-align: left !important; font-style: normal; }\n"
             ".table-note { font-size: 0.9em; color: #444; }\n")
"""Table rules shared by both renders (Quarto gets them through include-in-header; offline.css holds each).

An atom of a table (a number with its n, an interval, an id, a date: analysis.tables.render.atom) sits in a
``nw`` span and never wraps; a table wider than the column scrolls inside its own float, not the page.
Tables use a smaller font than the text and Bootstrap's table cells (class ``table``) a tighter padding, as
the offline page does, so that Quarto's 800 px column holds them. Notes and captions are left-aligned in
roman type: Quarto's ``fig-align: center`` would centre them (hence ``!important``, which outranks the
theme's float rules)."""
QUARTO_OUTPUT_FILE = "manuscript.html"
"""Quarto's output name: not index.html, so a render never touches the offline page. Quarto joins
``output-file`` to the input's directory (quarto-cli src/command/render/output.ts), writes there,
then renames the file into ``output-dir`` (src/command/render/project.ts)."""
QUARTO_OUTPUT_DIR = "_quarto"
THEME_SCSS = "offline-fonts.scss"
THEME_SCSS_TEXT = ("/*-- scss:defaults --*/\n"
                   "// The manuscript is rendered offline: no web font is fetched.\n"
                   "$web-font-path: false;\n")
QUARTO_TARGET_VERSION = "1.10"
"""The Quarto release the report is rendered with and whose behaviour the comments below describe."""
QUARTO_REQUIRED_IGNORES: tuple[str, ...] = ("/.quarto/", "**/*.quarto_ipynb")
"""``kQuartoIgnore`` of quarto-cli 1.10 (src/project/project-gitignore.ts). On every project render
Quarto (src/command/render/project.ts, ``ensureGitignore``) appends each of these entries that the
project's .gitignore lacks, so the build writes all of them: a render then leaves the file unchanged."""
GITIGNORE_TEXT = (f"# Written by generate.py: Quarto's own files. Quarto {QUARTO_TARGET_VERSION} appends each of its\n"
                  "# required entries (the first two lines) that is missing, on every render; all are listed.\n"
                  + "".join(f"{entry}\n" for entry in QUARTO_REQUIRED_IGNORES)
                  + "/_quarto/\n/_*.local\n/manuscript.html\n/index_files/\n")


class ReportError(BuildError):
    """The report cannot be written as asked; the message says why and what to change."""


@dataclass(frozen=True)
class RenderedReport:
    """The rendered manuscript and what it printed."""

    qmd: str
    """report/index.qmd text."""
    quarto_yml: str
    """report/_quarto.yml text."""
    trace: NumberTrace
    """Every number the filters emitted while rendering the qmd."""
    includes: tuple[str, ...]
    """Include paths (relative to report/) the qmd references."""
    images: tuple[str, ...]
    """Figure paths (relative to report/) the qmd references."""


def _template(name: str) -> str | None:
    """A template's text, read through the door inside TEMPLATES (None: jinja reports it missing)."""
    try:
        return read_text(TEMPLATES / name, root=TEMPLATES)
    except (FileNotFoundError, IsADirectoryError):
        return None


def _env(trace: NumberTrace | None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template),  # templates read through the door (analysis.safeio)
        undefined=jinja2.ChainableUndefined,
        autoescape=True,  # finalize escapes for Markdown and returns Markup; jinja adds nothing
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=trace.finalize if trace is not None else None,
    )
    if trace is not None:
        env.filters.update(trace.filters())
    return env


def _read_index(path: Path) -> dict[str, dict[str, Any]]:
    try:
        items = read_json(path)
    except (OSError, SafeIOError):
        return {}
    return {item["name"]: item for item in items}


def _yaml(data: dict[str, Any], what: str) -> str:
    """``data`` as YAML (a dumper quotes every string), read back to prove it round-trips."""
    import yaml

    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1 << 16, default_flow_style=False)
    try:
        back = yaml.safe_load(text)
    except yaml.YAMLError as exc:  # pragma: no cover - the dumper's own output
        raise ReportError(f"{what} does not parse back as YAML: {exc}") from exc
    if back != data:
        raise ReportError(f"{what} does not round-trip through YAML; rename the evidence folder or study "
                          "to plain text")
    return text


def subtitle_for(evidence_path: str, study_name: str | None = None, *, audited: bool = False) -> str:
    """The manuscript's subtitle: what the report is (a recomputation, and an audit where the claims audit ran)
    and from which evidence, the study's name and its path (Markdown: both escaped)."""
    what = "A recomputation and audit" if audited else "A recomputation"
    name = " ".join(str(study_name or "").split())
    path = escape.markdown(evidence_path)
    return f"{what} from the evidence {path}: {escape.markdown(name)}" if name else f"{what} from the evidence {path}"


def front_matter(evidence_path: str, study_name: str | None = None, *, audited: bool = False) -> str:
    """index.qmd's YAML front matter block (``---`` lines included): the paper's title, and a subtitle naming
    this evidence path and study."""
    meta = {"title": PAPER_TITLE, "subtitle": subtitle_for(evidence_path, study_name, audited=audited), "lang": "en"}
    return "---\n" + _yaml(meta, "the manuscript's front matter") + "---\n"


def quarto_yml() -> str:
    """report/_quarto.yml: a default project rendering index.qmd to _quarto/manuscript.html."""
    config = {
        "project": {"type": "default", "output-dir": QUARTO_OUTPUT_DIR, "render": ["index.qmd"],
                    "resources": list(QUARTO_RESOURCES)},
        "format": {"html": {
            "output-file": QUARTO_OUTPUT_FILE, "embed-resources": True, "toc": True, "toc-depth": TOC_DEPTH,
            "include-in-header": {"text": f"<style>\n{TABLE_CSS}</style>"},
            "number-sections": True, "fig-align": "center", "theme": ["cosmo", THEME_SCSS]}},
    }
    head = ("# Written by `python generate.py`; do not edit.\n"
            "# Render with Quarto (where installed):  quarto render report/\n"
            f"# Output: report/{QUARTO_OUTPUT_DIR}/{QUARTO_OUTPUT_FILE}. Quarto writes a document's output beside\n"
            "# its source before moving it into output-dir, so the output is not named index.html: a render\n"
            "# never overwrites the offline page report/index.html (python generate.py writes that one).\n")
    return head + _yaml(config, "_quarto.yml")


_JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_JINJA_BLOCK = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
_PLACED_CALL = re.compile(r"(?<![\w.])(?:table|figure)\(\s*[\"']([^\"']+)[\"']\s*\)")


def placed_by_name() -> frozenset[str]:
    """Every table and figure a report template places by name: the literal argument of each
    ``table("...")`` and ``figure("...")`` call inside a Jinja expression or statement of the templates
    (comments are not calls). A scan of the source, not a parse: parsing every template once more cost
    about 0.2 s of each build."""
    names: set[str] = set()
    for path in sorted(TEMPLATES.glob("*.j2")):
        source = _JINJA_COMMENT.sub("", _template(path.name) or "")
        for block in _JINJA_BLOCK.findall(source):
            names.update(_PLACED_CALL.findall(block))
    return frozenset(names)


def unplaced_in(section: str, tables: dict[str, dict[str, Any]], figures: dict[str, dict[str, Any]],
                placed: frozenset[str]) -> list[str]:
    """The tables, then the figures, of ``section`` (their index.json ``section``, from the builder's
    declaration) that no template places by name, in TABLE_ORDER and FIGURE_ORDER order: what the
    template's ``section_end(section)`` places at the end of that section."""
    return [name for index in (tables, figures) for name, item in index.items()
            if item.get("section") == section and name not in placed]


def float_id(kind: str, name: str) -> str:
    """Quarto cross-reference id of a table (``tbl``) or figure (``fig``): ``tbl-t3-panel``."""
    return f"{kind}-{name.replace('_', '-')}"


def evidence_view(results: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    """Template view of the evidence: path, kind, counts and sorted digests."""
    digests = (results.get("evidence") or {}).get("sha256") or {}
    return {**evidence, "digests": sorted(digests.items())}


def render_report(out_dir: Path, results: dict[str, Any], params: Any, evidence: dict[str, Any],
                  *, finalize_override: Any = None) -> RenderedReport:
    """Render _quarto.yml and index.qmd for OUT (tables/ and figures/ indexes must exist)."""
    trace = NumberTrace()
    env = _env(trace)
    if finalize_override is not None:
        env.finalize = finalize_override
    tables = _read_index(out_dir / "tables" / "index.json")
    figures = _read_index(out_dir / "figures" / "index.json")
    includes: list[str] = []
    images: list[str] = []

    def present(name: str) -> bool:
        """Whether a table has rows / a figure has data (else no float and no reference)."""
        if name in tables and name in figures:
            raise KeyError(f"{name!r} names both a table and a figure; rename one")
        if name in tables:
            return bool(tables[name].get("rows")) and not tables[name].get("empty_reason")
        if name in figures:
            return not figures[name].get("empty_reason")
        raise KeyError(f"the report template names {name!r}, which neither the tables stage wrote nor "
                       "the figures stage drew; add it to analysis.tables.registry.TABLE_ORDER or "
                       "analysis.figures.registry.FIGURE_ORDER, or fix the template")

    floats: list[str] = []
    placed = placed_by_name()

    def placed_once(name: str) -> None:
        """Each table and figure is one float: a second placement fails the render."""
        if name in floats:
            raise ReportError(f"the report places {name!r} twice; keep one table(...)/figure(...) call, or "
                              "remove the call and let its section's section_end place it")
        floats.append(name)

    def include_table(name: str) -> Markup:
        present(name)
        placed_once(name)
        rel = f"../tables/{name}.md"
        includes.append(rel)
        return Markup("{{< include " + rel + " >}}")

    def csv_link(name: str) -> Markup:
        """A link to the table's full-precision CSV, copied beside the report (OUT/report/tables/<name>.csv) so
        that the link resolves from report/index.html and, as a Quarto resource, from _quarto/manuscript.html."""
        present(name)
        return Markup(f"[{escape.markdown(name)}.csv](tables/{name}.csv)")

    def float_attr(name: str) -> Markup:
        return Markup("{#" + float_id("tbl", name) + "}")

    def figure_md(name: str) -> Markup:
        present(name)
        placed_once(name)
        f = figures[name]
        rel = f"../figures/{name}.png"
        images.append(rel)
        trace.strings.append(f["title"])
        trace.strings.append(f["alt"])  # built from results by the figure's builder, like its title
        return Markup(f'![{escape.markdown(f["title"])}]({rel}){{#{float_id("fig", name)} '
                      f'fig-alt="{escape.markdown_attribute(f["alt"])}"}}')

    def see(*names: str) -> Markup:
        """`` (@tbl-a, @fig-b)`` for the named tables/figures that are present; empty when none is."""
        refs = [f"@{float_id('tbl' if n in tables else 'fig', n)}" for n in names if present(n)]
        return Markup(f" ({', '.join(refs)})" if refs else "")

    from analysis.tables.context import sparse_block

    c = results.get("contrast") or {}
    k_pairs, sparse_k = sparse_block(results, params)
    audit = results.get("claims_audit")
    names = claim_names(out_dir) if audit else {}
    ctx = {
        "r": results, "p": params, "ev": evidence_view(results, evidence),
        "tables": tables, "figures": figures, "audit": audit,
        "audit_sentence": linked_audit_sentence(audit, names, trace),
        "claim_link": lambda cid: claim_link(cid, names, trace),
        "sparse_k": sparse_k, "sparse_k_pairs": k_pairs,
        "mcnemar": (results.get("mcnemar") or {}).get("partial"),
        "fill": results.get("fill"), "pilot": results.get("v2_pilot"),
        "front_matter": Markup(front_matter(evidence["path"], evidence.get("study_name"), audited=bool(audit))),
        "paper_title": PAPER_TITLE, "paper_cite": PAPER_CITE,
        "version": (results.get("provenance") or {}).get("version", "unknown"),
        "include_table": include_table, "figure_md": figure_md, "float_attr": float_attr, "csv_link": csv_link,
        "present": present, "see": see, "contrast": c,
        "unplaced": lambda section: unplaced_in(section, tables, figures, placed),
    }
    from analysis.results.registry import RESULTS_BLOCKS

    ctx["statistic_sentences"] = [  # one bullet of the key-results box per registered sentence
        Markup(env.from_string(b.sentence).render({**ctx, "s": results[b.key]}).strip())
        for b in RESULTS_BLOCKS if b.sentence and isinstance(results.get(b.key), dict)]
    qmd = env.get_template("index.qmd.j2").render(ctx)
    qmd = re.sub(r"([^\n])\n(#{1,6} |!\[|:::|\{\{<|- \*\*)", r"\1\n\n\2", qmd)  # blocks need a blank line
    qmd = re.sub(r"\n{3,}", "\n\n", qmd).strip() + "\n"
    return RenderedReport(qmd, quarto_yml(), trace, tuple(includes), tuple(images))


def claim_names(out_dir: Path) -> dict[str, str]:
    """A reader's name for every audited claim, by claim id: ``the value printed as 0.75 in section 4 Results``
    (read from tables/t_claims_audit.csv, the claims list's own rows; empty without an audit)."""
    import csv
    import io

    try:
        text = read_text(out_dir / "tables" / "t_claims_audit.csv", root=out_dir)
    except (OSError, SafeIOError):
        return {}
    names = {}
    for row in csv.DictReader(io.StringIO(text)):
        if row.get("id"):
            value = (row.get("published") or "").strip()
            section = (row.get("section") or "").strip()
            names[row["id"]] = (f"the value printed as {value}" if value else "the claim") + \
                (f" in section {section}" if section else "")
    return names


def claim_link(cid: str, names: dict[str, str], trace: NumberTrace | None = None) -> Markup:
    """A claim as a reader meets it in a sentence: its reader's name, linked to its row on the claims list
    (``claims.html#claim-<id>``); the id itself only where the list has no name for it. The name's text is
    remembered by ``trace`` like any printed string (its numbers come from the audit's own table)."""
    from analysis.tables.spec import anchor_id

    name = names.get(cid, cid)
    if trace is not None:
        trace.strings.append(name)
    return Markup(f"[{escape.markdown(name)}]({CLAIMS_PAGE}#{anchor_id(cid)})")


def linked_audit_sentence(audit: dict[str, Any] | None, names: dict[str, str],
                          trace: NumberTrace | None = None) -> Markup:
    """audit_sentence with every claim id it names (the claims a rule was tuned to) as a ``claim_link``; the
    rest escaped for Markdown and remembered by ``trace``."""
    text = audit_sentence(audit)
    ids = sorted((audit or {}).get("tuned") or {}, key=len, reverse=True)
    if trace is not None:
        trace.strings.append(text)
    if not ids:
        return Markup(escape.markdown(text))
    parts = re.split("(" + "|".join(rf"(?<![\w.]){re.escape(c)}(?![\w.])" for c in ids) + ")", text)
    return Markup("".join(claim_link(part, names, trace) if i % 2 else escape.markdown(part)
                          for i, part in enumerate(parts)))


def audit_sentence(audit: dict[str, Any] | None) -> str:
    """The audit headline in words (a string the audit module produced, or built from its counts)."""
    if not audit:
        return ""
    if isinstance(audit.get("headline"), str):
        return audit["headline"]
    counts = audit.get("status_counts") or {}
    parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    return f"Claims audited: {audit.get('claims', sum(counts.values()))} ({parts})."


# ------------------------------------------------------------------ writing

def write_report(out_dir: Path, results: dict[str, Any], params: Any, evidence: dict[str, Any]) -> list[Path]:
    """Write report/index.qmd, _quarto.yml, .gitignore, the theme layer and the offline index.html.

    Everything is rendered (Pandoc included) before the first file is written, so a failure
    leaves report/ as it was. Returns the paths written.
    """
    from analysis.report.pandoc_render import render_html

    report_dir = out_dir / "report"
    report_dir.mkdir(parents=True, exist_ok=True)
    rendered = render_report(out_dir, results, params, evidence)
    page = render_html(rendered.qmd, report_dir, out_dir)
    claims = claims_page(out_dir, results)
    paths = []
    for name, text in (("_quarto.yml", rendered.quarto_yml), ("index.qmd", rendered.qmd),
                       (THEME_SCSS, THEME_SCSS_TEXT), (".gitignore", GITIGNORE_TEXT),
                       ("index.html", page.html)):
        path = report_dir / name
        write_text(path, text)
        paths.append(path)
    if claims is not None:
        path = report_dir / CLAIMS_PAGE
        write_text(path, claims)
        paths.append(path)
    return paths


CLAIMS_TOOLS = """```{=html}
<p class="claims-tools"><label>Filter the claims: <input type="search" id="claims-filter"
placeholder="id, section, status, rule or any word"></label> <output id="claims-count"></output>
Select a column heading (or focus it and press Enter) to sort by it; again to reverse.</p>
<script>
document.addEventListener("DOMContentLoaded", function () {
  var table = document.querySelector(".claims table");
  if (!table || !table.tBodies.length || !table.tHead) { return; }
  var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
  var input = document.getElementById("claims-filter"), count = document.getElementById("claims-count");
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function show() {
    var words = input.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (row) {
      var text = row.textContent.toLowerCase();
      row.hidden = !words.every(function (w) { return text.indexOf(w) !== -1; });
      if (!row.hidden) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " claims shown";
  }
  function sortBy(th, i) {
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    heads.forEach(function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent.trim(), y = b.cells[i].textContent.trim();
      var c = x.localeCompare(y, undefined, {numeric: true, sensitivity: "base"});
      return ascending ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  heads.forEach(function (th, i) {
    th.tabIndex = 0; th.style.cursor = "pointer"; th.setAttribute("aria-sort", "none");
    th.addEventListener("click", function () { sortBy(th, i); });
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th, i); }
    });
  });
  input.addEventListener("input", show);
  show();
});
</script>
```
"""
"""The claims page's filter box and sortable headings: a few lines of plain JavaScript inline in the page,
so it works offline (great_tables' opt_interactive loads React from a CDN, which an offline page cannot)."""


def claims_page(out_dir: Path, results: dict[str, Any]) -> str | None:
    """The full claims list as its own offline page (report/claims.html), or None without an audit.

    The table is tables/t_claims_audit.md, the same rows as claims_audit.md and the CSV; the page is
    rendered by Pandoc like index.html (one column, no sidebar), so its eight columns have room."""
    from analysis.report.pandoc_render import render_html

    table = out_dir / "tables" / "t_claims_audit.md"
    audit = results.get("claims_audit")
    if not audit or not table.is_file() or read_text(table).startswith("*"):
        return None
    qmd = ("---\n" + _yaml({"title": "Every derived claim of the paper", "lang": "en"}, "the claims page") + "---\n\n"
           "Each derived claim of the paper: the value printed, the value recomputed from the evidence, its status, "
           "the reconstruction rules behind it and a note. All claims, primitive ones included, are in "
           "[claims_audit.csv](claims_audit.csv).\n\n" + CLAIMS_TOOLS + "\n"
           "::: {.claims}\n{{< include ../tables/t_claims_audit.md >}}\n:::\n")
    # No figure, float or @reference on this page: only the table-alignment part of the filter runs.
    return render_html(qmd, out_dir / "report", out_dir, toc=False, crossref=False).html
