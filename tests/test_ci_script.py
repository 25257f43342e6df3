""".ci/run runs the README's test command inside a virtual environment, as users do (issue 33)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"


def test_ci_installs_and_tests_inside_a_venv() -> None:
    text = CI.read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    create = next(i for i, line in enumerate(lines) if "-m venv .venv" in line)
    activate = lines.index(". .venv/bin/activate")
    install = next(i for i, line in enumerate(lines) if 'pip install -e ".[test]"' in line)
    assert create < activate < install < lines.index("python -m pytest")
    assert "--system-site-packages" not in text  # the venv's own packages, as a user's venv has
    assert subprocess.run(["bash", "-n", str(CI)], capture_output=True).returncode == 0
