"""How ``RolloutClient`` sends a request: one code path over two transports.

* The client made its own ``httpx.AsyncClient`` and the server URL is ``http://``: requests go
  straight through that client's :class:`~osmosis_ai._util.http_transport.PlainHTTPTransport`
  (``http_client`` keeps working for anything else a caller sends with it). A long poll then
  costs a fraction of a millisecond of CPU however many are open; through httpx's default
  transport the pool's bookkeeping grows with the connections in use (about 15 ms per request
  with 200 long polls open, enough for a controller to delay its own polls into lease expiries).
* Otherwise (an injected client, or ``https://``): through ``http_client``, with redirects off
  whatever the client's own setting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx

from osmosis_ai._util.http_transport import PlainHTTPTransport, shared_tls_context

# One long poll per rollout in flight, each on its own connection: the pool must not cap them,
# and idle connections are kept for the next poll.
_MAX_IDLE_CONNECTIONS = 1024
DEFAULT_REQUEST_TIMEOUT_SEC = 60.0
_JSON = {"content-type": "application/json"}


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole response: status, ``Retry-After`` (if any) and body bytes."""

    status_code: int
    retry_after: str | None
    content: bytes

    def detail(self) -> str:
        """``": <detail>"`` from a ``{"detail": "..."}`` body, else ``""`` (for messages)."""
        try:
            payload = json.loads(self.content)
        except ValueError:
            return ""
        detail = payload.get("detail") if isinstance(payload, dict) else None
        return f": {detail}" if isinstance(detail, str) else ""


def owned_client() -> tuple[httpx.AsyncClient, PlainHTTPTransport]:
    """The ``httpx.AsyncClient`` a ``RolloutClient`` makes for itself, and its lean transport."""
    plain = PlainHTTPTransport(max_idle_per_host=_MAX_IDLE_CONNECTIONS)
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(DEFAULT_REQUEST_TIMEOUT_SEC),
        follow_redirects=False,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        mounts={"http://": plain},
        verify=shared_tls_context(),
    )
    return client, plain


class Sender:
    """Sends the client's requests to one server (``base_url`` without a trailing ``/``)."""

    def __init__(
        self, base_url: str, owned: httpx.AsyncClient | None, plain: PlainHTTPTransport | None
    ) -> None:
        self.base_url = base_url
        self._base = urlsplit(base_url)
        self._owned = owned
        self._plain = plain if self._base.scheme == "http" else None

    async def send(
        self,
        http_client: httpx.AsyncClient,
        method: str,
        path: str,
        *,
        headers: dict[str, str],
        body: bytes | None = None,
        request_timeout_sec: float | None = None,
    ) -> Reply:
        """``method path`` (``path`` already %-escaped); ``request_timeout_sec`` ``None`` means the client's
        default. Transport failures raise httpx's exceptions."""
        if body is not None:
            headers = {**headers, **_JSON}
        plain = self._plain
        if plain is not None and http_client is self._owned:
            base = self._base  # as ``base._replace(path=base.path + path)``, without its cost
            url = SplitResult(base.scheme, base.netloc, base.path + path, base.query, base.fragment)
            status, raw_headers, content = await plain.request(
                method,
                url,
                headers,
                body or b"",
                DEFAULT_REQUEST_TIMEOUT_SEC if request_timeout_sec is None else request_timeout_sec,
            )
            retry_after = None
            for name, value in raw_headers:
                if name == b"retry-after":
                    retry_after = value.decode()
                    break
            return Reply(status, retry_after, content)
        options: dict[str, Any] = {}
        if request_timeout_sec is not None:
            options["timeout"] = request_timeout_sec
        response = await http_client.request(
            method,
            self.base_url + path,
            content=body,
            headers=headers,
            follow_redirects=False,
            **options,
        )
        return Reply(response.status_code, response.headers.get("retry-after"), response.content)
