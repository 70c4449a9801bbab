"""How the policy proxy calls the upstream model: its HTTP clients, the retry schedule and the
adaptive concurrency limit.

:class:`UpstreamCaller` owns what every upstream attempt needs, whatever the rollout and
whether the call streams: the client to send it on (:meth:`~UpstreamCaller.client`), a slot of
the adaptive limit (:meth:`~UpstreamCaller.acquire` / :meth:`~UpstreamCaller.release`), how the
answer moves that limit (:meth:`~UpstreamCaller.signal`) and the wait before the next attempt
(:meth:`~UpstreamCaller.backoff`, which also reports an ``upstream_retry`` event). The proxy
(:mod:`osmosis_ai.eval._impl.proxy.policy_proxy`) owns routes, call records and what the rollout is sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

import httpx

from osmosis_ai._util.backoff import parse_retry_after
from osmosis_ai.eval._impl.adaptive import CONGESTION_STATUSES, AdaptiveLimit
from osmosis_ai.eval._impl.proxy.calls import RetryPolicy
from osmosis_ai.eval._impl.proxy.upstream import Upstream

if TYPE_CHECKING:
    from osmosis_ai._util.http_transport import PlainHTTPTransport

_CONNECT_TIMEOUT_SEC = 30.0


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole upstream answer (a non-streamed call)."""

    status_code: int
    retry_after: str | None
    content_type: str | None
    content: bytes


class UpstreamCaller:
    """The upstream side of :class:`~osmosis_ai.eval._impl.proxy.policy_proxy.PolicyProxy`."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        retry: RetryPolicy | None = None,
        request_timeout_sec: float = 600.0,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
        clients: int = 16,
        limit: AdaptiveLimit | None = None,
    ) -> None:
        self.upstream = upstream
        self.retry = retry or RetryPolicy()
        #: Told about every upstream answer: 429/503/timeouts back it off, successes grow it.
        self.limit = limit
        self._timeout = request_timeout_sec
        self._on_event = on_event
        self._shards = max(1, clients)
        self._next_shard = 0
        self._clients: list[httpx.AsyncClient | None] = [None] * self._shards
        headers = {"content-type": "application/json"}
        if upstream.api_key:
            headers["authorization"] = f"Bearer {upstream.api_key}"
        self._client_headers = headers
        #: Plain-``http://`` upstreams: the lean transport and the parsed URL non-streamed
        #: calls are posted to directly (httpx's request/response models cost more CPU than
        #: the exchange on loopback).
        self._lean: tuple[PlainHTTPTransport, SplitResult] | None = None

    async def aclose(self) -> None:
        for client in self._clients:
            if client is not None:
                await client.aclose()

    def client(self) -> httpx.AsyncClient:
        """The upstream client for the next call.

        Plain-``http://`` upstreams (vLLM, SGLang, Ollama, the scripted policy) go through one
        client on :class:`~osmosis_ai._util.http_transport.PlainHTTPTransport`, a third of
        httpx's per-request CPU. TLS upstreams use httpx's transport, round-robin over small
        pools: httpcore scans its whole pool on every request, so one pool holding a
        connection per concurrent call would make each call cost O(concurrency). Clients are
        created lazily and share one TLS context (loading CA certificates is slow).
        """
        lean = self.upstream.base_url.startswith("http://")
        index = 0 if lean else self._next_shard
        if not lean:
            self._next_shard = (index + 1) % self._shards
        client = self._clients[index]
        if client is None:
            timeout = httpx.Timeout(self._timeout, connect=_CONNECT_TIMEOUT_SEC)
            if lean:
                from osmosis_ai._util.http_transport import PlainHTTPTransport

                plain = PlainHTTPTransport(max_idle_per_host=256)
                client = httpx.AsyncClient(
                    headers=self._client_headers,
                    timeout=timeout,
                    follow_redirects=False,
                    transport=plain,
                )
                url = urlsplit(self.upstream.chat_completions_url)
                if url.username is None and url.password is None:  # else httpx's basic auth
                    self._lean = (plain, url)
            else:
                from osmosis_ai._util.http_transport import shared_tls_context

                client = httpx.AsyncClient(
                    headers=self._client_headers,
                    timeout=timeout,
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
                    follow_redirects=False,
                    verify=shared_tls_context(),
                )
            self._clients[index] = client
        return client

    async def post(self, payload: bytes) -> Answer:
        """One non-streamed upstream call, read whole."""
        client = self.client()  # creates the lean transport on first use
        if self._lean is not None:
            plain, url = self._lean
            status, headers, content = await plain.request(
                "POST",
                url,
                self._client_headers,
                payload,
                self._timeout,
                connect_timeout_sec=_CONNECT_TIMEOUT_SEC,
            )
            found = dict(headers)
            retry_after, content_type = found.get(b"retry-after"), found.get(b"content-type")
            return Answer(
                status,
                None if retry_after is None else retry_after.decode("latin-1"),
                None if content_type is None else content_type.decode("latin-1"),
                content,
            )
        response = await client.post(self.upstream.chat_completions_url, content=payload)
        return Answer(
            response.status_code,
            response.headers.get("retry-after"),
            response.headers.get("content-type"),
            response.content,
        )

    async def preflight(self) -> tuple[int | None, str]:
        """One tiny completion, straight to the upstream: ``(status, body excerpt)``.

        Why: a wrong key or model name would otherwise fail every work item one by one. Only
        ``model`` and ``messages`` are sent (no ``max_tokens``: some models reject it). The
        status is ``None`` when the upstream could not be reached at all.
        """
        payload = json.dumps(
            {"model": self.upstream.model, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        try:
            response = await self.client().post(
                self.upstream.chat_completions_url, content=payload, timeout=60.0
            )
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"
        return response.status_code, response.text[:300]

    async def acquire(self) -> float:
        """A slot of the adaptive limit (when there is one) for one upstream attempt."""
        return await self.limit.acquire() if self.limit is not None else 0.0

    def release(self) -> None:
        if self.limit is not None:
            self.limit.release()

    def signal(
        self,
        sent: float,
        status: int | None,
        retry_after: str | None,
        error: BaseException | None,
    ) -> None:
        """Tell the adaptive limit how the upstream answered one attempt."""
        limit = self.limit
        if limit is None:
            return
        if status is not None and status < 400:
            limit.succeeded()
        elif status is not None and status in CONGESTION_STATUSES:
            limit.congested(sent, parse_retry_after(retry_after))
        elif isinstance(error, httpx.TimeoutException):
            limit.congested(sent, None)

    async def backoff(self, attempt: int, retry_after: str | None, reason: str) -> None:
        delay = self.retry.delay(attempt, retry_after)
        if self._on_event is not None:
            self._on_event(
                "upstream_retry",
                {"attempt": attempt, "reason": reason, "delay_sec": round(delay, 3)},
            )
        await asyncio.sleep(delay)
