""".ci/run runs the README's test command inside a virtual environment, as users do (issue 33), and its exit
status is pytest's: non-zero when a test fails, and when no test was collected (pytest's exit 5)."""

from __future__ import annotations

import re
import subprocess

import pytest

from support.paths import REPO as ROOT

CI = ROOT / ".ci" / "run"
TEST_MARK = "# The README's test command"


def _lines() -> list[str]:
    text = CI.read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def readme_commands() -> list[str]:
    """The README's set-up commands: the lines of the first bash block under 'Set-up on a fresh machine'."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Set-up on a fresh machine.*?```bash\n(.*?)```", readme, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_ci_installs_and_tests_inside_a_venv() -> None:
    lines = _lines()
    create = next(i for i, line in enumerate(lines) if "-m venv .venv" in line)
    activate = lines.index(". .venv/bin/activate")
    install = next(i for i, line in enumerate(lines) if 'pip install -e ".[test]"' in line)
    test = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert create < activate < install < test
    assert "--system-site-packages" not in CI.read_text(encoding="utf-8")  # the venv's own packages, as a user's
    assert subprocess.run(["bash", "-n", str(CI)], capture_output=True).returncode == 0


def test_the_readme_has_two_commands_and_ci_runs_the_second_unchanged() -> None:
    install, tests = readme_commands()
    assert install == 'python -m pip install -e ".[test]" && python generate.py'
    assert [line for line in _lines() if "-m pytest" in line] == [f"{tests} || status=$?"]


def test_ci_reuses_the_llama_cpp_the_interpreter_has() -> None:
    """The venv installs the llama-cpp-python version the interpreter outside it has (read before the venv is
    activated), so pip reuses the wheel it cached when it built that one instead of building llama.cpp again."""
    lines = _lines()
    probe = next(i for i, line in enumerate(lines) if line.startswith("system_llama=$(python "))
    assert probe < lines.index(". .venv/bin/activate")
    assert 'spec="llama-cpp-python[server]==${system_llama}"' in CI.read_text(encoding="utf-8")


@pytest.mark.parametrize(("pytest_status", "ci_status"), [(0, 0), (1, 1), (2, 2), (5, 5)])
def test_ci_exits_with_pytests_status(pytest_status: int, ci_status: int) -> None:
    """The script's own test step, run with ``python`` standing in for pytest's exit status: a failure (1),
    an interrupted or broken run (2) and no test collected (5) all fail CI; 0 passes."""
    text = CI.read_text(encoding="utf-8")
    step = next(line for line in text.splitlines() if line.startswith("step() "))
    tail = text[text.index(TEST_MARK):]
    script = f"set -euo pipefail\n{step}\npython() {{ return {pytest_status}; }}\n{tail}"
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert r.returncode == ci_status, r.stderr
    assert ("collected no tests" in r.stderr) == (pytest_status == 5)
