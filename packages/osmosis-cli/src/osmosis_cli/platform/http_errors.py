"""A platform error response → a :class:`CLIError` with a stable code (``docs/platform-api.md``).

The platform's own code, the HTTP status and the offending field go to ``details``; secret values
the request carried are scrubbed from the platform's message before anyone sees it.
"""

from __future__ import annotations

from collections.abc import Iterable

from osmosis_ai.rollout.integrations.spi import parse_retry_after
from osmosis_cli.errors import CLIError, CLIErrorCode

STATUS_CODES: dict[int, CLIErrorCode] = {
    400: CLIErrorCode.VALIDATION,
    401: CLIErrorCode.AUTH_REQUIRED,
    403: CLIErrorCode.PERMISSION_DENIED,
    404: CLIErrorCode.NOT_FOUND,
    409: CLIErrorCode.CONFLICT,
    413: CLIErrorCode.VALIDATION,
    422: CLIErrorCode.VALIDATION,
    426: CLIErrorCode.UPGRADE_REQUIRED,
    429: CLIErrorCode.RATE_LIMITED,
}


#: ``Retry-After`` as seconds: the core reading (:func:`osmosis_ai.retry_after.parse_retry_after`).
retry_after_seconds = parse_retry_after


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value masked (core's one redaction rule)."""
    from osmosis_ai.rollout.integrations.spi import Redactor

    return Redactor(secrets)(text)


def error_from_response(
    status: int, raw: bytes, redact: Iterable[str], *, retry_after: str | None = None
) -> CLIError:
    import json

    from osmosis_ai.rollout.integrations.spi import Redactor

    scrubbed = Redactor(redact)
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
        # Scrubbed whole, then cut: a secret across the cut must not leave half of itself.
        message = scrubbed(raw.decode(errors="replace"))[:300]
    # Every part of the answer the CLI shows is scrubbed: a platform may echo the request's
    # value in its message, its code or the ``field`` it blames.
    message = scrubbed(message)
    platform_code = None if platform_code is None else scrubbed(str(platform_code))
    field = None if field is None else scrubbed(str(field))
    code = STATUS_CODES.get(status, CLIErrorCode.PLATFORM_ERROR)
    suffix = f": {message}" if message else ""
    if status == 401:
        text = f"The platform rejected the token (401{suffix}). Run 'osmosis auth login' again."
    elif status == 403:
        text = (
            f"The platform refused this action (403{suffix}): you are signed in, but this "
            "account or workspace lacks access to it, so signing in again does not help. Ask "
            "the workspace's admin for access (or for the feature on its plan), or choose "
            "another workspace with --workspace."
        )
    elif status == 429:
        wait = parse_retry_after(retry_after)
        later = f" Retry in {wait:g}s." if wait is not None else " Retry later."
        text = f"The platform is rate limiting requests{suffix}.{later}"
    elif status >= 500:
        text = f"The platform failed with HTTP {status}{suffix}. Retry later; if it persists, " + (
            "report it with the command you ran."
        )
    else:
        text = message or f"The platform answered with HTTP {status}."
    details: dict[str, object] = {
        "status_code": status,
        "platform_code": platform_code,
        "field": field,
    }
    if retry_after is not None:
        details["retry_after"] = retry_after
    return CLIError(code, text, details=details)
