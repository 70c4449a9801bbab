"""A small synchronous client for the platform API (``docs/platform-api.md``).

Every failure becomes a :class:`CLIError` with a stable code: HTTP statuses map to
``VALIDATION`` / ``AUTH_REQUIRED`` / ``NOT_FOUND`` / ``CONFLICT`` / ``UPGRADE_REQUIRED`` /
``RATE_LIMITED`` / ``PLATFORM_ERROR``, connection problems to ``NETWORK``. Secret values passed in
``redact`` are scrubbed from any platform message before it is shown.

It uses :mod:`urllib.request` rather than httpx on purpose: importing httpx also imports its own
command line (Rich, Pygments, Click) when those are installed, which costs the CLI up to a
second of start-up for a handful of small JSON requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from osmosis_cli import __version__
from osmosis_cli.errors import CLIError, CLIErrorCode

_STATUS_CODES: dict[int, CLIErrorCode] = {
    400: CLIErrorCode.VALIDATION,
    401: CLIErrorCode.AUTH_REQUIRED,
    403: CLIErrorCode.AUTH_REQUIRED,
    404: CLIErrorCode.NOT_FOUND,
    409: CLIErrorCode.CONFLICT,
    422: CLIErrorCode.VALIDATION,
    426: CLIErrorCode.UPGRADE_REQUIRED,
    429: CLIErrorCode.RATE_LIMITED,
}
DEFAULT_TIMEOUT_SEC = 30.0


class PlatformClient:
    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT_SEC) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout

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
    ) -> Any:
        import json as jsonlib
        import urllib.error
        import urllib.request
        from urllib.parse import urlencode

        url = f"{self.base_url}{path}"
        if params:
            url += "?" + urlencode(params)
        headers = {
            "Authorization": f"Bearer {self._token}",
            "User-Agent": f"osmosis-cli/{__version__}",
            "X-Osmosis-CLI-Version": __version__,
            "Accept": "application/json",
        }
        data = None
        if json is not None:
            data = jsonlib.dumps(json, allow_nan=False).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        except TimeoutError:
            raise CLIError(
                CLIErrorCode.NETWORK,
                f"The platform at {self.base_url} did not answer within {self._timeout:g}s.",
                details={"url": url},
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CLIError(
                CLIErrorCode.NETWORK,
                f"Could not reach the platform at {self.base_url} ({reason}). "
                "Check OSMOSIS_PLATFORM_URL and your network.",
                details={"url": url},
            ) from None
        if 200 <= status < 300:
            if not body:
                return None
            try:
                return jsonlib.loads(body)
            except ValueError:
                raise CLIError(
                    CLIErrorCode.PLATFORM_ERROR,
                    f"The platform answered {method} {path} with a body that is not JSON.",
                    details={"status_code": status},
                ) from None
        raise _error_from_response(status, body, redact)


def _error_from_response(status: int, raw: bytes, redact: Iterable[str]) -> CLIError:
    import json

    platform_code: str | None = None
    field: str | None = None
    message = ""
    try:
        body = json.loads(raw) if raw else None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            platform_code = error.get("code")
            field = error.get("field")
            message = str(error.get("message") or "")
        elif isinstance(body, dict) and "detail" in body:
            message = str(body["detail"])
    except ValueError:
        message = raw[:300].decode(errors="replace")
    for secret in redact:
        if secret:
            message = message.replace(secret, "***")
    code = _STATUS_CODES.get(status, CLIErrorCode.PLATFORM_ERROR)
    if code is CLIErrorCode.AUTH_REQUIRED:
        text = (
            f"The platform rejected the token ({status}"
            + (f": {message}" if message else "")
            + "). Run 'osmosis auth login' again."
        )
    else:
        text = message or f"The platform answered with HTTP {status}."
    return CLIError(
        code,
        text,
        details={"status_code": status, "platform_code": platform_code, "field": field},
    )
