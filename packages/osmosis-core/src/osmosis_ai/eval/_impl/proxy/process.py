""":class:`ProxyProcess`: the policy proxy of ``eval run --servers``, run in its own process.

Why its own process: every model call of every rollout passes through the proxy (an HTTP
request in, one out to the model, both answers back), which was about a third of the
controller's CPU per row; in a child process (:mod:`osmosis_ai.eval._impl.proxy.child`) it runs on another core and
the controller's event loop keeps the admissions, polls and journal. Per row the controller then
only signs the rollout's token (no message), and at the end asks for the row's
:class:`~osmosis_ai.eval._impl.proxy.calls.CallSummary` (one short line each way); the child writes
the calls to ``llm_calls.jsonl`` itself, exactly as the in-process proxy does.

What stays the same: the proxy listens on ``--proxy-host`` (127.0.0.1 unless asked), every
rollout has its own bearer token (now an HMAC under a per-session key; see
:func:`~osmosis_ai.eval._impl.proxy.asgi.route_token`), a re-dispatched rollout's earlier attempt can no
longer reach the model or add calls, and the upstream key reaches the child through its stdin
only (never argv, environment or files).

If the child exits during a run, the rows still running cannot be finished (their calls are
unknown): :meth:`ProxyProcess.finish` raises :class:`~osmosis_ai.eval._impl.proxy.calls.ProxyGone`,
the scheduler halts and those rows stay pending for a rerun with the same ``--name``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from osmosis_ai._util import framing
from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.proxy.asgi import route_token
from osmosis_ai.eval._impl.proxy.calls import CallSummary, ProxyGone, RetryPolicy
from osmosis_ai.eval._impl.proxy.policy_proxy import public_text
from osmosis_ai.eval._impl.proxy.upstream import Upstream

_START_TIMEOUT_SEC = 120.0
_STOP_TIMEOUT_SEC = 15.0


class ProxyStartError(EvalError):
    """The proxy process did not start (the port is taken, or it crashed on start-up)."""


class ProxyProcess:
    """The controller's handle on the proxy process; see the module docstring."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        calls_path: Path,
        retry: RetryPolicy | None = None,
        token_ids: bool = False,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.upstream = upstream
        self.base_url = ""
        self._calls_path = calls_path
        self._retry = retry or RetryPolicy()
        self._token_ids = token_ids
        self._on_event = on_event
        self._redact = redact
        self._key = secrets.token_bytes(32)
        self._generations: dict[str, int] = {}
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stderr: deque[str] = deque(maxlen=20)
        self._stopping = False
        self.gone: ProxyGone | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        process = self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "osmosis_ai.eval._impl.proxy.child",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=16 * 1024 * 1024,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        upstream = self.upstream
        config = {
            "upstream": {
                "model": upstream.model,
                "base_url": upstream.base_url,
                "api_key": upstream.api_key,
                "sampling": upstream.sampling,
            },
            "retry": dataclasses.asdict(self._retry),
            "token_ids": self._token_ids,
            "host": host,
            "port": port,
            "key": self._key.hex(),
            "calls_path": str(self._calls_path),
        }
        self._tasks.append(asyncio.create_task(self._drain_stderr()))
        process.stdin.write(framing.encode(config))
        try:
            line = await asyncio.wait_for(process.stdout.readline(), _START_TIMEOUT_SEC)
        except TimeoutError:
            line = b""
        answer = framing.decode(line) if line.startswith(b"{") else {}
        if answer.get("op") != "ready":
            await self.aclose()
            reason = answer.get("message") or self._exit_text()
            raise ProxyStartError(f"the policy proxy process did not start: {reason}")
        self.base_url = answer["url"]
        self._tasks.append(asyncio.create_task(self._read()))

    async def aclose(self) -> None:
        """Stop the child (it stops when its stdin closes) and wait for it."""
        self._stopping = True
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), _STOP_TIMEOUT_SEC)
        except TimeoutError:
            process.kill()
            await process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    # ---- routes ------------------------------------------------------------------------------

    def register(self, rollout_id: str) -> tuple[str, str]:
        generation = self._generations.get(rollout_id, 0) + 1
        self._generations[rollout_id] = generation
        if generation > 1:  # a re-dispatch: the earlier attempt's calls no longer count
            self._send({"op": "reset", "id": rollout_id, "generation": generation})
        url = f"{self.base_url}/v1/rollouts/{quote(rollout_id, safe='')}"
        return url, route_token(self._key, rollout_id, generation)

    def discard(self, rollout_id: str) -> None:
        self._generations.pop(rollout_id, None)
        self._send({"op": "close", "id": rollout_id, "keep": False})

    async def finish(self, rollout_id: str) -> CallSummary:
        self._generations.pop(rollout_id, None)
        if self.gone is not None:
            raise self.gone
        future = asyncio.get_running_loop().create_future()
        self._waiting[rollout_id] = future
        try:
            self._send({"op": "close", "id": rollout_id, "keep": True})
            return CallSummary.from_json(await future)
        finally:
            self._waiting.pop(rollout_id, None)

    def public_text(self, text: str, rollout_id: str) -> str:
        return public_text(text, self.base_url, rollout_id, self.upstream.display_url)

    async def preflight(self) -> tuple[int | None, str]:
        """One tiny completion from the child straight to the upstream: ``(status, excerpt)``."""
        if self.gone is not None:
            raise self.gone
        future = asyncio.get_running_loop().create_future()
        self._waiting[""] = future
        try:
            self._send({"op": "preflight"})
            answer = await future
        finally:
            self._waiting.pop("", None)
        return answer["status"], answer["excerpt"]

    # ---- the pipe ----------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        """One line to the child; nothing once it is gone. Between the child's exit and
        :meth:`_read` noticing it (it waits for the exit code and the last stderr lines), the
        pipe is already closed and ``gone`` still unset: the message is dropped, and ``_read``
        fails whatever waits for an answer."""
        process = self._process
        if self.gone is not None or process is None or process.stdin is None:
            return
        if process.stdin.is_closing():  # uvloop raises RuntimeError on a write to it
            return
        with contextlib.suppress(ConnectionError):  # the child died since the last loop turn
            process.stdin.write(framing.encode(message))

    async def _read(self) -> None:
        process = self._process
        assert process is not None
        assert process.stdout is not None
        while (message := await framing.read_message(process.stdout)) is not None:
            op = message["op"]
            if op == "closed":
                self._resolve(message["id"], message["summary"])
            elif op == "preflight":
                self._resolve("", message)
            elif op == "event" and self._on_event is not None:
                self._on_event(message["kind"], message["details"])
        await process.wait()
        with contextlib.suppress(Exception):  # the last words on stderr, for the message
            await asyncio.wait_for(asyncio.shield(self._tasks[0]), 2.0)
        if not self._stopping:
            self.gone = ProxyGone(
                f"the policy proxy process exited during the run ({self._exit_text()}); the "
                "work items still running stay pending: rerun with the same --name to resume"
            )
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(self.gone or ProxyGone("the policy proxy was stopped"))

    def _resolve(self, key: str, value: Any) -> None:
        future = self._waiting.get(key)
        if future is not None and not future.done():
            future.set_result(value)

    async def _drain_stderr(self) -> None:
        process = self._process
        assert process is not None
        assert process.stderr is not None
        while line := await process.stderr.readline():
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    def _exit_text(self) -> str:
        process = self._process
        code = None if process is None else process.returncode
        text = f"exit code {code}" if code is not None else "no answer"
        if self._stderr:
            text += ": " + self._redact(" | ".join(list(self._stderr)[-5:]))
        return text
