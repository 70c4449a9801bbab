"""The one policy layer every agent-framework integration adapts.

A framework integration (Strands, OpenAI Agents, the next one) calls the policy being trained,
i.e. the active rollout's ``chat_completions_url``, through the ``openai`` client. Everything
about that call that does not depend on the framework lives here:

* :func:`bind_policy` — one call's binding to the active rollout (its context, its policy client
  and the endpoint its errors name), :func:`policy_model_name` the checked constructor options
  every framework model takes (model name, ``timeout``, ``max_retries``);
* :func:`require_active_rollout` — the ambient :class:`~osmosis_ai.rollout.RolloutContext`, or a
  :class:`~osmosis_ai.errors.NoActiveRolloutError` saying how to run the code inside a rollout;
* :func:`policy_client` — an ``openai.AsyncOpenAI`` addressed at one rollout's endpoint. There is
  one base client per running event loop (building one costs ~20 ms of CPU, and an HTTP pool must
  never be used from two loops); each rollout gets a memoised ``with_options(base_url, api_key)``
  copy sharing that pool. Every request's messages go out as :func:`strict_chat_messages`
  shapes them (the client's ``_prepare_options`` hook, as ``AzureOpenAI`` uses it), so every
  integration and hand-written loop meets strict servers the same way. Header hygiene: the
  base client never sends the user's
  ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID`` (``OpenAI-Organization`` / ``OpenAI-Project``
  headers), nor ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL``, to the policy;
  :func:`sync_policy_client` builds a blocking ``openai.OpenAI`` with the same hygiene;
* :func:`translate_policy_error` — ``openai`` and transport failures become
  :class:`~osmosis_ai.errors.PolicyHTTPError` (``http_error``) or
  :class:`~osmosis_ai.errors.PolicyTimeoutError` (``timeout``) with status, body excerpt and URL,
  so a failing policy is an infrastructure failure, never reward 0;
* what never reached the policy server's code is retried, nothing else: a connect that times
  out or is refused, and a request whose connection was *reset* (ECONNRESET) before any byte of
  a response arrived (see :func:`_connect_retrying_transport` for why a reset means the server
  process never read it). The pooled transport retries them with
  :class:`~osmosis_ai._util.backoff.Backoff` delays for up to
  :data:`POLICY_CONNECT_RETRY_BUDGET_SEC` (the rollout's own deadline cancels it sooner). A
  connection closed without an answer (FIN), any response byte, a timeout waiting for the
  answer and every status code are not retried (the policy may have read the request);
* :func:`strict_chat_messages` — the request's messages in the shape strict OpenAI-compatible
  servers accept (llama.cpp's server, vLLM's validation): text-only content as a string;
* :func:`usage_dict` and :class:`PolicyCall` — one usage normaliser and one per-call record (the
  serving model and token usage the trajectory needs on each assistant message);
  :class:`CallObserver` fills a record from chat-completions responses or stream chunks;
* :func:`restore_tool_arguments` — earlier tool calls' arguments sent back exactly as the policy
  wrote them (frameworks re-render parsed arguments with ``json.dumps``);
* :func:`run_blocking` — a framework's blocking API on top of the async policy client.

``openai`` is imported inside functions only: this module is cheap to import, and core does not
depend on ``openai`` (each integration distribution does).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import threading
import time
import weakref
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

from osmosis_ai._util.backoff import Backoff
from osmosis_ai._util.connection_resets import Exchange, current_exchange, observe_resets
from osmosis_ai.errors import (
    ConfigurationError,
    NoActiveRolloutError,
    PolicyHTTPError,
    PolicyTimeoutError,
)
from osmosis_ai.rollout.context import RolloutContext, get_rollout_context
from osmosis_ai.rollout.policy_messages import (  # the request shape, usage, call records
    CallObserver,
    PolicyCall,
    restore_tool_arguments,
    strict_chat_messages,
    usage_dict,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = [
    "NO_API_KEY",
    "CallObserver",
    "PolicyBinding",
    "PolicyCall",
    "aclose_policy_clients",
    "bind_policy",
    "policy_client",
    "policy_model_name",
    "public_url",
    "require_active_rollout",
    "restore_tool_arguments",
    "run_blocking",
    "strict_chat_messages",
    "sync_policy_client",
    "translate_policy_error",
    "translating_policy_errors",
    "usage_dict",
]

# Sent as the bearer token when the rollout has no API key (vLLM's convention for "no key").
NO_API_KEY = "EMPTY"
# The base client is never used directly: every call goes through a per-rollout copy.
_UNBOUND_URL = "http://127.0.0.1:9/osmosis-unbound"
# Per-rollout copies kept per loop; the oldest are dropped beyond this many.
MAX_CACHED_ROLLOUT_CLIENTS = 1024
#: A policy connection idle this long is closed rather than reused. Below the 5 s keep-alive of
#: uvicorn-based inference servers (vLLM's ``TIMEOUT_KEEP_ALIVE``, uvicorn's default): with
#: openai's own 5 s, a call could go out on a connection the server was closing at that moment,
#: and fail as a transport error (calls are not retried: a retried generation could reach the
#: trainer twice). Reopening a connection idle for 4-5 s costs one TCP connect.
POLICY_KEEPALIVE_EXPIRY_SEC = 4.0
#: How long connection establishment to the policy is retried (connect timeouts and refusals:
#: the request never left), counted from the first attempt. A policy server restarting, or a
#: protocol process waiting for a CPU while workers saturate every core, recovers well within it;
#: the rollout's ``agent_timeout_sec`` still bounds the whole call.
POLICY_CONNECT_RETRY_BUDGET_SEC = 30.0
#: The delays between those attempts (THE backoff: equal jitter).
POLICY_CONNECT_BACKOFF = Backoff(initial=0.2, cap=3.0)
_BODY_EXCERPT_CHARS = 500
# Top-level modules whose exceptions mean "the HTTP exchange with the policy failed" (the openai
# client lets raw transport errors through mid-stream).
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "h11", "anyio"})

_HOW_TO_RUN = (
    "Run the workflow through osmosis: in tests with `await osmosis_ai.testing.run_rollout(...)` "
    "against a `ScriptedPolicyServer`, in a rollout server with "
    "`create_rollout_server(backend=LocalBackend(...))`, or enter "
    "`with RolloutContext(chat_completions_url=..., api_key=...):` around the call yourself "
    "(inside a sandbox the OSMOSIS_CHAT_COMPLETIONS_URL and OSMOSIS_API_KEY environment "
    "variables provide it)."
)


# -- the active rollout ----------------------------------------------------------------------


def require_active_rollout(caller: str = "OsmosisRolloutModel") -> RolloutContext:
    """The active rollout's context; raises :class:`NoActiveRolloutError` when there is none.

    ``caller`` names what needs the rollout, for the message (e.g. ``"OsmosisRolloutModel"``).
    A context without a ``chat_completions_url`` is refused too: there is no policy to call.
    """
    ctx = get_rollout_context()
    if ctx is None:
        raise NoActiveRolloutError(
            f"{caller} was called outside a rollout: it sends each request to the policy of the "
            "rollout being executed, and no RolloutContext is active. " + _HOW_TO_RUN
        )
    if not ctx.chat_completions_url:
        raise NoActiveRolloutError(
            f"{caller}: the active rollout {ctx.rollout_id or '(no id)'!r} has no "
            "chat_completions_url, so there is no policy to call. Set it on the RolloutContext "
            "or in the OSMOSIS_CHAT_COMPLETIONS_URL environment variable. " + _HOW_TO_RUN
        )
    return ctx


def policy_model_name(
    name: Any,
    *,
    timeout: float | None = None,
    max_retries: int = 0,
    caller: str = "OsmosisRolloutModel",
    argument: str = "model",
) -> str:
    """The model name a framework model sends on the wire, its options checked.

    A LiteLLM-style ``"openai/"`` prefix (the public osmosis-ai SDK's convention) is dropped.
    Raises :class:`~osmosis_ai.errors.ConfigurationError` for an empty name, a negative
    ``max_retries`` or a ``timeout`` that is not a positive number of seconds.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"{caller}({argument}=...) must be a non-empty model name; got {name!r}"
        )
    if max_retries < 0:
        raise ConfigurationError(f"max_retries must be >= 0; got {max_retries}")
    if timeout is not None and not timeout > 0:
        raise ConfigurationError(f"timeout must be a positive number of seconds; got {timeout}")
    return name.removeprefix("openai/")


@dataclass(frozen=True, slots=True)
class PolicyBinding:
    """One framework call bound to the active rollout: its context, the policy client for its
    endpoint and the rollout's ``chat_completions_url`` (``url``)."""

    context: RolloutContext
    client: AsyncOpenAI
    url: str

    @property
    def endpoint(self) -> str:
        """The chat-completions endpoint, as failed calls name it."""
        return self.url.rstrip("/") + "/chat/completions"


def bind_policy(
    caller: str = "OsmosisRolloutModel", *, timeout: float | None = None, max_retries: int = 0
) -> PolicyBinding:
    """:func:`require_active_rollout` and its :func:`policy_client`, for one call; must be
    called inside the event loop that makes the call."""
    ctx = require_active_rollout(caller)
    url = ctx.chat_completions_url or ""
    client = policy_client(url, ctx.api_key, timeout=timeout, max_retries=max_retries)
    return PolicyBinding(ctx, client, url)


# -- clients -----------------------------------------------------------------------------------

type _CopyKey = tuple[str, str, float | None, int]


class _LoopClients:
    """The base client of one event loop and its memoised per-rollout copies."""

    __slots__ = ("base", "copies")

    def __init__(self, base: AsyncOpenAI) -> None:
        self.base = base
        self.copies: dict[_CopyKey, AsyncOpenAI] = {}


_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)


def _hygienic_headers() -> dict[str, str]:
    """Headers that drop ``OpenAI-Organization`` / ``OpenAI-Project``.

    The ``openai`` clients fill these from OPENAI_ORG_ID / OPENAI_PROJECT_ID; they identify the
    user's OpenAI account and must never reach the policy. ``Omit`` removes a header (openai's
    documented idiom; the annotation says ``str`` only). ``with_options`` copies keep it.
    """
    from openai import Omit

    return cast("dict[str, str]", {"OpenAI-Organization": Omit(), "OpenAI-Project": Omit()})


def _new_base_client() -> AsyncOpenAI:
    from openai import DEFAULT_CONNECTION_LIMITS, DefaultAsyncHttpxClient

    # openai keeps at most 100 idle connections of its 1000: with more policy calls than that in
    # flight on one loop (hundreds of rollouts per server or worker), every call beyond them
    # opened a new connection and closed it after the answer. Each connect is CPU for both
    # ends, and it has openai's 5 s connect timeout: on a loop busy with agent work the
    # connection's completion is seen late, and the rollout failed with a policy timeout
    # although the policy was never slow. Every connection is kept open for reuse instead.
    # (The limits type of whichever HTTP library this openai is built on: httpx or httpx2.)
    connections = DEFAULT_CONNECTION_LIMITS.max_connections
    limits = type(DEFAULT_CONNECTION_LIMITS)(
        max_connections=connections,
        max_keepalive_connections=connections,
        keepalive_expiry=POLICY_KEEPALIVE_EXPIRY_SEC,
    )
    http = importlib.import_module(type(DEFAULT_CONNECTION_LIMITS).__module__.split(".", 1)[0])
    transport = _connect_retrying_transport(http, http.AsyncHTTPTransport(limits=limits))
    return _strict_clients()[1](
        # Explicit values so OPENAI_API_KEY / OPENAI_BASE_URL from the environment are never used.
        api_key=NO_API_KEY,
        base_url=_UNBOUND_URL,
        max_retries=0,
        # An explicit HTTP client (openai's defaults): the one AsyncOpenAI would build schedules
        # ``aclose()`` from a finalizer on whatever loop runs at garbage collection, which fails
        # noisily once this client's own loop has closed.
        http_client=DefaultAsyncHttpxClient(limits=limits, transport=transport),
        default_headers=_hygienic_headers(),
    )


async def _sleep(seconds: float) -> None:
    """The wait between connection attempts (a seam: tests act at each retry)."""
    await asyncio.sleep(seconds)


def _connect_retrying_transport(http: Any, inner: Any) -> Any:
    """``inner`` (an ``AsyncHTTPTransport`` of ``http``: httpx or httpx2) with the requests that
    never reached the policy server's code retried.

    Retried (the request body is bytes: openai serialises JSON, so sending it again is safe):

    * ``ConnectError`` / ``ConnectTimeout``: the connection pool raises them before any byte of
      the request was written, so the policy never saw it;
    * a ``ReadError`` / ``WriteError`` whose connection was **reset** (ECONNRESET: the peer's
      kernel answered RST) before any byte of a response arrived, on a connection opened for
      this request or on a reused keep-alive one.

    Why a reset before any response byte is safe: a server process that read the request and
    then failed closes its socket, and the kernel sends FIN (the client sees an empty reply:
    ``RemoteProtocolError``, never retried); a kernel sends RST for a connection whose process
    never took the request: the handshake completed on the client's side while the listener's
    accept queue was full (with SYN cookies, the connection exists only on the client until the
    server's kernel, receiving the request, finds no state for it and resets:
    ``TcpExtSyncookiesFailed``), a keep-alive connection the server closed as the request
    arrived, or a process that closed or died with the request unread in its receive buffer.
    Measured through ``benchmarks/slow_accept.py`` (512 clients, backlog 16, accept loop
    stalled 6 s in 15): every such failure was on a fresh connection, the request sent, no
    response byte, and the kernel counted as many ``TcpExtSyncookiesFailed`` and
    ``TcpEstabResets``. So what a training cluster's policy server sees from a retry is at most
    a request its kernel discarded unread. The exception: a proxy in front of the policy that
    resets the client's connection after its upstream read the request (an abort with
    ``SO_LINGER`` 0) would have that request retried; plain HTTP servers and kernels do not.

    Not retried: a connection closed without an answer (FIN), anything after the first response
    byte, a read timeout, every status code (a retried generation could reach the trainer
    twice).
    """
    observed = observe_resets(inner)
    unsent = (http.ConnectError, http.ConnectTimeout)
    reset_kinds = (http.ReadError, http.WriteError)

    class ConnectRetryingTransport(http.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            started = time.monotonic()
            retry = resets = 0
            while True:
                exchange = Exchange()
                token = current_exchange.set(exchange)
                try:
                    return await self.inner.handle_async_request(request)
                except (*unsent, *reset_kinds) as exc:
                    reset = (
                        observed
                        and isinstance(exc, reset_kinds)
                        and exchange.reset
                        and exchange.received == 0
                    )
                    if not (reset or isinstance(exc, unsent)):
                        raise
                    retry += 1
                    resets += reset
                    delay = POLICY_CONNECT_BACKOFF.delay(retry)
                    spent = time.monotonic() - started
                    if spent + delay > POLICY_CONNECT_RETRY_BUDGET_SEC:
                        exc.args = (
                            f"{exc} (after {retry} connection attempt(s), {resets} reset before "
                            f"any response byte, {spent:.1f}s)",
                        )
                        raise
                    await _sleep(delay)
                finally:
                    current_exchange.reset(token)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return ConnectRetryingTransport()


def sync_policy_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float | None = None,
    max_retries: int = 0,
) -> OpenAI:
    """A new blocking ``openai.OpenAI`` for one policy endpoint, with the same header hygiene.

    Not pooled (a thread may not share an event loop's pool); the caller closes it.
    """
    options: dict[str, Any] = {}
    if timeout is not None:
        options["timeout"] = timeout
    return _strict_clients()[0](
        api_key=api_key or NO_API_KEY,
        base_url=base_url,
        max_retries=max_retries,
        default_headers=_hygienic_headers(),
        **options,
    )


@functools.cache
def _strict_clients() -> tuple[type[OpenAI], type[AsyncOpenAI]]:
    """``OpenAI`` and ``AsyncOpenAI`` that send chat messages as :func:`strict_chat_messages`
    shapes them (``with_options`` copies keep the class)."""
    from openai import AsyncOpenAI, OpenAI

    def strict(options: Any) -> Any:
        data = getattr(options, "json_data", None)
        if isinstance(data, Mapping) and str(getattr(options, "url", "")).endswith(
            "/chat/completions"
        ):
            messages = cast("Mapping[str, Any]", data).get("messages")
            shaped = strict_chat_messages(messages)
            if shaped is not messages:
                options.json_data = {**cast("Mapping[str, Any]", data), "messages": shaped}
        return options

    class StrictOpenAI(OpenAI):
        def _prepare_options(self, options: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
            return strict(super()._prepare_options(options))

    class StrictAsyncOpenAI(AsyncOpenAI):
        async def _prepare_options(self, options: Any) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
            return strict(await super()._prepare_options(options))

    return StrictOpenAI, StrictAsyncOpenAI


def _loop_clients() -> _LoopClients:
    loop = asyncio.get_running_loop()
    entry = _clients.get(loop)
    if entry is None:
        with _lock:
            entry = _clients.get(loop)
            if entry is None:
                entry = _clients[loop] = _LoopClients(_new_base_client())
    return entry


def policy_client(
    base_url: str,
    api_key: str | None,
    *,
    timeout: float | None = None,
    max_retries: int = 0,
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` bound to one policy endpoint, sharing the running loop's pool.

    ``max_retries`` defaults to 0: the trainer's endpoint records every request it serves, so a
    silent retry could give one turn two generations; a failed call fails the rollout as
    ``http_error`` and the trainer decides. Must be called from inside a running event loop.
    """
    entry = _loop_clients()
    key: _CopyKey = (base_url, api_key or NO_API_KEY, timeout, max_retries)
    client = entry.copies.get(key)
    if client is not None:
        return client
    options: dict[str, Any] = {"base_url": base_url, "api_key": key[1], "max_retries": max_retries}
    if timeout is not None:
        options["timeout"] = timeout
    client = entry.base.with_options(**options)
    # Only this loop's thread touches its table, so no lock is needed here.
    if len(entry.copies) >= MAX_CACHED_ROLLOUT_CLIENTS:
        del entry.copies[next(iter(entry.copies))]
    entry.copies[key] = client
    return client


async def aclose_policy_clients() -> None:
    """Close the running loop's base client (at shutdown); the next call builds a new one."""
    loop = asyncio.get_running_loop()
    with _lock:
        entry = _clients.pop(loop, None)
    if entry is not None:
        entry.copies.clear()
        await entry.base.close()


# -- errors ------------------------------------------------------------------------------------


def public_url(url: str) -> str:
    """``url`` without credentials or query string, safe to put in an error message or log."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _body_excerpt(exc: BaseException) -> str:
    text = ""
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            text = response.text
        except Exception:  # a streamed body that was never read
            text = ""
    if not text:
        body = getattr(exc, "body", None)
        text = str(body) if body is not None else ""
    if not text:
        text = str(getattr(exc, "message", "") or exc)
    return text.strip()[:_BODY_EXCERPT_CHARS]


def translate_policy_error(exc: BaseException, url: str) -> PolicyHTTPError | None:
    """The osmosis error for a failed policy call, or ``None`` when ``exc`` is not one.

    ``openai`` errors (status, timeout, connection) and raw transport errors become
    :class:`PolicyHTTPError` / :class:`PolicyTimeoutError` carrying the status code, an excerpt
    of the body and ``url`` (credentials and query removed). An error that already is a
    ``PolicyHTTPError`` is returned as is. Anything else (the agent's own bugs, framework errors)
    gives ``None``: the caller re-raises it unchanged.
    """
    if isinstance(exc, PolicyHTTPError):
        return exc
    url = public_url(url) if url else ""
    names = {cls.__name__ for cls in type(exc).__mro__}
    module_root = type(exc).__module__.split(".", 1)[0]
    if module_root == "openai":
        if "APITimeoutError" in names:
            cause = exc.__cause__ or exc.__context__
            which = f" ({type(cause).__name__})" if cause is not None else ""
            return PolicyTimeoutError(
                None, f"the request timed out before the policy answered{which}", url
            )
        status = getattr(exc, "status_code", None)
        if "APIStatusError" in names and isinstance(status, int):
            return PolicyHTTPError(status, _body_excerpt(exc), url)
        if "APIConnectionError" in names:
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return PolicyHTTPError(None, f"could not reach the policy ({detail})", url)
        if type(exc).__name__ == "APIError":  # an error event inside a 200 stream
            return PolicyHTTPError(200, f"stream error: {exc}", url)
        return None
    if module_root in _TRANSPORT_MODULES:
        detail = f"{type(exc).__name__}: {exc}".strip()
        if "Timeout" in type(exc).__name__:
            return PolicyTimeoutError(None, f"the request timed out ({detail})", url)
        return PolicyHTTPError(None, f"transport error ({detail})", url)
    return None


@contextmanager
def translating_policy_errors(url: str, *, causes: bool = False) -> Iterator[None]:
    """Re-raise a failed policy call inside the block as :func:`translate_policy_error` says.

    Wrap the framework call that talks to the policy (it also works around ``async for`` in an
    async generator); errors that are not policy failures propagate unchanged. ``causes=True``
    also translates a framework error raised ``from`` a policy failure (the first translatable
    error of the ``__cause__`` chain), for frameworks that wrap the ``openai`` errors in their
    own (Pydantic AI's ``ModelHTTPError``).
    """
    try:
        yield
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None:
            translated = translate_policy_error(cause, url)
            if translated is not None:
                if translated is exc:
                    raise
                raise translated from exc
            cause = cause.__cause__ if causes else None
        raise


# -- blocking APIs -----------------------------------------------------------------------------


def run_blocking[T](coro: Coroutine[Any, Any, T], *, thread_name: str = "osmosis-policy-call") -> T:
    """Run ``coro`` to completion from blocking code: on a new event loop, in a thread when the
    calling thread already runs a loop. The rollout context (a ``ContextVar``) goes along, so a
    framework's blocking API (``invoke``, ``run_sync``) reaches the same rollout's policy."""
    context = contextvars.copy_context()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return context.run(asyncio.run, coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, coro)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name=thread_name)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
