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

**Files.** Every file the SDK writes under a run folder or a server home goes through a
redactor: :func:`redact_files_under` registers one for a folder, and the writers
(:func:`osmosis_ai.atomic_file.write_atomic`, the eval journal, the trajectory writer) pass
their text through :func:`redact_file_data`. :func:`process_redactor` knows this process's
credentials: the values of environment variables named like one (``*_API_KEY``, ``*_TOKEN``,
``*_SECRET``, ``*_PASSWORD``, ``*_KEY`` ...; a bare ``*_KEY``/``*_PASS`` value only when it
looks like a key, so ``SORT_KEY=name`` does not mask every "name") and whatever :func:`register_secret` added (a
``--base-url``'s query values and password: :func:`url_secrets`).
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import overload
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

__all__ = [
    "MARK",
    "MIN_SECRET_LENGTH",
    "Redactor",
    "encodings",
    "env_secrets",
    "mask_url",
    "process_redactor",
    "redact",
    "redact_file_data",
    "redact_files_under",
    "register_secret",
    "url_secrets",
]

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


# -- credentials of this process, and the files they must never reach -------------------------

#: An environment variable holding a credential, by its name.
_CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH)(?:_|$)",
    re.IGNORECASE,
)
#: Names whose bare ``KEY``/``PASS`` part is as often a setting (``SORT_KEY=name``,
#: ``PRIMARY_KEY=id``, ``BYPASS=...``) as a credential: their values count only when they look
#: like one (see :data:`_KEY_LIKE`). Every other credential name counts whatever its value.
_STRONG_CREDENTIAL_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(?:_|$)",
    re.IGNORECASE,
)
#: A value that looks like a key: 8+ characters without spaces, holding a letter and a digit.
_KEY_LIKE = re.compile(r"(?=\S*[A-Za-z])(?=\S*[0-9])\S{8,}")
#: The credentials a parent process learned (JSON list), so its children mask them too.
ENV_REDACT_VALUES = "_OSMOSIS_REDACT_VALUES"
#: A query parameter that carries a credential, by its name.
_QUERY_CREDENTIAL_NAME = re.compile(
    r"(?i)(?:^|[_-])(?:api[_-]?key|key|token|secret|password|pass|auth|sig|signature|code|"
    r"credentials?)$"
)
#: Values of such variables that are settings, not secrets (masking ``true`` or ``1`` would
#: rewrite every JSON document): flags, numbers, paths.
_NOT_A_SECRET = re.compile(
    r"(?i:true|false|none|null|yes|no|on|off|auto|enabled?|disabled?)|[0-9.]+|/\S*|\s*"
)
_lock = threading.Lock()
_process: Redactor | None = None
_file_roots: dict[str, Redactor] = {}


def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment variables named like a credential."""
    env = os.environ if environ is None else environ
    found = [
        value
        for name, value in env.items()
        if value
        and _CREDENTIAL_NAME.search(name)
        and not _NOT_A_SECRET.fullmatch(value)
        and (_STRONG_CREDENTIAL_NAME.search(name) or _KEY_LIKE.fullmatch(value))
    ]
    try:
        inherited = json.loads(env.get(ENV_REDACT_VALUES) or "[]")
    except ValueError:
        inherited = []
    if isinstance(inherited, list):
        found += [v for v in inherited if isinstance(v, str)]
    return found


def url_secrets(url: str | None) -> list[str]:
    """The credentials a URL can carry: its user-info password (or user when alone), the Basic
    credential built from them, and the values of credential-named query parameters
    (``?key=...``, ``?code=...``), decoded and as written."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if parts.username is not None and parts.password is not None:
        # The Basic credential a client builds from them (an upstream may echo it back).
        pair = f"{unquote(parts.username)}:{unquote(parts.password)}"
        found.append(base64.b64encode(pair.encode()).decode())
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    elif parts.username:
        found += [parts.username, unquote(parts.username)]
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _QUERY_CREDENTIAL_NAME.search(name):  # ?key=, ?api_key=, ?code=; not ?api-version=
            found.append(value)
    for piece in parts.query.split("&"):
        name, _, value = piece.partition("=")
        if value and _QUERY_CREDENTIAL_NAME.search(unquote(name)):
            found.append(value)
    return found


def process_redactor() -> Redactor:
    """This process's credentials (environment, :func:`register_secret`), built once."""
    global _process
    with _lock:
        if _process is None:
            _process = Redactor(env_secrets())
        return _process


def register_secret(*values: str | None) -> None:
    """Add credentials this process learned (a ``--base-url``'s key) to :func:`process_redactor`
    and to every folder's file redactor."""
    redactor = process_redactor()
    with _lock:
        try:
            known = json.loads(os.environ.get(ENV_REDACT_VALUES) or "[]")
        except ValueError:
            known = []
        for value in values:
            if not value or len(value) < MIN_SECRET_LENGTH:
                continue
            redactor.add(value)
            for folder in _file_roots.values():
                folder.add(value)
            if value not in known:
                known.append(value)
        if known:  # child processes (the rollout server, the proxy) mask them too
            os.environ[ENV_REDACT_VALUES] = json.dumps(known)


def redact_files_under(folder: str | os.PathLike[str], redactor: Redactor | None = None) -> None:
    """Pass every file the SDK writes under ``folder`` through ``redactor`` (default: this
    process's) and this process's credentials."""
    combined = Redactor(process_redactor().secrets)
    for secret in redactor.secrets if redactor is not None else ():
        combined.add(secret)
    root = os.path.join(os.path.abspath(folder), "")
    with _lock:
        _file_roots[root] = combined


def file_redactor(path: str | os.PathLike[str]) -> Redactor | None:
    """The redactor of the registered folder ``path`` is in (the innermost), if any."""
    if not _file_roots:
        return None
    target = os.path.abspath(path)
    with _lock:
        best = max((r for r in _file_roots if target.startswith(r)), key=len, default=None)
        return None if best is None else _file_roots[best]


@overload
def redact_file_data(redactor: Redactor | None, data: str) -> str: ...
@overload
def redact_file_data(redactor: Redactor | None, data: bytes) -> bytes: ...
@overload
def redact_file_data(redactor: Redactor | None, data: str | bytes) -> str | bytes: ...
def redact_file_data(redactor: Redactor | None, data: str | bytes) -> str | bytes:
    """``data`` (text, or UTF-8 bytes; other bytes: secrets only) through ``redactor``."""
    if redactor is None:
        return data
    if isinstance(data, str):
        return redactor(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return redactor.redact_bytes(data)
    redacted = redactor(text)
    return data if redacted == text else redacted.encode("utf-8")
