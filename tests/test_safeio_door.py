"""The door stays shut: no module outside the I/O layer opens, reads, writes or parses a file itself.

An AST walk over every module of ``analysis`` outside ``analysis/safeio/`` looks for the calls that
touch files directly: ``open``/``io.open``/``os.open``/``os.fdopen``, any ``.open(``,
``Path.read_text/read_bytes/write_text/write_bytes``, ``json.load/dump`` (to a file),
``json.loads``/``tomllib.load(s)`` (the door's ``loads_json``/``loads_toml`` check depth, NaN and
surrogates first) and ``shutil.copy*``. Subprocesses are out of scope. The few allowed places are
listed in :data:`ALLOWED` with the reason for each.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.paths import REPO as ROOT

PACKAGE = ROOT / "analysis"
DOOR = PACKAGE / "safeio"

RAW_ATTRS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "fdopen"}
MODULE_CALLS = {("json", "load"), ("json", "dump"), ("json", "loads"), ("tomllib", "load"), ("tomllib", "loads"),
                ("shutil", "copy"), ("shutil", "copyfile"), ("shutil", "copy2"), ("io", "open")}

ALLOWED: dict[tuple[str, str], str] = {
    ("analysis/runner/ledger.py", "json.loads"):
        "classifies a ledger line already read through the door and refused by loads_json: is it JSON cut "
        "short (a crash's torn tail) or damaged? Only the parser's error position is read, never a value",
    ("analysis/evidence/files.py", "os.open"):
        "the evidence reader: the door's stat checks (safeio.read.stat_problem) plus an mmap'd, hashed "
        "read of up to 1 GiB whose messages are the evidence format's",
    ("analysis/evidence/files.py", "os.fdopen"): "same reader: readinto the private memory map",
    ("analysis/evidence/provenance.py", "json.loads"):
        "provenance.lock bytes read by the evidence reader, depth checked first; lock-specific problems",
    ("analysis/evidence/folds.py", "json.loads"):
        "folds.jsonl lines from the verified buffer, depth checked per line; every problem collected with its line",
    ("analysis/evidence/study.py", "tomllib.loads"):
        "study.toml bytes from the verified buffer, depth and dotted keys checked first; problems with lines",
}
"""(module, call) -> why it may bypass the door."""


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id if func.id == "open" else None
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and (owner.id, func.attr) in MODULE_CALLS:
            return f"{owner.id}.{func.attr}"
        if isinstance(owner, ast.Name) and owner.id == "os" and func.attr in ("open", "fdopen"):
            return f"os.{func.attr}"
        if func.attr in RAW_ATTRS:
            return f".{func.attr}"
    return None


def violations(root: Path, door: Path) -> list[str]:
    """``path:line: call`` for every raw file call outside the door and the allow-list."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if door in path.parents:
            continue
        rel = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and (name := _call_name(node)) is not None \
                    and (rel, name) not in ALLOWED:
                found.append(f"{rel}:{node.lineno}: {name}")
    return found


def test_no_module_outside_the_door_touches_files_itself() -> None:
    assert violations(PACKAGE, DOOR) == [], "read and write through analysis.safeio (see its docstring)"


def test_every_allowance_is_still_used() -> None:
    used = set()
    for (rel, name) in ALLOWED:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        if any(isinstance(n, ast.Call) and _call_name(n) == name for n in ast.walk(tree)):
            used.add((rel, name))
    assert used == set(ALLOWED), f"stale allowances: {set(ALLOWED) - used}"


@pytest.mark.parametrize("line", [
    "data = open('x').read()",
    "from pathlib import Path\nPath('x').read_text()",
    "import json\njson.load(fh)",
    "import json\njson.loads(text)",
    "import tomllib\ntomllib.loads(text)",
    "from pathlib import Path\nPath('x').write_bytes(b'')",
    "import os\nos.open('x', 0)",
    "import shutil\nshutil.copyfile('a', 'b')",
])
def test_a_planted_violation_is_caught(tmp_path: Path, line: str) -> None:
    pkg = tmp_path / "analysis"
    (pkg / "safeio").mkdir(parents=True)
    (pkg / "safeio" / "read.py").write_text("data = open('x').read()\n")  # the door itself may
    (pkg / "bad.py").write_text(line + "\n")
    found = violations(pkg, pkg / "safeio")
    assert len(found) == 1 and found[0].startswith("analysis/bad.py:")
