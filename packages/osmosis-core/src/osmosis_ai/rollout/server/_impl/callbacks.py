"""Delivery of 0.3.0 callbacks (completion, then grader) to the controller.

A lost callback is a lost reward, so delivery retries over a long budget (default 10 minutes,
the public SDK gave up after about 7.5 s): capped exponential backoff with jitter, on transport
errors, 408, 429 and 5xx, honouring ``Retry-After``. Any other 4xx is the controller saying the
request itself is wrong; repeating it cannot help, so it is logged with the body and dropped.
Plain ``http://`` callback URLs (the usual case: a controller on the cluster network) go through
the lean :class:`~osmosis_ai._util.http_transport.PlainHTTPTransport`; anything else
(``https://``) through one shared ``httpx.AsyncClient``. httpx is imported on the first
callback, so a poll-only server never pays for it.

**Backoff per receiver.** Once an attempt to a receiver fails, every delivery to it waits for
that receiver's backoff (grown by each failed attempt, reset by a success) and goes one at a
time, so a hung or dead receiver sees about one request per backoff step rather than one per
rollout waiting for it (16 in flight, each retried on its own, were ~1.5 requests/s for ever).

**Isolation.** A receiver that hangs must not starve the others: each attempt has one overall
deadline (``request_timeout_sec``, connect to last byte, so a receiver that trickles bytes cannot
hold a request longer), and at most ``per_receiver`` requests are in flight to one receiver
(scheme, host and port) out of ``max_in_flight`` overall. A request takes its receiver's slot
before an overall one, so requests queued behind a stuck receiver never hold the slots other
receivers need: with the defaults (16 of 64), three hung receivers still leave 16 slots free.
"""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from osmosis_ai._util.backoff import Backoff, parse_retry_after
from osmosis_ai.rollout.types.protocol import url_origin

if TYPE_CHECKING:
    import httpx

    from osmosis_ai._util.http_transport import PlainHTTPTransport

logger = logging.getLogger("osmosis_ai.rollout.server")

_RETRYABLE_STATUS = frozenset({408, 429})
_BODY_EXCERPT = 500
_MAX_IN_FLIGHT = 64
_MAX_IN_FLIGHT_PER_RECEIVER = 16
_MAX_TARGETS = 256
# A private generator: jitter must not consume (or depend on) the global random state.


class DeliveryState(enum.Enum):
    DELIVERED = "delivered"
    REJECTED = "rejected"  # a 4xx that retrying cannot fix
    EXHAUSTED = "exhausted"  # the retry budget ran out; the caller keeps it in the outbox


@dataclass(slots=True)
class DeliveryResult:
    state: DeliveryState
    ack: Any = None
    status_code: int | None = None


@dataclass(slots=True)
class CallbackRetryPolicy:
    """Backoff schedule (:class:`~osmosis_ai._util.backoff.Backoff`): ``initial * 2**n`` capped
    at ``max_delay``, each delay jittered to 50-100 % of its value, until ``budget_sec`` has
    elapsed since the first attempt."""

    budget_sec: float = 600.0
    initial_delay_sec: float = 0.5
    max_delay_sec: float = 30.0
    request_timeout_sec: float = 10.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        return Backoff(self.initial_delay_sec, self.max_delay_sec).delay(attempt + 1)


_Receiver = tuple[str, str, "int | None"]


def _receiver(split: SplitResult) -> _Receiver:
    """The receiver (scheme, host, port) of a parsed URL (an invalid port counts as none)."""
    try:
        port = split.port
    except ValueError:
        port = None
    return (split.scheme, split.hostname or "", port)


class _Slots:
    """At most ``per_receiver`` requests in flight to one receiver, ``total`` overall.

    The receiver's slot is taken first, so what waits for a slow receiver holds nothing that
    the other receivers need. A receiver's semaphore lives only while someone uses it.
    """

    def __init__(self, total: int, per_receiver: int) -> None:
        self._total = asyncio.Semaphore(total)
        self._per_receiver = per_receiver
        self._receivers: dict[_Receiver, tuple[asyncio.Semaphore, list[int]]] = {}

    async def acquire(self, key: _Receiver) -> None:
        """Take a slot for ``key``; every successful call is paired with :meth:`release`."""
        receiver = self._receivers.get(key)
        if receiver is None:
            receiver = self._receivers[key] = (asyncio.Semaphore(self._per_receiver), [0])
        semaphore, users = receiver
        users[0] += 1
        try:
            await semaphore.acquire()
            try:
                await self._total.acquire()
            except BaseException:
                semaphore.release()
                raise
        except BaseException:
            self._leave(key, users)
            raise

    def release(self, key: _Receiver) -> None:
        semaphore, users = self._receivers[key]
        self._total.release()
        semaphore.release()
        self._leave(key, users)

    def _leave(self, key: _Receiver, users: list[int]) -> None:
        users[0] -= 1
        if not users[0]:
            del self._receivers[key]


class _Failing:
    """A receiver whose last attempt failed: one request at a time goes to it (``probe``), no
    sooner than ``not_before`` (its backoff, THE :class:`Backoff` through the policy, grown by
    each failed attempt that started after the last counted one)."""

    __slots__ = ("failures", "not_before", "probe")

    def __init__(self) -> None:
        self.failures = 0
        self.not_before = 0.0
        self.probe = asyncio.Lock()


_NO_TURN = object()  # a failing receiver's turn comes after the delivery's budget


class CallbackSender:
    """POSTs JSON bodies to callback URLs with retries; one instance per server."""

    def __init__(
        self,
        policy: CallbackRetryPolicy,
        *,
        max_in_flight: int = _MAX_IN_FLIGHT,
        per_receiver: int = _MAX_IN_FLIGHT_PER_RECEIVER,
    ) -> None:
        self.policy = policy
        self._client: httpx.AsyncClient | None = None
        self._plain: PlainHTTPTransport | None = None
        # Deliveries wait here rather than in httpx's pool: the pool's bookkeeping grows with
        # the number of waiting requests, and a pool timeout would be misread as a failure.
        self._slots = _Slots(max_in_flight, min(per_receiver, max_in_flight))
        self._max_in_flight = max_in_flight
        self._per_receiver = per_receiver
        #: Receivers whose last attempt failed (removed by a success): every delivery to one
        #: waits for the same backoff, so a hung or dead receiver sees about one request per
        #: backoff step, not one per rollout waiting for it (bounded: cleared past _MAX_TARGETS).
        self._failing: dict[_Receiver, _Failing] = {}
        #: origin -> (receiver, plain http?): a controller sends every callback to one or two
        #: origins, so each is parsed once (bounded: cleared past _MAX_TARGETS).
        self._targets: dict[str, tuple[_Receiver, bool]] = {}

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            _install_httpx_redaction()

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.policy.request_timeout_sec, pool=None),
                follow_redirects=False,
                limits=httpx.Limits(
                    max_connections=self._max_in_flight,
                    max_keepalive_connections=self._max_in_flight,
                ),
            )
        return self._client

    def _target(self, url: str) -> tuple[_Receiver, bool]:
        """``url``'s receiver, and whether the lean transport can send to it (plain ``http``
        with a host and no credentials): both depend on the origin only, parsed once per
        origin (a controller's callback URLs differ by the rollout id in the path)."""
        origin = url_origin(url)
        target = self._targets.get(origin)
        if target is None:
            split = urlsplit(origin)
            plain = split.scheme == "http" and bool(split.hostname) and not split.username
            if len(self._targets) >= _MAX_TARGETS:
                self._targets.clear()
            target = self._targets[origin] = (_receiver(split), plain)
        return target

    async def _post(
        self, url: str, plain: bool, body: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, float | None]:
        """``(status, body, Retry-After seconds)``: plain ``http`` URLs go straight to the lean
        transport, anything else through the shared httpx client. The caller's deadline bounds
        the whole exchange, so the lean transport gets no timeouts of its own (each would arm
        and cancel a timer per request)."""
        if plain:
            if self._plain is None:
                from osmosis_ai._util.http_transport import PlainHTTPTransport

                self._plain = PlainHTTPTransport(max_idle_per_host=self._per_receiver)
            status, raw_headers, content = await self._plain.request(
                "POST", split_http_url(url), headers, body, None
            )
            retry = next((v for k, v in raw_headers if k == b"retry-after"), None)
            return status, content, parse_retry_after(retry.decode("latin-1") if retry else None)
        response = await self._http().post(url, content=body, headers=headers)
        return (
            response.status_code,
            response.content,
            parse_retry_after(response.headers.get("retry-after")),
        )

    async def aclose(self) -> None:
        if self._plain is not None:
            await self._plain.aclose()
            self._plain = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def deliver(
        self, url: str, body: bytes, *, api_key: str | None, what: str
    ) -> DeliveryResult:
        """Deliver ``body`` to ``url``; never raises except ``CancelledError``."""
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        import httpx

        started = time.monotonic()
        attempt = 0
        slots = self._slots
        while True:
            retry_after: float | None = None
            status: int | None = None
            content = b""
            probe: _Failing | None = None
            key: _Receiver = ("", "", None)
            seen = 0
            try:
                key, plain = self._target(url)
                failing = self._failing.get(key)
                if failing is not None:
                    turn = await self._take_probe(key, failing, started)
                    if turn is _NO_TURN:
                        return self._exhausted(what, url, attempt, started, "receiver failing")
                    probe = turn if isinstance(turn, _Failing) else None
                    seen = probe.failures if probe is not None else 0
                await slots.acquire(key)
                try:
                    async with asyncio.timeout(self.policy.request_timeout_sec):
                        status, content, retry_after = await self._post(url, plain, body, headers)
                finally:
                    slots.release(key)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except TimeoutError:
                problem = f"no answer within {self.policy.request_timeout_sec:g}s"
            except Exception as exc:  # an invalid URL, for example: never retried
                logger.error("%s callback to %s cannot be sent: %s", what, _safe_url(url), exc)
                return DeliveryResult(DeliveryState.REJECTED)
            else:
                if status < 300:
                    self._failing.pop(key, None)
                    return DeliveryResult(DeliveryState.DELIVERED, _ack_json(content), status)
                if 400 <= status < 500 and status not in _RETRYABLE_STATUS:
                    logger.error(
                        "%s callback to %s was rejected with HTTP %d (not retried): %s",
                        what,
                        _safe_url(url),
                        status,
                        content[:_BODY_EXCERPT].decode("utf-8", "replace"),
                    )
                    return DeliveryResult(DeliveryState.REJECTED, status_code=status)
                problem = f"HTTP {status}"
            finally:
                if probe is not None:
                    probe.probe.release()
            self._failed(key, seen, retry_after)
            delay = self.policy.delay(attempt)
            if retry_after is not None:
                delay = min(max(delay, retry_after), self.policy.max_delay_sec)
            attempt += 1
            if time.monotonic() - started + delay > self.policy.budget_sec:
                return self._exhausted(what, url, attempt, started, problem, status)
            if attempt == 1 or attempt % 10 == 0:
                logger.warning(
                    "%s callback to %s failed (%s); retrying (attempt %d)",
                    what,
                    _safe_url(url),
                    problem,
                    attempt,
                )
            await asyncio.sleep(delay)

    async def _take_probe(
        self, key: _Receiver, failing: _Failing, started: float
    ) -> _Failing | object | None:
        """Wait for the failing receiver's turn: its one request in flight, after its backoff
        (returns ``failing``, its lock held); ``None`` if it recovered meanwhile (send as
        usual); :data:`_NO_TURN` when the turn comes after this delivery's budget."""
        left = self.policy.budget_sec - (time.monotonic() - started)
        try:
            async with asyncio.timeout(max(left, 0.0)):
                await failing.probe.acquire()
        except TimeoutError:
            return _NO_TURN
        if self._failing.get(key) is not failing:  # a success meanwhile: no longer failing
            failing.probe.release()
            return None
        wait = failing.not_before - time.monotonic()
        if wait > self.policy.budget_sec - (time.monotonic() - started):
            failing.probe.release()
            return _NO_TURN
        if wait > 0:
            try:
                await asyncio.sleep(wait)
            except BaseException:
                failing.probe.release()
                raise
        return failing

    def _failed(self, key: _Receiver, seen: int, retry_after: float | None) -> None:
        """Count a failed attempt against its receiver (attempts in flight together count
        once) and push its next request back by the receiver's backoff."""
        failing = self._failing.get(key)
        if failing is None:
            if len(self._failing) >= _MAX_TARGETS:
                self._failing.clear()
            failing = self._failing[key] = _Failing()
        if failing.failures == seen:
            failing.failures += 1
            delay = self.policy.delay(failing.failures - 1)
            if retry_after is not None:
                delay = min(max(delay, retry_after), self.policy.max_delay_sec)
            failing.not_before = time.monotonic() + delay

    def _exhausted(
        self,
        what: str,
        url: str,
        attempts: int,
        started: float,
        problem: str,
        status: int | None = None,
    ) -> DeliveryResult:
        logger.error(
            "%s callback to %s still failing after %d attempts over %.0fs (%s); "
            "keeping it for redelivery",
            what,
            _safe_url(url),
            attempts,
            time.monotonic() - started,
            problem,
        )
        return DeliveryResult(DeliveryState.EXHAUSTED, status_code=status)


def split_http_url(url: str) -> SplitResult:
    """``urlsplit(url)``, with the origin's part parsed once per origin: a callback URL's path
    usually differs per rollout, so caching whole URLs (as ``urlsplit`` does) would miss."""
    origin = url_origin(url)
    if len(origin) == len(url) or " " in url or not url.isprintable():
        return urlsplit(url)  # not http(s), nothing after the origin, or needs cleaning
    base = urlsplit(origin)
    rest, query, fragment = url[len(origin) :], "", ""
    if "#" in rest:
        rest, fragment = rest.split("#", 1)
    if "?" in rest:
        rest, query = rest.split("?", 1)
    return SplitResult(base.scheme, base.netloc, rest, query, fragment)


def _ack_json(content: bytes) -> Any:
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def _safe_url(url: str) -> str:
    """The URL with its query string and user info masked (they may carry credentials)."""
    from osmosis_ai._util.redaction import mask_url

    return mask_url(url)


class _RedactQuery(logging.Filter):
    """Drops query strings and user info from the URLs httpx logs ("HTTP Request: POST <url>"):
    callback URLs may carry signed tokens there."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) > 1 and args[1] is not None:
            url = args[1]
            if hasattr(url, "copy_with"):
                record.args = (args[0], _safe_url(str(url)), *args[2:])
        return True


def _install_httpx_redaction() -> None:
    httpx_logger = logging.getLogger("httpx")
    if not any(isinstance(f, _RedactQuery) for f in httpx_logger.filters):
        httpx_logger.addFilter(_RedactQuery())
