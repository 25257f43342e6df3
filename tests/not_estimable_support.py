"""Small evidence packages on which a statistic is not estimable, and the checks that a report says so
in words instead of printing a placeholder (issue 30).

``bad_package(dest, passes)`` writes a re-locked package of the j/q contrast on S5: one partition run per
configuration, ``passes[configuration]`` a list of (j passed, q passed) per repeat out of 14 checks (None:
that arm has no row in the repeat). ``placeholders_in_prose`` finds a dash where a number should be inside
a sentence ("p = —", "[—, —]"); ``zero_width_intervals`` finds an interval whose two ends print the same.
"""

from __future__ import annotations

import re
from pathlib import Path

ROW_HEADER = ("row_id,scenario,configuration,execution_group,repeat,arm,position,valid,invalid_reason,"
              "checks_total,checks_passed,parse_failures,headings_carried,carried_chars,declared_chars,folds,"
              "folds_clipped,finish_stop,finish_length,prompt_tokens_est,answer")
CHECK_HEADER = "row_id,check,expected,passed,in_carrier"

DASH = "—"
_NUM = r"[+\-−]?\d[\d,]*(?:\.\d+)?%?"
_PLACEHOLDER = re.compile(rf"(?:[=:]\s*{DASH}(?=[\s.,;)\]]|$))|(?:\[\s*{DASH})|(?:{DASH}\s*\])|(?:{DASH},\s*{DASH})")
_ZERO_WIDTH = re.compile(rf"\[\s*({_NUM}),\s*({_NUM})\s*\]")


def bad_package(dest: Path, passes: dict[str, list[tuple[int | None, int | None]]]) -> Path:
    """A locked package of the j/q contrast: ``passes[configuration][repeat] = (j passed, q passed)`` of 14."""
    from analysis.evidence import write_lock

    dest.mkdir(parents=True)
    toml = ["[study]", 'name = "bad input"', "recency_cutoff = 2026-01-28", 'control = "j"', 'treatment = "q"',
            'scenario = "S5"', 'kind = "fixture"', ""]
    for i, conf in enumerate(passes):
        toml += [f'[configurations."{conf}"]', f'family = "fam{i}"', "published = 2026-03-01", ""]
    for i, (conf, reps) in enumerate(passes.items()):
        toml += ["[[partition_runs]]", f'configuration = "{conf}"', f'execution_group = "g{i}"',
                 f"planned_repeats = {len(reps)}", ""]
    (dest / "study.toml").write_text("\n".join(toml), encoding="utf-8")
    rows, checks = [ROW_HEADER], [CHECK_HEADER]
    for i, (conf, reps) in enumerate(passes.items()):
        for rep, pair in enumerate(reps, 1):
            for pos, (arm, passed) in enumerate(zip(("j", "q"), pair, strict=True), 1):
                if passed is None:
                    continue
                rid = f"c{i}-r{rep}-{arm}"
                rows.append(f"{rid},S5,{conf},g{i},{rep},{arm},{pos},true,,14,{passed},0,5,6000,9600,5,0,5,0,19000,"
                            "answer")
                checks += [f"{rid},check {k},v{k},{'true' if k < passed else 'false'}," for k in range(14)]
    (dest / "rows.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (dest / "checks.csv").write_text("\n".join(checks) + "\n", encoding="utf-8")
    write_lock(dest)
    return dest


def prose(text: str) -> str:
    """The sentences of a report's Markdown: without table lines, fenced blocks and HTML comments."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("|"))


def placeholders_in_prose(text: str) -> list[str]:
    """Each place where a sentence prints a dash in place of a number (with some context)."""
    body = prose(text)
    return [body[max(0, m.start() - 60):m.end() + 20] for m in _PLACEHOLDER.finditer(body)]


def zero_width_intervals(text: str) -> list[str]:
    """Each printed interval ``[a, b]`` whose ends print the same (a zero-width interval). The no-wrap spans of
    table Markdown (``[62%, 62%]{.nw}``: a list of two equal fills, not an interval) are read as printed."""
    from report_support import unspanned

    return [m.group(0) for m in _ZERO_WIDTH.finditer(unspanned(text))
            if m.group(1).replace("−", "-").lstrip("+") == m.group(2).replace("−", "-").lstrip("+")]
