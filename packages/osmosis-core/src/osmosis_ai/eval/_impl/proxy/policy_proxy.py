"""The rollout-scoped chat-completions endpoint: a faithful proxy to the upstream model.

Each rollout gets ``chat_completions_url = http://127.0.0.1:<port>/v1/rollouts/<rollout_id>``
and its own random bearer token; the agent POSTs ``<url>/chat/completions`` as to any
OpenAI-compatible server. The proxy

* checks the bearer token of *that* rollout (constant-time), so one rollout cannot spend
  another's budget or pollute its record, and an unknown or finished rollout gets 401/404;
* forwards **every** request field unchanged, except ``model``, which becomes the upstream model
  (agents say ``osmosis-rollout``; the eval decides which model answers);
* streams for real: upstream SSE bytes are passed through as they arrive;
* retries upstream 408/429/5xx and connection failures with exponential backoff (honouring
  ``Retry-After``) before anything was sent to the agent, so a rate limit is not an agent
  failure;
* records per call: latency, time to first byte, HTTP status, attempts, usage, the request's
  messages and the response message, finish reason, ``system_fingerprint``, and token ids
  and logprobs when the upstream returns them (vLLM ``return_token_ids``, ``logprobs``), so the
  trajectory of the rollout carries them and the append-only check can read them;
* adds ``return_token_ids: true`` to each request only when the run opted in (``token_ids``).

The upstream side (HTTP clients, the retry schedule, the adaptive concurrency limit) is
:class:`~osmosis_ai.eval._impl.proxy.caller.UpstreamCaller`; this module owns the routes, the call
records and what the rollout is sent.

Why a bare ASGI app rather than FastAPI: the proxy is on the hot path of every model call and
needs byte-level control of streaming; routing is two path shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote

import httpx

from osmosis_ai._util.asgi import (
    ClientGone,
    Receive,
    Scope,
    Send,
    bearer_matches,
    read_body,
    send_json,
)
from osmosis_ai.eval._impl.proxy.asgi import QuietServer, send_error
from osmosis_ai.eval._impl.proxy.caller import Answer, UpstreamCaller
from osmosis_ai.eval._impl.proxy.calls import (
    CallRecord,
    CallSummary,
    SSEWatcher,
    save_calls,
    summarize_calls,
)
from osmosis_ai.eval._impl.proxy.upstream import Upstream
from osmosis_ai.eval._impl.results.reproducibility import sampling_of

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_RETRYABLE_ERRORS = (httpx.TransportError,)
_CHAT_SUFFIX = ("chat", "completions")


@dataclass(slots=True)
class ProxyRoute:
    token: str
    calls: list[CallRecord] = field(default_factory=list)
    #: The attempt the route belongs to (the proxy process's signed tokens; see ``route_token``).
    generation: int = 0


def public_text(text: str, base_url: str, rollout_id: str, display_url: str) -> str:
    """``text`` with the proxy route of ``rollout_id`` under ``base_url`` replaced by the model
    endpoint the user gave (``display_url``)."""
    route = f"{base_url}/v1/rollouts/{quote(rollout_id, safe='')}"
    return text.replace(route, display_url) if route in text else text


class PolicyProxy:
    """Serves ``/v1/rollouts/<id>/chat/completions`` on 127.0.0.1 and forwards upstream."""

    def __init__(self, upstream: Upstream | UpstreamCaller, *, token_ids: bool = False) -> None:
        """``upstream``: an :class:`UpstreamCaller` with its retry schedule, timeout, events and
        adaptive limit, or an :class:`Upstream` to call with the defaults."""
        caller = upstream if isinstance(upstream, UpstreamCaller) else UpstreamCaller(upstream)
        self.caller = caller
        self.upstream = caller.upstream
        #: Ask the upstream for token ids (vLLM's ``return_token_ids``); opt-in, because
        #: providers that validate requests strictly reject unknown fields.
        self.token_ids = token_ids
        self._routes: dict[str, ProxyRoute] = {}
        self._server: Any = None
        self._serve_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        self.base_url = ""
        #: Where :meth:`finish` appends a finished rollout's calls (``llm_calls.jsonl``).
        self.calls_file: TextIO | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        from osmosis_ai.listening_socket import bind_tcp_listener

        sock = bind_tcp_listener(host, port)
        self._sock = sock
        from osmosis_ai._util.serving import start

        self._server = QuietServer(self).server
        self._serve_task = await start(self._server, sockets=[sock])
        bound_host, bound_port = sock.getsockname()[:2]
        self.base_url = f"http://{bound_host}:{bound_port}"

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._serve_task is not None:
            with contextlib.suppress(Exception):
                await self._serve_task
        await self.caller.aclose()
        if self._sock is not None:
            self._sock.close()

    async def __aenter__(self) -> PolicyProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # ---- per-rollout registration ----------------------------------------------------------

    def register(self, rollout_id: str) -> tuple[str, str]:
        """Open the endpoint for one rollout; returns ``(chat_completions_url, token)``."""
        token = secrets.token_urlsafe(24)
        self._routes[rollout_id] = ProxyRoute(token=token)
        return f"{self.base_url}/v1/rollouts/{quote(rollout_id, safe='')}", token

    def unregister(self, rollout_id: str) -> list[CallRecord]:
        """Close the endpoint (later calls get 404) and hand back its call records."""
        route = self._routes.pop(rollout_id, None)
        return route.calls if route is not None else []

    def discard(self, rollout_id: str) -> None:
        """Close the endpoint of a rollout that has no result (its calls are dropped)."""
        self.unregister(rollout_id)

    async def finish(self, rollout_id: str) -> CallSummary:
        """Close the endpoint of a rollout with a result: its calls go to ``calls_file``, the
        row's record gets their summary."""
        calls = self.unregister(rollout_id)
        save_calls(self.calls_file, rollout_id, calls)
        return summarize_calls(calls)

    def _route(self, rollout_id: str, scope: Scope) -> ProxyRoute | tuple[int, str, str]:
        """The route a request may use, or the error answer ``(status, message, kind)``."""
        route = self._routes.get(rollout_id)
        if route is None:
            return 404, f"unknown or finished rollout {rollout_id!r}", "not_found"
        if not bearer_matches(scope, route.token):
            return 401, "invalid or missing bearer token for this rollout", "auth"
        return route

    # ---- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path == "/health":
            await send_json(send, 200, {"status": "ok"})
            return
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[0] != "v1" or parts[1] != "rollouts":
            await send_error(send, 404, "not found", "not_found")
            return
        rollout_id, rest = parts[2], tuple(parts[3:])
        route = self._route(rollout_id, scope)
        if not isinstance(route, ProxyRoute):
            await send_error(send, *route)
            return
        if rest == ("models",) and method == "GET":
            await send_json(
                send,
                200,
                {"object": "list", "data": [{"id": self.upstream.model, "object": "model"}]},
            )
            return
        if rest != _CHAT_SUFFIX or method != "POST":
            await send_error(send, 404, f"unsupported endpoint {method} {path}", "not_found")
            return
        try:
            body = await read_body(receive)
        except ClientGone:  # nobody is left to answer
            return
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            request = None
        if not isinstance(request, dict):
            await send_error(
                send, 400, "request body must be a JSON object", "invalid_request_error"
            )
            return
        request["model"] = self.upstream.model
        request.update(self.upstream.sampling)
        stream = request.get("stream") is True
        if self.token_ids:
            request.setdefault("return_token_ids", True)
        record = CallRecord(started_at=time.time(), stream=stream)
        messages = request.get("messages")
        record.messages = messages if isinstance(messages, list) else None
        record.tools = request.get("tools")
        record.sampling = sampling_of(request)
        route.calls.append(record)
        start = time.perf_counter()
        payload = json.dumps(request, separators=(",", ":")).encode()
        try:
            if stream:
                await self._forward_stream(payload, record, send, start)
            else:
                await self._forward(payload, record, send, start)
        finally:
            record.latency_ms = (time.perf_counter() - start) * 1000

    async def _forward(self, payload: bytes, record: CallRecord, send: Send, start: float) -> None:
        caller = self.caller
        answer: Answer | None = None
        error: str | None = None
        for attempt in range(1, caller.retry.max_attempts + 1):
            record.attempts = attempt
            answer = None
            sent = await caller.acquire()
            try:
                answer = await caller.post(payload)
            except _RETRYABLE_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                caller.signal(sent, None, None, exc)
            finally:
                caller.release()
            if answer is None:
                if attempt < caller.retry.max_attempts:
                    await caller.backoff(attempt, None, error or "upstream unreachable")
                    continue
                break
            caller.signal(sent, answer.status_code, answer.retry_after, None)
            if answer.status_code in RETRYABLE_STATUSES and attempt < caller.retry.max_attempts:
                await caller.backoff(attempt, answer.retry_after, f"HTTP {answer.status_code}")
                continue
            break
        if answer is None:
            record.error = error or "upstream unreachable"
            await send_error(send, 502, self._relayed(record), "upstream_error")
            return
        record.status_code = answer.status_code
        record.first_byte_ms = (time.perf_counter() - start) * 1000
        content = answer.content
        if answer.status_code == 200:
            with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
                record.absorb_response(json.loads(content))
        else:
            record.error = f"HTTP {answer.status_code}"
        content_type = (answer.content_type or "application/json").encode()
        await send(
            {
                "type": "http.response.start",
                "status": answer.status_code,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    async def _forward_stream(
        self, payload: bytes, record: CallRecord, send: Send, start: float
    ) -> None:
        caller = self.caller
        client = caller.client()
        error: str | None = None
        for attempt in range(1, caller.retry.max_attempts + 1):
            record.attempts = attempt
            request = client.build_request(
                "POST", self.upstream.chat_completions_url, content=payload
            )
            sent = await caller.acquire()
            try:
                response = await client.send(request, stream=True)
            except BaseException as exc:
                caller.release()
                if not isinstance(exc, _RETRYABLE_ERRORS):
                    raise
                error = f"{type(exc).__name__}: {exc}"
                caller.signal(sent, None, None, exc)
                if attempt < caller.retry.max_attempts:
                    await caller.backoff(attempt, None, error)
                    continue
                break
            caller.signal(sent, response.status_code, response.headers.get("retry-after"), None)
            retry = (
                response.status_code in RETRYABLE_STATUSES and attempt < caller.retry.max_attempts
            )
            try:
                if not retry:  # the upstream is busy until the stream ends: keep the slot
                    await self._pass_through(response, record, send, start)
                    return
                await response.aread()
            finally:
                await response.aclose()
                caller.release()
            await caller.backoff(
                attempt, response.headers.get("retry-after"), f"HTTP {response.status_code}"
            )
        record.error = error or "upstream unreachable"
        await send_error(send, 502, self._relayed(record), "upstream_error")

    def _relayed(self, record: CallRecord) -> str:
        """The error a rollout sees when the upstream failed: it names the user's model
        endpoint (credentials masked), not this proxy."""
        return (
            f"the model endpoint {self.upstream.display_url} failed after {record.attempts} "
            f"attempt(s): {record.error}"
        )

    async def preflight(self) -> tuple[int | None, str]:
        """One tiny completion, straight to the upstream (see :meth:`UpstreamCaller.preflight`)."""
        return await self.caller.preflight()

    def public_text(self, text: str, rollout_id: str) -> str:
        """``text`` with this proxy's route for ``rollout_id`` replaced by the upstream URL.

        Why: a rollout's error often quotes the URL it called (``httpx`` does), which is the
        proxy's loopback route; the user knows the model endpoint, not our port.
        """
        return public_text(text, self.base_url, rollout_id, self.upstream.display_url)

    async def _pass_through(
        self, response: httpx.Response, record: CallRecord, send: Send, start: float
    ) -> None:
        record.status_code = response.status_code
        content_type = response.headers.get("content-type", "text/event-stream").encode()
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(b"content-type", content_type), (b"cache-control", b"no-cache")],
            }
        )
        watcher = SSEWatcher(record) if response.status_code == 200 else None
        if watcher is None:
            record.error = f"HTTP {response.status_code}"
        # Passed on as it came, a stream the server broke off would read to the rollout as a
        # complete (often empty) reply, graded as if the model said it; an error event in OpenAI's
        # shape makes the client raise instead (openai: APIError), so the row fails as http_error.
        broken: str | None = None
        try:
            async for chunk in response.aiter_raw():
                if record.first_byte_ms is None:
                    record.first_byte_ms = (time.perf_counter() - start) * 1000
                if watcher is not None:
                    watcher.feed(chunk)
                    if watcher.done and record.finish_reason is None:
                        # [DONE] with no finish_reason: the generation failed (llama.cpp's server
                        # does this when it raises mid-stream); the error goes in its place.
                        broken = "the stream ended with no finish_reason"
                        chunk = _DONE.sub(_stream_error_data(broken), chunk, count=1)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if broken is not None:
                    break
            ended = "the stream ended with no finish_reason and no [DONE]"
        except httpx.HTTPError as exc:
            ended = f"stream interrupted: {type(exc).__name__}"
        if watcher is not None and broken is None and not watcher.finished:
            broken = ended
            body = b"\n\n" + _stream_error_data(broken) + b"\n\n"
            await send({"type": "http.response.body", "body": body, "more_body": True})
        if broken is not None:
            record.error = broken
        await send({"type": "http.response.body", "body": b"", "more_body": False})


#: The SSE line that ends an OpenAI-style stream.
_DONE = re.compile(rb"data:[ \t]*\[DONE\]")


def _stream_error_data(reason: str) -> bytes:
    """The SSE ``data:`` line that tells the client its stream broke upstream (OpenAI's error
    shape)."""
    error = {
        "message": f"the model server's response stream broke off ({reason}); its own log says why",
        "type": "upstream_stream_interrupted",
    }
    return b"data: " + json.dumps({"error": error}).encode()
