"""The one HTTP helper every platform command uses (``docs/platform-api.md``).

It owns the auth and version headers, the mapping of HTTP statuses to stable
:class:`~osmosis_cli.errors.CLIError` codes (:mod:`osmosis_cli.platform.http_errors`), and
retries: idempotent requests (``GET``, ``HEAD``, ``PUT``, ``DELETE``) are retried on
``429``/``502``/``503``/``504`` (up to 4 attempts) and once on a connection error, waiting what
``Retry-After`` asks (capped); a ``POST`` is retried only on ``429`` (the platform refused it
before doing anything). Streams
(downloads, uploads) go through the same path, so no command has its own copy.

It uses :mod:`urllib.request` rather than httpx on purpose: importing httpx also imports its own
command line (Rich, Pygments, Click) when those are installed, which costs the CLI up to a
second of start-up for a handful of small requests.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from osmosis_ai.rollout.integrations.spi import Backoff, parse_retry_after
from osmosis_cli import __version__
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.platform.http_errors import error_from_response

DEFAULT_TIMEOUT_SEC = 30.0
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_ATTEMPTS = 4
MAX_RETRY_WAIT_SEC = 30.0


class Readable(Protocol):
    """A request body streamed from a file (an upload part)."""

    def read(self, amount: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


Body = bytes | Callable[[], Readable]


def _origin(url: str) -> tuple[str, str, int | None]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


@functools.cache
def _opener() -> Any:
    """urllib's default opener, except that a redirect to another origin (scheme, host or
    port) drops the ``Authorization`` header: the platform token goes only where it was sent
    (as browsers, curl and httpx do). A same-origin redirect keeps it."""
    import urllib.request

    class SameOriginAuthRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(  # type: ignore[override]
            self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> Any:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and _origin(newurl) != _origin(req.full_url):
                for name in list(new.headers):
                    if name.lower() == "authorization":
                        del new.headers[name]
                new.unredirected_hdrs.pop("Authorization", None)
            return new

    return urllib.request.build_opener(SameOriginAuthRedirects)


class PlatformClient:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SEC,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._sleep = sleep

    @classmethod
    def from_login(cls) -> PlatformClient:
        """A client for ``OSMOSIS_PLATFORM_URL`` with the stored token (``AUTH_REQUIRED`` if none)."""
        from osmosis_cli.platform.credentials import require_token
        from osmosis_cli.platform.settings import platform_url

        url = platform_url()
        return cls(url, require_token(url).value)

    def __repr__(self) -> str:
        return f"PlatformClient({self.base_url!r})"

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        redact: Iterable[str] = (),
        timeout: float | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON body (``None`` when empty)."""
        import json as jsonlib

        body = None if json is None else jsonlib.dumps(json, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        with self.open(
            method, path, params=params, body=body, headers=headers, redact=redact, timeout=timeout
        ) as response:
            raw = response.read()
        if not raw:
            return None
        try:
            return jsonlib.loads(raw)
        except ValueError:
            raise CLIError(
                CLIErrorCode.PLATFORM_ERROR,
                f"The platform answered {method} {path} with a body that is not JSON.",
                details={"status_code": response.status},
            ) from None

    def open(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Body | None = None,
        headers: Mapping[str, str] | None = None,
        redact: Iterable[str] = (),
        timeout: float | None = None,
    ) -> Any:
        """Send a request and return the open 2xx response (a context manager to read from).

        ``body`` is bytes, or a callable returning a fresh binary stream (so a retried upload
        re-reads its part); a stream needs a ``Content-Length`` in ``headers``.
        """
        import urllib.error
        import urllib.request
        from urllib.parse import urlencode

        url = f"{self.base_url}{path}"
        if params:
            url += "?" + urlencode({k: v for k, v in params.items() if v is not None})
        retry_statuses = RETRY_STATUSES if method in IDEMPOTENT else frozenset({429})
        redact = list(redact)
        attempt = 0
        while True:
            attempt += 1
            data = body() if callable(body) else body
            request = urllib.request.Request(
                url, data=data, method=method, headers={**self._headers(), **(headers or {})}
            )
            try:
                return _opener().open(request, timeout=timeout or self._timeout)
            except urllib.error.HTTPError as exc:
                status, raw, retry_header = exc.code, exc.read(), exc.headers.get("Retry-After")
                exc.close()
                wait = self._retry_wait(attempt, status in retry_statuses, retry_header)
                if wait is None:
                    raise error_from_response(
                        status, raw, redact, retry_after=retry_header
                    ) from None
            except (urllib.error.URLError, OSError) as exc:
                # Once only: a refused connection is more often a wrong URL than a blip.
                wait = self._retry_wait(attempt, method in IDEMPOTENT and attempt < 2, None)
                if wait is None:
                    raise self._network_error(exc, url) from None
            finally:
                if data is not None and not isinstance(data, bytes):
                    data.close()
            self._sleep(wait)

    def _headers(self) -> dict[str, str]:
        headers = {
            "User-Agent": f"osmosis-cli/{__version__}",
            "X-Osmosis-CLI-Version": __version__,
            "Accept": "application/json",
        }
        workspace = os.environ.get("OSMOSIS_WORKSPACE", "").strip()
        if workspace:  # `--workspace NAME`: select a workspace without a repository clone
            headers["X-Osmosis-Workspace"] = workspace
        if self._token:  # the sign-in's own requests carry none
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _retry_wait(self, attempt: int, retryable: bool, retry_after: str | None) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up."""
        if not retryable or attempt >= MAX_ATTEMPTS:
            return None
        asked = parse_retry_after(retry_after)
        if asked is None:
            return Backoff(0.5, MAX_RETRY_WAIT_SEC, jitter="none").delay(attempt)
        return asked if asked <= MAX_RETRY_WAIT_SEC else None

    def _network_error(self, exc: BaseException, url: str) -> CLIError:
        if isinstance(exc, TimeoutError) or "timed out" in str(exc):
            return CLIError(
                CLIErrorCode.NETWORK,
                f"The platform at {self.base_url} did not answer within {self._timeout:g}s.",
                details={"url": url},
            )
        reason = getattr(exc, "reason", exc)
        return CLIError(
            CLIErrorCode.NETWORK,
            f"Could not reach the platform at {self.base_url} ({reason}). "
            "Check OSMOSIS_PLATFORM_URL and your network.",
            details={"url": url},
        )
