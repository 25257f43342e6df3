"""The embedded server never runs code from the working directory (issue 31, item 8).

`python -m llama_cpp.server` put the working directory first on sys.path, so a `llama_cpp/`
folder there ran instead of the installed package.  The server is now started with `python -P`,
PYTHONSAFEPATH=1 and only absolute PYTHONPATH entries.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from analysis.runner.embedded import EmbeddedServer

PLANT = "from pathlib import Path\nPath(__file__).with_name('RAN').write_text('planted')\nraise SystemExit(7)\n"


def _server() -> EmbeddedServer:
    srv = object.__new__(EmbeddedServer)  # no llama.cpp or model needed to build the command
    srv.model, srv.port, srv.n_ctx, srv.n_threads = Path("/nonexistent/model.gguf"), 1, 512, None
    return srv


def _plant(root: Path) -> Path:
    pkg = root / "llama_cpp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PLANT)
    (pkg / "server.py").write_text(PLANT)
    return pkg / "RAN"


def test_server_command_and_environment_leave_the_working_directory_off_sys_path() -> None:
    cmd = _server().command()
    assert cmd[:4] == [sys.executable, "-P", "-m", "llama_cpp.server"]
    env = EmbeddedServer.child_env({"PYTHONPATH": os.pathsep.join(["", ".", "rel/dir", "/abs/dir"]), "X": "1"})
    assert env["PYTHONSAFEPATH"] == "1" and env["PYTHONPATH"] == "/abs/dir" and env["X"] == "1"
    assert "PYTHONPATH" not in EmbeddedServer.child_env({"PYTHONPATH": "."})


def test_a_planted_llama_cpp_in_the_working_directory_is_not_imported(tmp_path: Path) -> None:
    ran = _plant(tmp_path)
    hostile = {**os.environ, "PYTHONPATH": os.pathsep.join(["", "."])}
    # control: started the way it was before the fix, the plant runs (so this test can fail)
    before = subprocess.run([sys.executable, "-m", "llama_cpp.server", "--help"], cwd=tmp_path, env=hostile,
                            capture_output=True, timeout=120)
    assert before.returncode == 7 and ran.exists()
    ran.unlink()
    cmd = _server().command()
    cmd = [*cmd[:cmd.index("llama_cpp.server") + 1], "--help"]
    after = subprocess.run(cmd, cwd=tmp_path, env=EmbeddedServer.child_env(hostile), capture_output=True, timeout=120)
    assert not ran.exists(), after.stderr[-1000:]
    assert after.returncode != 7
    if after.returncode != 0:  # llama-cpp-python not installed here: the import fails, the plant still never ran
        assert b"No module named" in after.stderr, after.stderr[-1000:]
