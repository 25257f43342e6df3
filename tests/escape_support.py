"""Hostile copies of the hand-made package and checks of what the report made of them.

``hostile_package`` copies tests/fixtures/handmade and renames, everywhere it occurs, the study,
one configuration (``acme/alpha-1``), the treatment arm (``q``) and the scenario (``S5``), then
re-locks the copy (the lock a stranger would ship). ``html_structure`` and ``visible_text`` read an
HTML page the way a browser builds it, so a test can say "this name changed no element, only text".
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

from report_support import HANDMADE

CONFIGURATION = "acme/alpha-1"
ARM = "q"
SCENARIO = "S5"
STUDY = "hand-made oracle package"


def toml_string(text: str) -> str:
    """A TOML basic string for any text (quote, backslash and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def hostile_package(dest: Path, *, study: str | None = None, configuration: str | None = None,
                    arm: str | None = None, scenario: str | None = None) -> Path:
    """A re-locked copy of the hand-made package with the given names substituted."""
    from analysis.evidence import write_lock

    shutil.copytree(HANDMADE, dest)
    toml = (dest / "study.toml").read_text(encoding="utf-8")
    if study is not None:
        toml = toml.replace(f'name = "{STUDY}"', f"name = {toml_string(study)}", 1)
    if configuration is not None:
        toml = toml.replace(f'"{CONFIGURATION}"', toml_string(configuration))
    if arm is not None:  # every quoted occurrence: the contrast, and any declaration of the arms
        toml = toml.replace(f'"{ARM}"', toml_string(arm))
    if scenario is not None:
        toml = toml.replace(f'"{SCENARIO}"', toml_string(scenario))
    (dest / "study.toml").write_text(toml, encoding="utf-8")
    with (dest / "rows.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        if configuration is not None and row["configuration"] == CONFIGURATION:
            row["configuration"] = configuration
        if arm is not None and row["arm"] == ARM:
            row["arm"] = arm
        if scenario is not None and row["scenario"] == SCENARIO:
            row["scenario"] = scenario
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (dest / "rows.csv").write_text(buf.getvalue(), encoding="utf-8", newline="")
    write_lock(dest)
    return dest


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(sorted(a for a, _ in attrs))))
        if tag in ("style", "script"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def html_structure(page: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every start tag of ``page`` with its attribute names, in order (what text cannot change)."""
    p = _Page()
    p.feed(page)
    return p.tags


def visible_text(page: str) -> str:
    """The text a reader sees (entities decoded, style and script skipped)."""
    p = _Page()
    p.feed(page)
    return "".join(p.text)


def printable(text: str) -> str:
    """The letters, digits, punctuation and symbols of ``text`` (what every renderer must keep)."""
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in "LNPS")


def squeeze(text: str) -> str:
    """``printable`` of a whole page, for substring checks of a name."""
    return re.sub(r"\s+", "", printable(text))
