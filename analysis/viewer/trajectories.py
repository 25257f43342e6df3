"""report/trajectories.html: one offline, self-contained page per evidence package.

Methods note. :func:`trajectory_data` turns a package and its fact timeline into JSON-ready
data: every distinct carrier and answer text once in a pool (``texts``; identical carriers are
stored once however many folds share them), and per row its folds (text index, chunks, parse,
clip, finish), its graded values (entry fold, loss fold, presence from entry on as a 0/1
string) and its checks (passed or not). :func:`trajectory_page` embeds the data as JSON in
``<script type="application/json">`` with ``<``, ``>`` and ``&`` escaped
(analysis.escape.script_json) and a small script that builds the page with ``textContent``
only (never ``innerHTML`` of evidence): pick configuration, arm and repeat (filtering is
client-side), see each fold's carrier with every graded value highlighted where present and
marked at the fold where it was lost, and the final answer with each check passed or failed.
No external request of any kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from analysis import escape
from analysis.locations import package_path
from analysis.safeio import read_text, write_text

PAGE_TEMPLATE = package_path("viewer", "trajectories.html")


def _pool() -> tuple[list[str], Any]:
    texts: list[str] = []
    index: dict[str, int] = {}

    def add(text: str | None) -> int | None:
        if text is None:
            return None
        i = index.get(text)
        if i is None:
            i = index[text] = len(texts)
            texts.append(text)
        return i
    return texts, add


def trajectory_data(package: Any, survival: Any, label: str) -> dict[str, Any]:
    """JSON-ready viewer data of ``package`` (its folds) and ``survival`` (a PackageSurvival)."""
    base: dict[str, Any] = {"label": label, "study": package.study.name, "rows": [], "texts": []}
    if package.folds is None:
        base["missing"] = "Not in this evidence: the package has no folds.jsonl."
        return base
    texts, add = _pool()
    folds = package.folds.sort("row_id", "fold")
    by_row: dict[str, list[dict[str, Any]]] = {}
    for r in folds.select("row_id", "fold", "chunks", "carrier", "parse_ok", "clipped", "finish_reason",
                          "lost").iter_rows(named=True):
        by_row.setdefault(r["row_id"], []).append(
            {"f": r["fold"], "ch": r["chunks"], "t": add(r["carrier"]), "p": r["parse_ok"], "c": r["clipped"],
             "fr": r["finish_reason"], "l": r["lost"]})
    facts: dict[str, list[dict[str, Any]]] = {}
    if survival is not None and survival.timeline is not None:
        bits = (survival.timeline.presence.sort("row_id", "check", "fold")
                .group_by("row_id", "check", maintain_order=True)
                .agg(pl.col("present").cast(pl.Int8).cast(pl.String).str.join("").alias("bits")))
        tl = survival.timeline.facts.join(bits, on=["row_id", "check"], how="left")
        for r in tl.iter_rows(named=True):
            facts.setdefault(r["row_id"], []).append(
                {"k": r["check"], "v": r["value"], "cls": r["value_class"], "e": r["entry_fold"],
                 "lf": r["loss_fold"], "b": r["bits"] or ""})
    checks: dict[str, list[dict[str, Any]]] = {}
    for r in package.checks.select("row_id", "check", "expected", "passed").iter_rows(named=True):
        checks.setdefault(r["row_id"], []).append({"k": r["check"], "x": r["expected"], "ok": r["passed"]})
    answer = "answer" if "answer" in package.rows.columns else None
    cols = ["row_id", "configuration", "arm", "repeat", "valid", "scenario", "execution_group"]
    for r in package.rows.select(*cols, *([answer] if answer else [])).sort("row_id").iter_rows(named=True):
        if r["row_id"] not in by_row:
            continue
        base["rows"].append({
            "id": r["row_id"], "conf": r["configuration"], "arm": r["arm"], "rep": r["repeat"],
            "valid": r["valid"], "sc": r["scenario"], "grp": r["execution_group"],
            "folds": by_row[r["row_id"]], "facts": facts.get(r["row_id"], []),
            "checks": checks.get(r["row_id"], []), "a": add(r.get(answer)) if answer else None,
        })
    base["texts"] = texts
    if survival is not None and survival.timeline is None:
        base["note"] = "; ".join(f"{v}" for _, v in sorted(survival.reasons.items()))
    return base


def trajectory_page(data: dict[str, Any]) -> str:
    """The offline HTML page: the template with the title and the escaped JSON data."""
    page = read_text(PAGE_TEMPLATE)
    title = escape.html(f"Trajectories: {data.get('study', '')} ({data.get('label', '')})")
    head, tail = page.split("__DATA__")  # one placeholder each: evidence text is never re-scanned
    return head.replace("__TITLE__", title) + escape.script_json(data) + tail


def write_trajectory_pages(report_dir: Path, pages: list[tuple[str, Any, Any, str]]) -> list[Path]:
    """Write each ``(file name, package, PackageSurvival, label)`` page under ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, package, survival, label in pages:
        path = report_dir / name
        write_text(path, trajectory_page(trajectory_data(package, survival, label)))
        written.append(path)
    return written
