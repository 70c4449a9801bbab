"""The platform token: from ``OSMOSIS_TOKEN``, the OS keyring, or a private file.

Order of lookup: ``OSMOSIS_TOKEN`` (CI, agents), then the keyring when the optional ``keyring``
package has a working backend (``pip install 'osmosis-cli[keyring]'``), then
``<config dir>/credentials.json`` written with mode 0600. Tokens are stored per platform URL so
a staging login never leaks to production. ``OSMOSIS_KEYRING=0`` disables the keyring.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from osmosis_ai.atomic_file import write_atomic
from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.platform.settings import config_dir

ENV_TOKEN = "OSMOSIS_TOKEN"
KEYRING_SERVICE = "osmosis-cli"
FILE_VERSION = 1

Source = Literal["env", "keyring", "file"]


@dataclass(frozen=True)
class Token:
    value: str
    source: Source

    def __repr__(self) -> str:  # never print the secret
        return f"Token(source={self.source!r}, value='***')"


def credentials_file() -> Path:
    return config_dir() / "credentials.json"


def _keyring() -> Any | None:
    """The keyring module when it is installed, enabled and has a usable backend."""
    if os.environ.get("OSMOSIS_KEYRING", "1") == "0":
        return None
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def _read_file() -> dict[str, str]:
    path = credentials_file()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        tokens = data["tokens"]
        if not isinstance(tokens, dict):
            raise TypeError("tokens must be an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CLIError(
            CLIErrorCode.CREDENTIALS_PARSE_FAILED,
            f"{path} is not a valid credentials file ({type(exc).__name__}). Delete it and run "
            "`osmosis auth login` again.",
            details={"path": str(path)},
        ) from None
    return {str(k): str(v) for k, v in tokens.items()}


def _write_file(tokens: dict[str, str]) -> None:
    path = credentials_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"version": FILE_VERSION, "tokens": tokens}, indent=2)
    write_atomic(path, payload, mode=0o600)


def load_token(platform: str, *, include_env: bool = True) -> Token | None:
    """The token for ``platform``: ``OSMOSIS_TOKEN`` (unless ``include_env`` is false), else
    the keyring's, else the credentials file's."""
    env = os.environ.get(ENV_TOKEN, "").strip() if include_env else ""
    if env:
        return Token(env, "env")
    ring = _keyring()
    if ring is not None:
        try:
            value = ring.get_password(KEYRING_SERVICE, platform)
        except Exception:
            value = None
        if value:
            return Token(value, "keyring")
    value = _read_file().get(platform)
    return Token(value, "file") if value else None


def require_token(platform: str) -> Token:
    token = load_token(platform)
    if token is None:
        raise CLIError(
            CLIErrorCode.AUTH_REQUIRED,
            f"Not logged in to {platform}. Run 'osmosis auth login' first (or set {ENV_TOKEN}).",
            details={"platform_url": platform},
        )
    return token


def store_token(platform: str, value: str) -> Source:
    """Save the token; returns where it went (``keyring`` or ``file``)."""
    ring = _keyring()
    if ring is not None:
        try:
            ring.set_password(KEYRING_SERVICE, platform, value)
        except Exception:
            pass  # a locked or broken keyring: fall back to the private file
        else:
            _forget_in_file(platform)
            return "keyring"
    tokens = _read_file()
    tokens[platform] = value
    _write_file(tokens)
    return "file"


def delete_token(platform: str) -> list[Source]:
    """Remove stored tokens for ``platform``; returns the stores that had one."""
    removed: list[Source] = []
    ring = _keyring()
    if ring is not None:
        with contextlib.suppress(Exception):
            if ring.get_password(KEYRING_SERVICE, platform):
                ring.delete_password(KEYRING_SERVICE, platform)
                removed.append("keyring")
    if _forget_in_file(platform):
        removed.append("file")
    return removed


def _forget_in_file(platform: str) -> bool:
    tokens = _read_file()
    if platform not in tokens:
        return False
    del tokens[platform]
    _write_file(tokens)
    return True
