"""Redaction: the one rule, one mark and one threshold for secrets in logs, files, reports,
console output and error bodies.

* **Given secrets** (an API key, a token, a secret env value) of at least
  :data:`MIN_SECRET_LENGTH` characters are masked, longest first, so a secret that contains
  another is never half-revealed, in every encoding a server or a log could echo them in: as
  is, JSON-escaped (ASCII or not), URL-quoted (``%20`` or ``+``), Python ``repr`` escapes and
  HTML-escaped. A shorter value (a placeholder key such as ``x`` for a local
  server) is not a secret anyone can keep, and masking it would rewrite every ``x`` in a log or
  report.
* **Credentials in URLs**: user-info (``https://user:pass@host``) and credential-like query
  parameters (``?api_key=...``) in free text; :func:`mask_url` masks a URL's whole user-info
  and query.
* **Authorization values**: ``Bearer <token>`` and ``Basic <credentials>``.

Everything is replaced by :data:`MARK`.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, urlsplit

__all__ = ["MARK", "MIN_SECRET_LENGTH", "Redactor", "encodings", "mask_url", "redact"]

#: What every redacted value becomes.
MARK = "***"
#: The one threshold: given secrets this long or longer are masked.
MIN_SECRET_LENGTH = 4

_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s?#]+@")
_QUERY_CREDENTIAL = re.compile(
    r"([?&](?:api[_-]?key|key|token|access_token|auth|password|secret|signature|sig)=)[^&\s#\"']+",
    re.IGNORECASE,
)
_AUTHORIZATION = re.compile(r"\b(Bearer|Basic) +(?!\*\*\*)[A-Za-z0-9._~+/=-]+")


def encodings(secret: str) -> set[str]:
    """``secret`` and the escaped forms in which an echo could carry it."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        repr(secret)[1:-1],
        html.escape(secret),
    }
    # A JSON document inside JSON (an error body quoted in a log line) escapes twice.
    forms.add(json.dumps(json.dumps(secret)[1:-1])[1:-1])
    return forms


def mask_url(url: str) -> str:
    """``url`` with its user-info and query replaced by :data:`MARK` (``https://***@host/v1?***``):
    both can carry credentials (``user:pass@``, ``?api_key=``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MARK}@" + netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=netloc, query=MARK if parts.query else "").geturl()


class Redactor:
    """Masks registered secrets (at least :data:`MIN_SECRET_LENGTH` characters), URL credentials
    and authorization values."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: set[str] = set()
        self._ordered: list[str] = []
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Register one secret (``None`` and values shorter than :data:`MIN_SECRET_LENGTH` are
        ignored)."""
        if secret and len(secret) >= MIN_SECRET_LENGTH and secret not in self._secrets:
            self._secrets.update(encodings(secret))
            self._ordered = sorted(self._secrets, key=len, reverse=True)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The registered secrets and their escaped forms, longest first."""
        return tuple(self._ordered)

    def __call__(self, text: str) -> str:
        for secret in self._ordered:
            if secret in text:
                text = text.replace(secret, MARK)
        if "@" in text:
            text = _URL_USERINFO.sub(rf"\1{MARK}@", text)
        if "=" in text:
            text = _QUERY_CREDENTIAL.sub(rf"\1{MARK}", text)
        if "Bearer" in text or "Basic" in text:
            text = _AUTHORIZATION.sub(rf"\1 {MARK}", text)
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with the registered secrets (UTF-8) masked; patterns are not applied, so
        binary content is never rewritten except where a secret occurs."""
        mark = MARK.encode()
        for secret in self._ordered:
            encoded = secret.encode()
            if encoded in data:
                data = data.replace(encoded, mark)
        return data


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` redacted by a :class:`Redactor` of ``secrets``."""
    return Redactor(secrets)(text)
