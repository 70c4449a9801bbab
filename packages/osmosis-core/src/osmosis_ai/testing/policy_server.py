"""``ScriptedPolicyServer``: a real OpenAI-compatible chat-completions server for tests.

It listens on ``127.0.0.1`` (a free port unless you pass ``port=``) and answers ``POST`` on any
path ending in ``/chat/completions`` — so a rollout-scoped base URL such as
``http://127.0.0.1:PORT/v1/rollouts/<rollout_id>`` works exactly like the training cluster's —
with non-streaming ``chat.completion`` objects or real SSE streams (``"stream": true``).

Async tests::

    from osmosis_ai.testing import ScriptedPolicyServer, tool_call_reply

    async with ScriptedPolicyServer(["hi", tool_call_reply("multiply", {"a": 2, "b": 3})]) as s:
        client = openai.AsyncOpenAI(base_url=s.chat_completions_url("r1"), api_key="k")
        ...
        assert s.requests[0].rollout_id == "r1"

Sync code, or another thread/process needing a URL::

    with ScriptedPolicyServer("multiply") as s:   # runs in a background thread
        print(s.url)                               # http://127.0.0.1:PORT/v1

From a shell (prints the base URL on its first stdout line, runs until SIGINT/SIGTERM)::

    python -m osmosis_ai.testing.policy_server --policy multiply --port 8123

**Policies.** ``policy`` is one of:

* a list of turns (``str``, :class:`Reply`, :class:`ErrorReply`), consumed in order **per
  rollout scope** (the ``<rollout_id>`` in the path; unscoped paths share one scope), so
  concurrent rollouts each replay the script from the start. Running past the end answers
  HTTP 500 saying so;
* a callable ``(request_body: dict) -> str | Reply | ErrorReply`` (sync or async);
* a built-in name: ``"multiply"``, ``"echo"`` or ``"instant"`` (see
  :mod:`osmosis_ai.testing.responders`), or ``"judge"`` (an LLM-judge stand-in, see
  :func:`osmosis_ai.testing.judge.reference_judge`).

**Concurrency.** :attr:`ScriptedPolicyServer.in_flight` is the number of chat-completions
requests being answered right now and :attr:`ScriptedPolicyServer.max_in_flight` the most seen
at once (with a ``delay`` on the replies it shows whether a client really calls concurrently).

**Playing a judge.** :mod:`osmosis_ai.testing.judge` builds judge verdicts, malformed replies,
429s with ``Retry-After`` and slow replies, so LLM-judge graders are testable offline.

**Recording.** Every request is kept as a :class:`RecordedRequest` (path, headers, JSON body,
rollout scope) in :attr:`ScriptedPolicyServer.requests` — the most recent ``max_recorded``
(default 10,000; ``0`` disables recording, e.g. for benchmarks). Recorded headers include the
``Authorization`` header so tests can check which key a client sent; never point a real client
holding a production key at this server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from osmosis_ai.testing._served_app import ServedApp
from osmosis_ai.testing.completions import completion_object, new_completion_id, stream_events
from osmosis_ai.testing.judge import reference_judge
from osmosis_ai.testing.recording import RecordedRequest, rollout_scope
from osmosis_ai.testing.replies import ErrorReply, Reply, ScriptedTurn, as_reply
from osmosis_ai.testing.responders import BUILTIN_POLICIES as _RESPONDERS

type Responder = Callable[[dict[str, Any]], ScriptedTurn | Awaitable[ScriptedTurn]]
type Policy = Sequence[ScriptedTurn] | Responder | str

#: Built-in policies by name: the responders plus ``"judge"`` (:func:`reference_judge`).
BUILTIN_POLICIES: dict[str, Responder] = {**_RESPONDERS, "judge": reference_judge}
DEFAULT_MODEL = "scripted-policy"


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)


class ScriptedPolicyServer(ServedApp):
    """A scripted OpenAI-compatible policy endpoint; see the module docstring for the manual.

    The lifecycle (``async with``, ``with``, :meth:`start`, :meth:`start_in_thread`) and the
    port and root URL come from :class:`~osmosis_ai.testing._served_app.ServedApp`.
    """

    _name = "ScriptedPolicyServer"
    _thread_name = "scripted-policy-server"

    def __init__(
        self,
        policy: Policy = "instant",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = DEFAULT_MODEL,
        max_recorded: int = 10_000,
    ) -> None:
        super().__init__(host=host, port=port)
        self.model = model
        self._responder, self._script = self._resolve_policy(policy)
        self._cursors: dict[str | None, int] = {}
        self._recorded: deque[RecordedRequest] | None = (
            deque(maxlen=max_recorded) if max_recorded > 0 else None
        )
        self.in_flight = 0
        self.max_in_flight = 0
        self.app = self._build_app()

    # -- policy ---------------------------------------------------------------------------

    @staticmethod
    def _resolve_policy(policy: Policy) -> tuple[Responder | None, list[ScriptedTurn] | None]:
        if isinstance(policy, str):
            builtin = BUILTIN_POLICIES.get(policy)
            if builtin is None:
                names = ", ".join(sorted(BUILTIN_POLICIES))
                raise ValueError(
                    f"unknown built-in policy {policy!r}; use one of {names}, a list of turns "
                    "or a callable (request_body) -> reply"
                )
            return builtin, None
        if callable(policy):
            return policy, None
        if isinstance(policy, Sequence):
            turns = list(policy)
            for turn in turns:
                as_reply(turn)  # fail at construction, not at the first request
            return None, turns
        raise TypeError(
            "policy must be a built-in name, a list of turns or a callable (request_body) -> reply"
        )

    async def _next_turn(self, body: dict[str, Any], scope: str | None) -> Reply | ErrorReply:
        if self._responder is not None:
            turn = self._responder(body)
            if inspect.isawaitable(turn):
                turn = await turn
            return as_reply(turn)
        assert self._script is not None
        index = self._cursors.get(scope, 0)
        self._cursors[scope] = index + 1
        if index >= len(self._script):
            where = f"rollout {scope!r}" if scope is not None else "unscoped requests"
            return ErrorReply(
                500,
                f"scripted policy has no turn {index + 1} for {where}: the script has "
                f"{len(self._script)} turn(s)",
            )
        return as_reply(self._script[index])

    def reset_script(self) -> None:
        """Start every rollout scope's script from its first turn again."""
        self._cursors.clear()

    # -- recording ------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Recorded requests, oldest first."""
        return list(self._recorded) if self._recorded is not None else []

    def requests_for(self, rollout_id: str | None) -> list[RecordedRequest]:
        return [r for r in self.requests if r.rollout_id == rollout_id]

    def clear_requests(self) -> None:
        if self._recorded is not None:
            self._recorded.clear()

    # -- addresses (the port and root URL: ServedApp) --------------------------------------

    @property
    def url(self) -> str:
        """The OpenAI base URL (``.../v1``); clients POST ``{url}/chat/completions``."""
        return f"{self.root_url}/v1"

    def chat_completions_url(self, rollout_id: str) -> str:
        """The rollout-scoped base URL handed to a rollout as ``chat_completions_url``."""
        return f"{self.root_url}/v1/rollouts/{rollout_id}"

    # -- HTTP -----------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        # Plain Starlette endpoints: FastAPI's parameter resolution would add CPU to every call
        # and this server is on the hot path of benchmarks.
        app.add_route("/{path:path}", self._dispatch, methods=["GET", "POST"])
        return app

    async def _dispatch(self, request: Request) -> Response:
        path = request.url.path
        if request.method == "POST":
            return await self._handle_post(path, request)
        tail = path.rstrip("/")
        if tail.endswith("models"):
            return JSONResponse(
                {
                    "object": "list",
                    "data": [
                        {"id": self.model, "object": "model", "created": 0, "owned_by": "osmosis"}
                    ],
                }
            )
        if tail.endswith("health"):
            return JSONResponse({"status": "ok"})
        return _error(404, f"no route GET {path}; POST .../chat/completions", "not_found")

    async def _handle_post(self, path: str, request: Request) -> Response:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer_post(path, request)
        finally:
            self.in_flight -= 1

    async def _answer_post(self, path: str, request: Request) -> Response:
        if not path.rstrip("/").endswith("/chat/completions"):
            return _error(
                404,
                f"no route POST {path}; this server answers POST .../chat/completions",
                "not_found",
            )
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        scope = rollout_scope(path)
        if self._recorded is not None:
            self._recorded.append(
                RecordedRequest(
                    path=path, headers=dict(request.headers), body=body, rollout_id=scope
                )
            )
        if not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is required and must be a list of message objects")
        try:
            turn = await self._next_turn(body, scope)
        except Exception as exc:  # a bug in the test's responder: make it visible to the client
            return _error(
                500, f"policy responder raised {type(exc).__name__}: {exc}", "server_error"
            )
        if turn.delay > 0:
            await asyncio.sleep(turn.delay)
        if isinstance(turn, ErrorReply):
            return JSONResponse(turn.json_body(), turn.status, headers=turn.headers)
        completion_id = new_completion_id()
        if body.get("stream"):
            return StreamingResponse(
                _iterate(stream_events(body, turn, model=self.model, completion_id=completion_id)),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
            )
        return JSONResponse(
            completion_object(body, turn, model=self.model, completion_id=completion_id)
        )


async def _iterate(frames: Iterator[bytes]) -> AsyncIterator[bytes]:
    for frame in frames:
        yield frame


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m osmosis_ai.testing.policy_server",
        description="Serve a scripted OpenAI-compatible policy on 127.0.0.1; prints its base URL.",
    )
    parser.add_argument("--policy", default="multiply", choices=sorted(BUILTIN_POLICIES))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    return parser.parse_args(argv)


async def _serve_forever(args: argparse.Namespace) -> None:
    server = ScriptedPolicyServer(
        args.policy, host=args.host, port=args.port, model=args.model, max_recorded=0
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with server:
        print(server.url, flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        asyncio.run(_serve_forever(args))
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "DEFAULT_MODEL",
    "Policy",
    "RecordedRequest",
    "Responder",
    "ScriptedPolicyServer",
    "rollout_scope",
]
