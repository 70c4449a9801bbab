"""``create_rollout_server``: the HTTP face of a rollout backend.

Speaks both generations of the public protocol on one app: 0.3.8 polling (``POST /rollout``
answers 202 with a lease; ``GET /rollout/{id}/result`` long-polls) and, when a request carries
``completion_callback_url``, 0.3.0 callbacks. The handlers are deliberately thin: bodies are
validated with the request model's compiled validator directly from bytes and responses are
pre-encoded JSON bytes, so a no-op rollout costs well under a millisecond of server CPU. All
state lives in :class:`~osmosis_ai.rollout.server._impl.service.RolloutService`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from osmosis_ai._util.asgi import BodyTooLarge, read_body, send_json
from osmosis_ai.rollout.backend.base import ExecutionBackend
from osmosis_ai.rollout.server._impl import compat, protocol_process, wire
from osmosis_ai.rollout.server._impl.agent_loop import entered_on
from osmosis_ai.rollout.server._impl.auth import (
    expected_authorization,
    is_authorized,
    resolve_api_key,
    send_unauthorized,
)
from osmosis_ai.rollout.server._impl.fastpath import (
    FastRoutes,
    result_route_id,
    too_large_body,
    validation_body,
)
from osmosis_ai.rollout.server._impl.heap import freeze_long_lived, space_full_collections
from osmosis_ai.rollout.server._impl.openapi import install_openapi
from osmosis_ai.rollout.server._impl.service import RolloutService
from osmosis_ai.rollout.server._impl.settings import (
    DEFAULT_POLLING_LEASE_TIMEOUT_SEC,
    DEFAULT_RESULT_RETENTION_SEC,
    DEFAULT_RESULT_WAIT_TIMEOUT_SEC,
    SERVER_KEYWORDS,
    ServerSettings,
)
from osmosis_ai.rollout.types.protocol import (
    POLLING_LEASE_HEADER,
    CancelRolloutsRequest,
    CancelRolloutsResponse,
    RolloutInitResponse,
    RolloutResultResponse,
    RolloutStatusResponse,
)

__all__ = [
    "DEFAULT_POLLING_LEASE_TIMEOUT_SEC",
    "DEFAULT_RESULT_RETENTION_SEC",
    "DEFAULT_RESULT_WAIT_TIMEOUT_SEC",
    "POLLING_LEASE_HEADER",
    "create_rollout_server",
]

logger = logging.getLogger("osmosis_ai.rollout.server")

_JSON = "application/json"
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]
# The keyword defaults below are ServerSettings' own (one list of defaults; a core test checks
# that the keywords and ServerSettings' fields agree, names and defaults).
_DEFAULTS = ServerSettings()


def create_rollout_server(
    *,
    backend: ExecutionBackend,
    lifespan: Lifespan | None = None,
    configure_logging: bool = True,
    result_wait_timeout_sec: float = _DEFAULTS.result_wait_timeout_sec,
    polling_lease_timeout_sec: float = _DEFAULTS.polling_lease_timeout_sec,
    result_retention_sec: float = _DEFAULTS.result_retention_sec,
    api_key: str | None = None,
    max_body_bytes: int = _DEFAULTS.max_body_bytes,
    max_retained_results: int = _DEFAULTS.max_retained_results,
    max_retained_bytes: int = _DEFAULTS.max_retained_bytes,
    callback_retry_budget_sec: float = _DEFAULTS.callback_retry_budget_sec,
    callback_backoff_initial_sec: float = _DEFAULTS.callback_backoff_initial_sec,
    callback_backoff_max_sec: float = _DEFAULTS.callback_backoff_max_sec,
    callback_timeout_sec: float = _DEFAULTS.callback_timeout_sec,
    drain_grace_sec: float = _DEFAULTS.drain_grace_sec,
    cancel_cleanup_sec: float = _DEFAULTS.cancel_cleanup_sec,
    outbox_dir: str | Path | None = _DEFAULTS.outbox_dir,
    save_trajectories: bool = _DEFAULTS.save_trajectories,
    protocol_thread: bool = _DEFAULTS.protocol_thread,
    worker_nice: int | None = _DEFAULTS.worker_nice,
) -> FastAPI:
    """Build the rollout server for ``backend``.

    Args:
        backend: runs the rollouts.
        lifespan: the caller's own lifespan (``lifespan(app)`` returning an async context
            manager); it is entered first and exited last, after the server has drained.
        configure_logging: install an INFO ``basicConfig`` if the root logger has no handlers.
        result_wait_timeout_sec: how long one ``GET /rollout/{id}/result`` waits for a change.
        polling_lease_timeout_sec: a rollout nobody has polled for this long is failed with
            ``lease_expired`` and cancelled; must exceed ``result_wait_timeout_sec``.
        result_retention_sec: how long a finished result stays fetchable (and its id reserved).
        api_key: require ``Authorization: Bearer <api_key>`` on every route; defaults to env
            ``OSMOSIS_ROLLOUT_API_KEY``; ``None`` and no env means no inbound auth.
        max_body_bytes: larger request bodies get 413.
        max_retained_results: retention is also bounded by count (oldest evicted first), so
            memory stays flat under sustained load.
        max_retained_bytes: and by the bytes of the retained results (default 1 GiB).
        callback_retry_budget_sec: how long a 0.3.0 callback is retried before it is parked in
            the outbox; ``callback_backoff_*`` shape the schedule.
        drain_grace_sec: at shutdown, in-flight rollouts get this long to finish before they are
            cancelled; ``cancel_cleanup_sec`` is how long cancelled rollouts get to unwind.
        outbox_dir: this server's outbox (the journal that makes admissions and results
            crash-safe); else ``OSMOSIS_ROLLOUT_OUTBOX_DIR``, else a per-server folder under
            ``<home>.outbox/`` (see docs/operations.md).
        save_trajectories: write an ATIF trajectory for every finished rollout.
        protocol_thread: under ``serve()`` in one process, answer HTTP (admission, polls,
            results, health) from a thread with its own event loop while rollouts run on the
            main thread's loop, so busy agents never delay the protocol; ``False``: one loop.
        worker_nice: with ``serve(app, workers=N)``, how much lower the worker processes' CPU
            priority is than the server's (0-19), so the protocol process runs first when agent
            work keeps every core busy; ``None``: ``OSMOSIS_ROLLOUT_WORKER_NICE``, else 5.
    """
    given = locals()  # first statement: exactly the arguments
    settings = ServerSettings(**{name: given[name] for name in SERVER_KEYWORDS})
    key = resolve_api_key(api_key)
    if not isinstance(backend, ExecutionBackend):
        raise TypeError(
            f"backend must be an ExecutionBackend (for example LocalBackend), got "
            f"{type(backend).__name__}"
        )
    if configure_logging and not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO)

    return _build_app(RolloutService(backend, settings), lifespan, key)


def _build_app(service: RolloutService, lifespan: Lifespan | None, key: str | None) -> FastAPI:
    app = RolloutServerApp(title="osmosis rollout server", lifespan=_server_lifespan(service))
    install_openapi(app)
    service.caller_lifespan = lifespan
    app.state.rollout_service = service
    setattr(app.state, compat.LEGACY_STATE_ATTRIBUTE, service)  # 0.3.8's name for it
    max_body_bytes = service.settings.max_body_bytes
    fast = FastRoutes(service, max_body_bytes)
    app.configure_fast_path(fast, expected_authorization(key) if key is not None else None)
    _install_routes(app, service, fast, max_body_bytes)
    # What this function built: ``serve`` forks the protocol off only for an app the caller
    # has not added routes or middleware to (those could read the agent process's state).
    app.state.osmosis_built_shape = protocol_process.app_shape(app)
    return app


def _server_lifespan(service: RolloutService) -> Lifespan:
    """The app's lifespan: the caller's ``lifespan`` outermost, then the service's start/stop."""

    @asynccontextmanager
    async def _lifespan(app: FastAPI) -> AsyncIterator[Any]:
        async with AsyncExitStack() as stack:
            state = None
            # On the loop the rollouts run on (see _impl.agent_loop); in the agent process
            # when the protocol has a process of its own (``caller_lifespan`` is None here).
            lifespan = service.caller_lifespan
            if lifespan is not None:
                state = await stack.enter_async_context(entered_on(service.agent, lifespan(app)))
            await service.start()
            freeze_long_lived()  # full GCs skip start-up state (see _impl.heap)
            space_full_collections()  # and run rarely: they find next to nothing (see _impl.heap)
            try:
                yield state
            finally:
                await service.shutdown()

    return _lifespan


def _install_routes(
    app: FastAPI, service: RolloutService, fast: FastRoutes, max_body_bytes: int
) -> None:
    """The documented routes (OpenAPI); the hot ones run through ``fast`` (see FastRoutes)."""

    @app.post(
        "/rollout",
        status_code=202,
        response_model=None,
        responses={202: {"model": RolloutInitResponse}},
        summary="Admit one rollout (RolloutInitRequest body)",
    )
    async def post_rollout(request: Request) -> Response:
        return await _buffered(request, fast.post_rollout)

    @app.get(
        "/rollout/{rollout_id}/result",
        response_model=None,
        responses={200: {"model": RolloutResultResponse}},
        summary="Long-poll a rollout's result (needs the X-Osmosis-Rollout-Lease header)",
    )
    async def get_result(rollout_id: str, request: Request) -> Response:
        async def handler(scope: Scope, receive: Receive, send: Send) -> None:
            await fast.get_result(scope, send, rollout_id)

        return await _buffered(request, handler)

    @app.post(
        "/rollout/cancel",
        response_model=None,
        responses={200: {"model": CancelRolloutsResponse}},
        summary="Cancel rollouts by ids, prefix or all (CancelRolloutsRequest body)",
    )
    async def cancel(request: Request) -> Response:
        try:
            body = await read_body(request.receive, scope=request.scope, limit=max_body_bytes)
        except BodyTooLarge:
            return Response(too_large_body(max_body_bytes), status_code=413, media_type=_JSON)
        try:
            selector = CancelRolloutsRequest.model_validate_json(body)
        except ValidationError as exc:
            return Response(validation_body(exc), status_code=422, media_type=_JSON)
        ids = service.select(selector.ids, selector.prefix, selector.all)
        return _json_response(200, {"dispositions": service.cancel(ids)})

    @app.get(
        "/rollout/{rollout_id}/status",
        response_model=None,
        responses={200: {"model": RolloutStatusResponse}},
        summary=compat.STATUS_ROUTE_SUMMARY,
    )
    async def status(rollout_id: str) -> Response:
        return _json_response(200, service.status_of(rollout_id))

    @app.get("/health", response_model=None, summary="Backend health plus lifecycle identity")
    async def health() -> Response:
        return _json_response(
            200,
            service.health(),
            {
                "x-osmosis-rollout-instance-id": service.instance_id,
                "x-osmosis-rollout-sdk-version": _sdk_version(),
            },
        )


class RolloutServerApp(FastAPI):
    """The rollout server's FastAPI app, with a fast lane in front of the middleware stack.

    Inbound auth is checked here for every HTTP request (so it precedes everything, body
    validation included), then the two hot routes are served by :class:`FastRoutes` directly;
    everything else (cancel, status, health, docs) takes the normal FastAPI path.
    """

    _fast: FastRoutes | None = None
    _authorization: bytes | None = None

    def configure_fast_path(self, fast: FastRoutes, authorization: bytes | None) -> None:
        self._fast = fast
        self._authorization = authorization

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            expected = self._authorization
            if expected is not None and not is_authorized(scope, expected):
                await send_unauthorized(send)
                return
            fast = self._fast
            if fast is not None:
                method, path = scope["method"], scope["path"]
                if method == "POST" and path == "/rollout":
                    await _guarded(fast.post_rollout(scope, receive, send), send, scope)
                    return
                if method == "GET" and (rollout_id := result_route_id(path)) is not None:
                    await _guarded(fast.get_result(scope, send, rollout_id), send, scope)
                    return
        await super().__call__(scope, receive, send)


async def _guarded(handler: Coroutine[Any, Any, None], send: Send, scope: Scope) -> None:
    """Run a fast-lane handler; an unexpected error becomes a 500, as it would in FastAPI."""
    try:
        await handler
    except Exception:
        # %r: a decoded path may hold control characters (%0A), which must not forge log lines.
        logger.exception("unexpected error serving %s %r", scope["method"], scope["path"])
        with contextlib.suppress(Exception):  # the response may have started already
            await send_json(send, 500, b'{"detail":"Internal Server Error"}')


async def _buffered(
    request: Request, handler: Callable[[Scope, Receive, Send], Awaitable[None]]
) -> Response:
    """Serve a fast-lane handler through FastAPI (reached only when the app is mounted under a
    prefix, where the fast lane's exact path match does not apply)."""
    messages: list[Message] = []

    async def send(message: Message) -> None:
        messages.append(message)

    await handler(request.scope, request.receive, send)
    start, body = messages[0], messages[1]
    headers = {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in start["headers"]
        if k not in (b"content-length", b"content-type")
    }
    return Response(body["body"], status_code=start["status"], media_type=_JSON, headers=headers)


def _json_response(
    status_code: int, payload: Any, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        wire.encode_json(payload), status_code=status_code, media_type=_JSON, headers=headers
    )


def _sdk_version() -> str:
    from osmosis_ai.versions import sdk_version

    return sdk_version()
