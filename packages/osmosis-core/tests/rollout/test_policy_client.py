"""The core policy client: one AsyncOpenAI per loop, memoised per-rollout copies, header hygiene,
and translation of ``openai`` errors (needs ``openai``, which each integration installs)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from typing import Any

import httpx
import pytest

from osmosis_ai._util.backoff import Backoff

openai = pytest.importorskip("openai")

from osmosis_ai.errors import PolicyHTTPError, PolicyTimeoutError  # noqa: E402
from osmosis_ai.rollout import policy  # noqa: E402
from osmosis_ai.rollout.errors import categorize_exception  # noqa: E402
from osmosis_ai.rollout.types import RolloutErrorCategory  # noqa: E402
from osmosis_ai.testing import ScriptedPolicyServer  # noqa: E402

URL = "http://127.0.0.1:1/v1/rollouts/r1"


def _openai_http() -> Any:
    """The HTTP library the installed openai is built on (openai 3 uses ``httpx2``)."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return httpx


HTTP = _openai_http()


async def test_rollout_clients_are_memoised_and_share_the_loops_pool() -> None:
    first = policy.policy_client("http://127.0.0.1:1/v1/rollouts/a", "key-a")
    again = policy.policy_client("http://127.0.0.1:1/v1/rollouts/a", "key-a")
    other = policy.policy_client("http://127.0.0.1:1/v1/rollouts/b", "key-b", timeout=5.0)
    assert first is again
    assert other is not first
    assert str(other.base_url).rstrip("/").endswith("/rollouts/b")
    assert other.api_key == "key-b"
    assert first._client is other._client  # one HTTP pool per loop
    assert policy.policy_client("http://x/v1", None).api_key == policy.NO_API_KEY
    await policy.aclose_policy_clients()
    assert policy.policy_client("http://127.0.0.1:1/v1/rollouts/a", "key-a") is not first
    await policy.aclose_policy_clients()


def test_each_event_loop_gets_its_own_client() -> None:
    seen: list[object] = []

    async def client_of_this_loop() -> None:
        client = policy.policy_client(URL, "k")
        assert policy.policy_client(URL, "k") is client
        seen.append(client._client)
        await policy.aclose_policy_clients()

    asyncio.run(client_of_this_loop())
    asyncio.run(client_of_this_loop())
    assert seen[0] is not seen[1]


async def test_the_users_openai_environment_never_reaches_the_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "OPENAI_API_KEY": "sk-user-secret",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/elsewhere",
        "OPENAI_ORG_ID": "org-user",
        "OPENAI_PROJECT_ID": "proj-user",
    }.items():
        monkeypatch.setenv(name, value)
    await policy.aclose_policy_clients()  # a base client built under this environment
    async with ScriptedPolicyServer("echo") as server:
        client = policy.policy_client(server.chat_completions_url("r-env"), None)
        await client.chat.completions.create(
            model="osmosis-rollout", messages=[{"role": "user", "content": "hi"}]
        )
        (request,) = server.requests_for("r-env")
    await policy.aclose_policy_clients()
    assert "openai-organization" not in request.headers
    assert "openai-project" not in request.headers
    assert request.bearer_token == "EMPTY"
    assert "sk-user-secret" not in str(request.headers)


def _status_error(status: int, text: str) -> Any:
    request = HTTP.Request("POST", URL + "/chat/completions")
    response = HTTP.Response(status, text=text, request=request)
    return openai.APIStatusError("failed", response=response, body=None)


def test_status_errors_keep_the_status_and_a_body_excerpt() -> None:
    translated = policy.translate_policy_error(_status_error(502, "bad gateway " + "x" * 2000), URL)
    assert isinstance(translated, PolicyHTTPError)
    assert translated.status_code == 502
    assert translated.body_excerpt.startswith("bad gateway")
    assert len(translated.body_excerpt) <= 500
    assert translated.url == URL
    assert categorize_exception(translated) == RolloutErrorCategory.HTTP_ERROR


def test_openai_timeouts_and_connection_errors() -> None:
    request = HTTP.Request("POST", URL)
    timed_out = policy.translate_policy_error(openai.APITimeoutError(request=request), URL)
    assert isinstance(timed_out, PolicyTimeoutError)
    assert categorize_exception(timed_out) == RolloutErrorCategory.TIMEOUT
    unreachable = policy.translate_policy_error(openai.APIConnectionError(request=request), URL)
    assert isinstance(unreachable, PolicyHTTPError)
    assert not isinstance(unreachable, PolicyTimeoutError)
    assert "could not reach the policy" in str(unreachable)


def _client_ports(server_port: int) -> set[int]:
    """Local ports of the established TCP connections to ``server_port`` (from /proc/net/tcp)."""
    ports = set()
    with open("/proc/net/tcp") as table:
        for row in list(table)[1:]:
            local, remote, state = row.split()[1:4]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == server_port:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="counts sockets in /proc/net/tcp")
async def test_every_connection_of_a_wave_of_calls_is_kept_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More calls in flight than openai keeps idle connections (100): each connection stays open
    and the next wave reuses them (a new connection per call beyond 100 cost CPU and could hit
    the 5 s connect timeout on a busy loop).

    The keep-alive expiry is raised for this test only: the client closes a connection idle for
    longer (POLICY_KEEPALIVE_EXPIRY_SEC, 4 s, by design), and with openai 1.x-2.x on httpx a
    wave of 150 calls takes 4-8 s of CPU on a 2-core machine (request-parameter transformation
    and httpcore's pool bookkeeping, quadratic in connections), so connections idle since the
    first wave expired before the second wave reached them; that is expiry, not the pool
    dropping them.
    """
    monkeypatch.setattr(policy, "POLICY_KEEPALIVE_EXPIRY_SEC", 600.0)
    wave = 150
    arrived = 0
    everyone: asyncio.Event = asyncio.Event()

    async def held(body: dict[str, Any]) -> str:  # answers once the whole wave is in flight
        nonlocal arrived
        arrived += 1
        if arrived % wave == 0:
            everyone.set()
        await everyone.wait()
        return "ok"

    await policy.aclose_policy_clients()
    async with ScriptedPolicyServer(held) as server:
        client = policy.policy_client(server.chat_completions_url("r-pool"), None)

        async def calls() -> set[int]:
            everyone.clear()
            messages: Any = [{"role": "user", "content": "hi"}]
            await asyncio.gather(
                *(client.chat.completions.create(model="m", messages=messages) for _ in range(wave))
            )
            return _client_ports(server.port)

        first = await calls()
        second = await calls()
    await policy.aclose_policy_clients()
    assert len(first) == wave
    assert second == first


_COMPLETION = (
    b'{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}'
)


async def test_a_connection_is_not_reused_once_the_server_may_be_closing_it() -> None:
    """An inference server on uvicorn (vLLM) closes a connection idle for 5 s. A call sent on
    it just then meets the close and fails (policy calls are not retried). This server drops
    a request that arrives on a connection idle for 4.5 s or more without answering, as that
    race does; the client has closed such a connection itself and calls on a new one."""
    ports: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ports.append(writer.get_extra_info("peername")[1])
        idle_since: float | None = None
        loop = asyncio.get_running_loop()
        while head := await reader.readuntil(b"\r\n\r\n"):
            if idle_since is not None and loop.time() - idle_since >= 4.5:
                break  # closing at its keep-alive timeout: no answer
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                % len(_COMPLETION)
                + _COMPLETION
            )
            await writer.drain()
            idle_since = loop.time()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    await policy.aclose_policy_clients()
    try:
        client = policy.policy_client(f"http://127.0.0.1:{port}/r-idle/v1", None)
        messages: Any = [{"role": "user", "content": "hi"}]
        first = await client.chat.completions.create(model="m", messages=messages)
        await asyncio.sleep(4.6)
        second = await client.chat.completions.create(model="m", messages=messages)
    finally:
        await policy.aclose_policy_clients()
        server.close()
        await server.wait_closed()
    assert first.choices[0].message.content == second.choices[0].message.content == "ok"
    assert len(ports) == 2  # the idle connection was closed by the client, not reused


async def test_a_refused_connection_is_retried_until_the_policy_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The policy's port refuses connections (bound, not listening) for the first attempts, then
    a policy server listens there: the call succeeds, and the policy saw the request once (a
    connection that was never made is safe to retry)."""
    import socket

    placeholder = socket.socket()
    placeholder.bind(("127.0.0.1", 0))  # bound, never listening: connect() is refused
    port = placeholder.getsockname()[1]
    server = ScriptedPolicyServer("echo", port=port)
    waits: list[float] = []

    async def at_each_retry(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:  # two refusals so far: the policy comes up
            placeholder.close()
            await server.start()

    monkeypatch.setattr(policy, "_sleep", at_each_retry)
    await policy.aclose_policy_clients()
    try:
        client = policy.policy_client(f"http://127.0.0.1:{port}/v1/rollouts/r-late", "k")
        reply = await client.chat.completions.create(
            model="osmosis-rollout", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content
        assert len(server.requests_for("r-late")) == 1
    finally:
        placeholder.close()
        await policy.aclose_policy_clients()
        await server.stop()
    assert len(waits) == 2
    assert all(0 < wait <= policy.POLICY_CONNECT_BACKOFF.cap for wait in waits)


async def test_connection_retries_stop_at_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy that never listens: the call fails as a connection error once the budget is
    spent, naming the attempts (the rollout fails as ``http_error``, as before)."""
    import socket

    placeholder = socket.socket()
    placeholder.bind(("127.0.0.1", 0))
    port = placeholder.getsockname()[1]
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(policy, "_sleep", no_wait)
    monkeypatch.setattr(policy, "POLICY_CONNECT_RETRY_BUDGET_SEC", 1.0)
    monkeypatch.setattr(policy, "POLICY_CONNECT_BACKOFF", Backoff(0.4, jitter="none"))
    await policy.aclose_policy_clients()
    url = f"http://127.0.0.1:{port}/v1/rollouts/r-never"
    try:
        with (
            pytest.raises(PolicyHTTPError, match="could not reach the policy") as raised,
            policy.translating_policy_errors(url),
        ):
            await policy.policy_client(url, "k").chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        placeholder.close()
        await policy.aclose_policy_clients()
    assert waits
    assert waits == [0.4, 0.8][: len(waits)]  # 1.6 more would pass the 1.0 s budget
    assert "connection attempt(s)" in str(raised.value)


class _RawPolicy:
    """A policy server on a raw socket (a thread), one behaviour per connection in turn:
    ``"answer"`` reads each request and answers it (keep-alive), ``"reset-unread"`` waits until
    the request is in its receive buffer and resets the connection without reading it (RST: what
    a kernel does for a connection its process never accepted), ``"read-then-fin"`` reads the
    request and closes normally (FIN: a process that took the request and died),
    ``"head-then-reset"`` reads it, sends the first line of a response and resets, and
    ``"answer-once-then-reset-unread"`` answers one request and resets on the next."""

    def __init__(self, plan: list[str]) -> None:
        import socket
        import threading

        self.plan = plan
        self.connections = 0
        self.requests_read = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for behaviour in self.plan:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.connections += 1
            with conn:
                self._one(conn, behaviour)

    def _one(self, conn: Any, behaviour: str) -> None:
        import select
        import socket
        import struct

        def reset() -> None:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

        answers = {"answer": 1_000, "answer-once-then-reset-unread": 1}.get(behaviour, 0)
        for _ in range(answers):
            if not self._read_request(conn):
                return
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                % len(_COMPLETION)
                + _COMPLETION
            )
        if behaviour in ("reset-unread", "answer-once-then-reset-unread"):
            select.select([conn], [], [], 30)  # the request has arrived; never read
            reset()
        elif behaviour == "read-then-fin":
            self._read_request(conn)
        elif behaviour == "head-then-reset":
            self._read_request(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            reset()

    def _read_request(self, conn: Any) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return False
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:
            body += conn.recv(65536)
        self.requests_read += 1
        return True

    def close(self) -> None:
        import socket

        # close() alone does not wake a thread blocked in accept() (Linux): it waited out the
        # join's 30 s whenever the plan had an unused step. shutdown() makes accept() fail.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=30)


async def _call_raw_policy(server: _RawPolicy, calls: int = 1) -> list[str | None]:
    await policy.aclose_policy_clients()
    client = policy.policy_client(f"http://127.0.0.1:{server.port}/r-raw/v1", None)
    messages: Any = [{"role": "user", "content": "hi"}]
    try:
        return [
            (await client.chat.completions.create(model="m", messages=messages))
            .choices[0]
            .message.content
            for _ in range(calls)
        ]
    finally:
        await policy.aclose_policy_clients()


@pytest.fixture
def no_backoff_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(policy, "_sleep", record)
    return waits


async def test_a_connection_reset_before_the_request_was_read_is_retried(
    no_backoff_wait: list[float],
) -> None:
    """The first connection is reset with the request unread in the server's buffer (as the
    kernel resets a connection whose handshake its full accept queue dropped): the call is
    retried on a new connection, with the shared backoff, and the policy read one request."""
    server = _RawPolicy(["reset-unread", "answer"])
    try:
        assert await _call_raw_policy(server) == ["ok"]
    finally:
        server.close()
    assert server.connections == 2
    assert server.requests_read == 1
    assert len(no_backoff_wait) == 1
    assert 0 < no_backoff_wait[0] <= policy.POLICY_CONNECT_BACKOFF.cap


async def test_a_reused_connection_reset_before_the_request_was_read_is_retried(
    no_backoff_wait: list[float],
) -> None:
    """The classic keep-alive race: the second call goes out on the pooled connection, which the
    server resets without reading it; the call is retried on a new connection."""
    server = _RawPolicy(["answer-once-then-reset-unread", "answer"])
    try:
        assert await _call_raw_policy(server, calls=2) == ["ok", "ok"]
    finally:
        server.close()
    assert server.connections == 2
    assert server.requests_read == 2
    assert len(no_backoff_wait) == 1


@pytest.mark.parametrize("behaviour", ["read-then-fin", "head-then-reset"])
async def test_a_request_the_policy_may_have_read_is_not_retried(
    no_backoff_wait: list[float], behaviour: str
) -> None:
    """A server that read the request and closed (FIN, an empty reply), or reset after the
    first byte of its answer: the policy may have generated, so the call fails as it is."""
    server = _RawPolicy([behaviour, "answer"])
    url = f"http://127.0.0.1:{server.port}/r-raw/v1"
    try:
        with pytest.raises(PolicyHTTPError), policy.translating_policy_errors(url):
            await _call_raw_policy(server)
    finally:
        server.close()
    assert server.connections == 1
    assert server.requests_read == 1
    assert no_backoff_wait == []
