"""Token storage: env first, keyring when usable, else a 0600 file; per platform URL."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.platform import credentials
from osmosis_cli.platform.credentials import delete_token, load_token, store_token

A = "https://a.example"
B = "https://b.example"


def test_file_store_is_private_and_per_platform(isolated_home: Path) -> None:
    assert load_token(A) is None
    assert store_token(A, "tok-a") == "file"
    store_token(B, "tok-b")
    path = isolated_home / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = load_token(A)
    assert token is not None
    assert (token.value, token.source) == ("tok-a", "file")
    assert "tok-a" not in repr(token)
    assert delete_token(A) == ["file"]
    assert load_token(A) is None
    assert load_token(B) is not None


def test_env_token_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    store_token(A, "stored")
    monkeypatch.setenv("OSMOSIS_TOKEN", "from-env")
    token = load_token(A)
    assert token is not None
    assert (token.value, token.source) == ("from-env", "env")


def test_corrupt_file_is_a_clear_error(isolated_home: Path) -> None:
    (isolated_home / "credentials.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CLIError) as info:
        load_token(A)
    assert info.value.code is CLIErrorCode.CREDENTIALS_PARSE_FAILED


class _MemoryKeyring:
    priority = 1

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, user: str) -> str | None:
        return self.items.get((service, user))

    def set_password(self, service: str, user: str, value: str) -> None:
        self.items[(service, user)] = value

    def delete_password(self, service: str, user: str) -> None:
        del self.items[(service, user)]


def test_keyring_is_used_when_available(
    monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    ring = _MemoryKeyring()
    module: Any = type("FakeKeyringModule", (), {})()
    module.get_password = ring.get_password
    module.set_password = ring.set_password
    module.delete_password = ring.delete_password
    monkeypatch.setattr(credentials, "_keyring", lambda: module)
    assert store_token(A, "secret") == "keyring"
    assert not (isolated_home / "credentials.json").exists()
    token = load_token(A)
    assert token is not None
    assert token.source == "keyring"
    assert delete_token(A) == ["keyring"]
    assert ring.items == {}


def test_keyring_can_be_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_KEYRING", "0")
    assert credentials._keyring() is None
