"""The rollout's server as a child process of ``osmosis eval run``.

Why a child process: the rollout's code (and, with ``--isolated``, its own virtual environment
through ``uv run --project rollouts/<name>``) must not share the controller's interpreter, and a
crash of the rollout must be *reported* (with the tail of its stderr), not take the controller
down. Why it can never be orphaned:

* ``PR_SET_PDEATHSIG`` (Linux) makes the kernel SIGTERM the direct child when the eval process
  dies, including on ``kill -9``;
* the child also watches a stdin pipe whose other end only this process holds (see
  ``bootstrap.py``), which covers ``uv run`` where the server is a grandchild, and
  platforms without ``PR_SET_PDEATHSIG``;
* :meth:`RolloutServerProcess.stop` sends SIGTERM (the server drains), then SIGKILL to the whole
  process group after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import httpx

from osmosis_ai._util.child_process import die_with_parent
from osmosis_ai.errors import EvalError

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")


class RolloutServerError(EvalError):
    """The rollout server could not be started or died; ``stderr_tail`` shows why."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        self.stderr_tail = stderr_tail
        detail = (
            f"\n--- last lines of the rollout server's output ---\n{stderr_tail}"
            if stderr_tail
            else ""
        )
        super().__init__(message + detail)


def find_uv() -> str:
    """``uv`` for ``--isolated`` (:func:`osmosis_ai.uv_binary.find_uv` finds it)."""
    from osmosis_ai.uv_binary import UvNotFoundError
    from osmosis_ai.uv_binary import find_uv as locate

    try:
        return locate()
    except UvNotFoundError as exc:
        raise RolloutServerError(
            f"--isolated runs the rollout in its own environment with uv: {exc}; or drop "
            "--isolated to use the current environment"
        ) from exc


class RolloutServerProcess:
    """Start, health-check, monitor and stop one rollout server."""

    def __init__(
        self,
        *,
        entrypoint: Path,
        rollout_dir: Path,
        log_path: Path,
        env: Mapping[str, str],
        isolated: bool = False,
        api_key: str | None = None,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.entrypoint = entrypoint
        self.rollout_dir = rollout_dir
        self.log_path = log_path
        self.isolated = isolated
        self.instance_id = uuid.uuid4().hex
        self._env = dict(env)
        self._api_key = api_key
        self._redact = redact
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._port_file = log_path.with_name(f".rollout_server.{self.instance_id}.port")
        self.url = ""
        self.health: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        args = [str(BOOTSTRAP), str(self.entrypoint), str(self.rollout_dir), str(self._port_file)]
        if self.isolated:
            # The rollout's own environment (rollouts/<name>/.venv, created by uv on first use).
            # Interpreter: the rollout's .python-version if it has one, else the one running
            # osmosis, so uv never downloads a Python unasked.
            pinned = (self.rollout_dir / ".python-version").is_file()
            python = [] if pinned else ["--python", sys.executable]
            return [
                find_uv(),
                "run",
                "--quiet",
                "--project",
                str(self.rollout_dir),
                *python,
                "python",
                *args,
            ]
        return [sys.executable, *args]

    async def start(self, *, timeout_sec: float = 120.0) -> str:
        """Spawn the server and wait for ``/health``; returns its base URL."""
        self.spawn()
        return await self.wait_healthy(timeout_sec=timeout_sec)

    def spawn(self) -> None:
        """Start the child without waiting (the caller can prepare other things meanwhile)."""
        env = {
            **self._env,
            "_OSMOSIS_ROLLOUT_INSTANCE_ID": self.instance_id,
            "_OSMOSIS_EVAL_WATCH_STDIN": "1",
            "PYTHONUNBUFFERED": "1",
        }
        if self._api_key:
            env["OSMOSIS_ROLLOUT_API_KEY"] = self._api_key
        if self.isolated:  # the rollout's environment, not whichever one osmosis runs in
            for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONHOME", "PYTHONPATH"):
                env.pop(name, None)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        # Spawned from the event-loop (main) thread on purpose: PR_SET_PDEATHSIG fires when the
        # *thread* that forked the child exits, so a worker thread would kill it early.
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(self.rollout_dir),
            preexec_fn=die_with_parent,  # its own group: stop() reaches uv run's child
        )

    async def wait_healthy(self, *, timeout_sec: float = 120.0) -> str:
        """Wait until ``/health`` answers 200 from *our* server; returns its base URL."""
        deadline = time.monotonic() + timeout_sec
        headers = {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        async with httpx.AsyncClient(timeout=5.0, headers=headers) as client:
            while True:
                self.raise_if_exited("the rollout server exited during start-up")
                if not self.url and self._port_file.exists():
                    self.url = f"http://127.0.0.1:{int(self._port_file.read_text())}"
                if self.url:
                    with contextlib.suppress(httpx.HTTPError):
                        response = await client.get(f"{self.url}/health")
                        if response.status_code == 200:
                            self._check_identity(response)
                            return self.url
                if time.monotonic() > deadline:
                    await self.stop()
                    raise RolloutServerError(
                        f"the rollout server did not become healthy within {timeout_sec:.0f}s",
                        self.output_tail(),
                    )
                await asyncio.sleep(0.05)

    def _check_identity(self, response: httpx.Response) -> None:
        """The server on this port must be *ours* (not another process that took the port)."""
        with contextlib.suppress(ValueError):
            body: Any = response.json()
            if isinstance(body, dict):
                self.health = body
            reported = body.get("instance_id") if isinstance(body, dict) else None
            if reported not in (None, self.instance_id):
                raise RolloutServerError(
                    f"the server at {self.url} is not the rollout server this eval started "
                    f"(instance {reported!r})"
                )

    def exited(self) -> int | None:
        return self._process.poll() if self._process is not None else None

    def raise_if_exited(self, what: str = "the rollout server exited") -> None:
        code = self.exited()
        if code is not None:
            raise RolloutServerError(f"{what} (exit code {code})", self.output_tail())

    def output_tail(self, max_lines: int = 30, max_bytes: int = 8192) -> str:
        """The last lines the server printed (stdout and stderr), secrets redacted."""
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - max_bytes))
                data = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = data.splitlines()[-max_lines:]
        return self._redact("\n".join(lines))

    async def stop(self, *, grace_sec: float = 15.0) -> None:
        """SIGTERM (drain), then SIGKILL the process group; idempotent."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, grace_sec)
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.poll() is None:
                process.kill()
            process.wait()
            if process.stdin is not None:
                process.stdin.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        with contextlib.suppress(OSError):
            self._port_file.unlink()
